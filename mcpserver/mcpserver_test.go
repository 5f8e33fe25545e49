package mcpserver

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
)

// connect runs the server on an in-process runtime and returns a client
// session of the SDK's own client over in-memory transports.
func connect(t *testing.T, opts *mcp.ClientOptions) (*mcp.ClientSession, *runtime.Runtime) {
	t.Helper()
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
	srv := New(Options{API: rt, Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, opts)
	cs, err := client.Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})
	return cs, rt
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args any) (string, map[string]any, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	require.NoError(t, err, "%s is never a protocol error", name)
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	var structured map[string]any
	if res.StructuredContent != nil {
		b, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(b, &structured)
	}
	return text.String(), structured, res.IsError
}

func TestToolsListed(t *testing.T) {
	cs, _ := connect(t, nil)
	res, err := cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
	}
	for _, name := range []string{"run", "send_input", "wait", "read_output", "screen", "cancel", "session_create", "session_fork", "session_list", "session_info", "session_destroy", "read_background", "resize",
		"read_file", "write_file", "edit_file", "list_dir"} {
		tool := byName[name]
		require.NotNil(t, tool, name)
		assert.NotEmpty(t, tool.Description, name)
		require.NotNil(t, tool.Annotations, name)
		b, _ := json.Marshal(tool.InputSchema)
		assert.Contains(t, string(b), `"type":"object"`, name)
	}
	b, _ := json.Marshal(byName["run"].InputSchema)
	assert.Contains(t, string(b), `"command"`)
	assert.Contains(t, string(b), "the shell command line to run", "each field is described")
	assert.True(t, byName["screen"].Annotations.ReadOnlyHint)
	assert.Len(t, res.Tools, 17, "every tool is listed above")
	for _, name := range []string{"read_file", "list_dir"} {
		assert.True(t, byName[name].Annotations.ReadOnlyHint, name)
	}
	for _, name := range []string{"write_file", "edit_file"} {
		a := byName[name].Annotations
		assert.False(t, a.ReadOnlyHint, name)
		require.NotNil(t, a.DestructiveHint, name)
		assert.True(t, *a.DestructiveHint, name)
	}
}

func TestRunPromptREPL(t *testing.T) {
	cs, _ := connect(t, nil)
	text, st, isErr := callTool(t, cs, "run", map[string]any{"command": "cd /tmp && echo hello; (exit 3)"})
	assert.False(t, isErr, "a non-zero exit is a normal result")
	assert.Contains(t, text, "hello\n")
	assert.Contains(t, text, "exit 3 · ")
	assert.Contains(t, text, "/tmp")
	assert.EqualValues(t, 3, st["exit_code"])
	assert.Equal(t, "exited", st["state"])

	// State persists in the default session.
	text, _, _ = callTool(t, cs, "run", map[string]any{"command": "pwd"})
	assert.Contains(t, text, "/tmp\n")

	text, st, _ = callTool(t, cs, "run", map[string]any{"command": "printf 'Continue? [Y/n] '; read a; echo answered=$a"})
	assert.Equal(t, "waiting_input", st["state"])
	assert.Contains(t, text, `waiting for input (line): "Continue? [Y/n] "`)
	id := st["exec_id"].(string)
	text, st, _ = callTool(t, cs, "send_input", map[string]any{"exec_id": id, "input": "y", "keys": []string{"Enter"}})
	assert.Equal(t, "exited", st["state"])
	assert.Contains(t, text, "answered=y")

	_, st, _ = callTool(t, cs, "run", map[string]any{"command": "python3 -q"})
	if st["state"] == "waiting_input" {
		for _, rt := range []struct{ in, want string }{{"2**10", "1024"}, {"x = 'trl'", ""}, {"x.upper()", "'TRL'"}} {
			text, st, _ = callTool(t, cs, "send_input", map[string]any{"input": rt.in, "keys": []string{"Enter"}})
			assert.Equal(t, "waiting_input", st["state"], text)
			assert.Contains(t, text, rt.want)
		}
		_, st, _ = callTool(t, cs, "send_input", map[string]any{"eof": true})
		assert.Equal(t, "exited", st["state"])
	} else {
		t.Log("python3 is not installed: the REPL part is skipped")
	}

	// A command that goes on: run returns at its yield, wait picks it up.
	start := time.Now()
	text, st, _ = callTool(t, cs, "run", map[string]any{"command": "sleep 1.5; echo late", "yield_ms": 300})
	assert.Less(t, time.Since(start), 3*time.Second)
	assert.Equal(t, "running", st["state"])
	assert.Contains(t, text, "still running as x-")
	text, st, _ = callTool(t, cs, "wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	assert.Equal(t, "exited", st["state"])
	assert.Contains(t, text, "late")

	// read_output reaches earlier output.
	text, _, isErr = callTool(t, cs, "read_output", map[string]any{"exec_id": id})
	assert.False(t, isErr)
	assert.Contains(t, text, "Continue? [Y/n] ")
}

func TestSessionsScreenCancelAndErrors(t *testing.T) {
	cs, _ := connect(t, nil)
	text, st, isErr := callTool(t, cs, "session_create", map[string]any{"name": "work", "shell": "/bin/bash"})
	require.False(t, isErr, text)
	assert.Equal(t, "work", st["name"])
	text, _, _ = callTool(t, cs, "session_list", map[string]any{})
	assert.Contains(t, text, "work")

	_, _, _ = callTool(t, cs, "run", map[string]any{"session": "work", "command": "printf '\\033[2J\\033[Hon the screen'"})
	text, st, _ = callTool(t, cs, "screen", map[string]any{"session": "work"})
	assert.Contains(t, text, "on the screen")
	assert.EqualValues(t, 24, st["rows"])

	_, st, _ = callTool(t, cs, "run", map[string]any{"session": "work", "command": "sleep 30", "yield_ms": 200})
	text, _, _ = callTool(t, cs, "cancel", map[string]any{"exec_id": st["exec_id"]})
	assert.Contains(t, text, "sent SIGINT")
	_, st, _ = callTool(t, cs, "wait", map[string]any{"exec_id": st["exec_id"]})
	assert.Equal(t, "exited", st["state"])
	assert.Equal(t, true, st["canceled"])

	// Errors a model can act on are tool errors, with the message.
	text, _, isErr = callTool(t, cs, "screen", map[string]any{"session": "nope"})
	assert.True(t, isErr)
	assert.Contains(t, text, "SESSION_NOT_FOUND")
	text, _, isErr = callTool(t, cs, "send_input", map[string]any{"session": "work"})
	assert.True(t, isErr)
	assert.Contains(t, text, "nothing to type")

	text, _, isErr = callTool(t, cs, "session_destroy", map[string]any{"session": "work"})
	assert.False(t, isErr, text)
}

func TestProgressAndCancellation(t *testing.T) {
	var mu sync.Mutex
	var progress []string
	cs, rt := connect(t, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		progress = append(progress, req.Params.Message)
		mu.Unlock()
	}})
	params := &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "sleep 2.5; echo slept", "yield_ms": 10000}}
	params.SetProgressToken("tok-1")
	res, err := cs.CallTool(context.Background(), params)
	require.NoError(t, err)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "slept")
	mu.Lock()
	assert.NotEmpty(t, progress, "progress while the call waited")
	mu.Unlock()

	// A cancelled call interrupts the command and keeps its output.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cancel()
	}()
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "echo started; sleep 30", "yield_ms": 20000}})
	require.Error(t, err, "the client gave up")
	require.Eventually(t, func() bool {
		list, err := rt.ExecList(context.Background(), protocol.ExecListParams{})
		if err != nil {
			return false
		}
		for _, c := range list.Commands {
			if c.Command == "echo started; sleep 30" && c.State == protocol.StateExited {
				return true
			}
		}
		return false
	}, 10*time.Second, 50*time.Millisecond, "the command was interrupted")
}

// Two runs that create one new named session at once: one creates it;
// the other runs there too, or finds it busy, but is never told the name
// is taken by a session it cannot find (a walkthrough got INVALID_PARAMS
// "a live session is already named" four times in five).
func TestRunsCreatingOneSessionAtOnce(t *testing.T) {
	cs, _ := connect(t, nil)
	for round := 0; round < 3; round++ {
		name := "together-" + string(rune('a'+round))
		var wg sync.WaitGroup
		texts := make([]string, 2)
		errs := make([]bool, 2)
		for i := range texts {
			wg.Go(func() {
				texts[i], _, errs[i] = callTool(t, cs, "run", map[string]any{"session": name, "command": "echo ran; sleep 0.2"})
			})
		}
		wg.Wait()
		for i := range texts {
			if errs[i] {
				assert.True(t, strings.HasPrefix(texts[i], "SESSION_BUSY: "), "%q", texts[i])
			} else {
				assert.Contains(t, texts[i], "ran\n")
			}
		}
	}
}
