package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
)

// connectTo connects one more SDK client to a server on rt.
func connectTo(t *testing.T, rt *runtime.Runtime) *mcp.ClientSession {
	t.Helper()
	srv := New(Options{API: rt, Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func newRuntime(t *testing.T) *runtime.Runtime {
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return rt
}

// Item 10: a yield is kept to within a fraction of a second: one blocking
// call with the exact yield, not steps of a second.
func TestYieldKept(t *testing.T) {
	cs, _ := connect(t, nil)
	for _, y := range []int{1300, 2200} {
		start := time.Now()
		_, st, _ := callTool(t, cs, "run", map[string]any{"command": "sleep 30", "yield_ms": y})
		el := time.Since(start)
		assert.Equal(t, "running", st["state"])
		assert.GreaterOrEqual(t, el, time.Duration(y)*time.Millisecond)
		assert.Less(t, el, time.Duration(y)*time.Millisecond+500*time.Millisecond, "yield_ms %d took %v", y, el)

		start = time.Now()
		_, st, _ = callTool(t, cs, "wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": y})
		el = time.Since(start)
		assert.Equal(t, "running", st["state"])
		assert.Less(t, el, time.Duration(y)*time.Millisecond+500*time.Millisecond, "wait timeout_ms %d took %v", y, el)
		_, _, _ = callTool(t, cs, "cancel", map[string]any{"exec_id": st["exec_id"]})
		_, _, _ = callTool(t, cs, "wait", map[string]any{"exec_id": st["exec_id"]})
	}
}

// Item 11, in-process: a client that goes away (its connection ends)
// leaves the command running; it is not interrupted.
func TestClientGoneLeavesCommandRunning(t *testing.T) {
	rt := newRuntime(t)
	srv := New(Options{API: rt, Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "leaving", Version: "v0"}, nil).Connect(context.Background(), ct, nil)
	require.NoError(t, err)
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "sleep 1.5; echo survived", "yield_ms": 20000}})
	}()
	var id string
	require.Eventually(t, func() bool {
		list, _ := rt.ExecList(context.Background(), protocol.ExecListParams{})
		for _, c := range list.Commands {
			if strings.HasPrefix(c.Command, "sleep 1.5") {
				id = c.ExecID
			}
		}
		return id != ""
	}, 10*time.Second, 20*time.Millisecond)
	require.NoError(t, cs.Close())
	ss.Wait()
	status, err := rt.ExecWait(context.Background(), protocol.ExecWaitParams{ExecID: id, TimeoutMS: ptr(int64(20000))})
	require.NoError(t, err)
	assert.Equal(t, protocol.StateExited, status.State)
	assert.False(t, status.Canceled, "the command was not interrupted")
	require.NotNil(t, status.ExitCode)
	assert.Equal(t, 0, *status.ExitCode)
}

// Item 12: run with a session name not in use creates it.
func TestRunCreatesNamedSession(t *testing.T) {
	cs, _ := connect(t, nil)
	text, st, isErr := callTool(t, cs, "run", map[string]any{"session": "build", "command": "export X=kept; echo first"})
	require.False(t, isErr, text)
	assert.Contains(t, text, "first\n[session created on first use]\nexit 0")
	assert.Equal(t, true, st["session_created"])
	text, st, _ = callTool(t, cs, "run", map[string]any{"session": "build", "command": "echo $X"})
	assert.Contains(t, text, "kept\nexit 0")
	assert.Nil(t, st["session_created"])
	text, _, _ = callTool(t, cs, "session_list", map[string]any{})
	assert.Contains(t, text, "\tbuild\t")

	// A named session whose shell exited starts anew on the next run, and
	// the answer says so; one named by its id does not.
	text, st, _ = callTool(t, cs, "run", map[string]any{"session": "build", "command": "exit 4"})
	assert.Contains(t, text, "exit 4 · ")
	assert.Contains(t, text, "the next run in it starts a new shell")
	id := st["session_id"].(string)
	text, _, isErr = callTool(t, cs, "run", map[string]any{"session": "build", "command": "echo X=$X"})
	require.False(t, isErr, text)
	assert.Contains(t, text, "X=\n[the session's shell had exited: this ran in a new shell; cwd and variables were lost]\nexit 0")
	_, st, _ = callTool(t, cs, "run", map[string]any{"session": "build", "command": "exit 5"})
	text, _, isErr = callTool(t, cs, "run", map[string]any{"session": st["session_id"], "command": "true"})
	assert.True(t, isErr)
	assert.Contains(t, text, "SESSION_EXITED")
	assert.NotEqual(t, id, st["session_id"])
}

// wireWords are the daemon's method names and parameters a model has no
// tool for.
var wireWords = regexp.MustCompile(`\b(exec|session|system)\.[a-z]+\b|session_id`)

// Item 13: error texts name the model's tools.
func TestErrorsNameTools(t *testing.T) {
	cs, _ := connect(t, nil)
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"screen", map[string]any{"session": "nope"}, "session_list"},
		{"send_input", map[string]any{"input": "x"}, "run"},
		{"read_output", map[string]any{"exec_id": "x-0000000000000000"}, "STREAM_NOT_FOUND"},
		{"wait", map[string]any{}, "run starts one"},
	} {
		text, _, isErr := callTool(t, cs, c.tool, c.args)
		assert.True(t, isErr, "%s: %s", c.tool, text)
		assert.Contains(t, text, c.want, c.tool)
		assert.False(t, wireWords.MatchString(text), "%s names a wire method: %s", c.tool, text)
	}
	_, st, _ := callTool(t, cs, "run", map[string]any{"session": "busy", "command": "sleep 30", "yield_ms": 50})
	require.Equal(t, "running", st["state"])
	text, _, isErr := callTool(t, cs, "run", map[string]any{"session": "busy", "command": "true"})
	assert.True(t, isErr, text)
	assert.Contains(t, text, "SESSION_BUSY")
	assert.Contains(t, text, "wait for it with wait")
	assert.False(t, wireWords.MatchString(text), "run names a wire method: %s", text)
	_, _, _ = callTool(t, cs, "cancel", map[string]any{"session": "busy"})
	assert.Equal(t, "answer it with send_input; session_list shows it", toolNames.Replace("answer it with exec.input; session.list shows it"))
}

// Item 14: wait with no exec_id waits for this client's commands, never
// another client's.
func TestWaitIsPerClient(t *testing.T) {
	rt := newRuntime(t)
	a, b, c := connectTo(t, rt), connectTo(t, rt), connectTo(t, rt)
	_, st, _ := callTool(t, a, "run", map[string]any{"session": "a", "command": "sleep 1; echo from-a", "yield_ms": 100})
	require.Equal(t, "running", st["state"])
	_, st, _ = callTool(t, b, "run", map[string]any{"session": "b", "command": "echo from-b; sleep 0.2", "yield_ms": 50})
	require.Equal(t, "running", st["state"])

	text, st, isErr := callTool(t, a, "wait", map[string]any{"timeout_ms": 10000})
	require.False(t, isErr, text)
	assert.Contains(t, text, "from-a")
	assert.NotContains(t, text, "from-b")
	assert.Equal(t, "exited", st["state"])

	text, _, isErr = callTool(t, c, "wait", map[string]any{})
	assert.True(t, isErr, "a client that started nothing has nothing to wait for: %s", text)

	// wait with a session waits for that session's command.
	_, _, _ = callTool(t, c, "run", map[string]any{"session": "a", "command": "sleep 0.5; echo in-a", "yield_ms": 50})
	text, _, isErr = callTool(t, b, "wait", map[string]any{"session": "a", "timeout_ms": 10000})
	require.False(t, isErr, text)
	assert.Contains(t, text, "in-a")
}

// TestOutputBytesAreTheCommands: the structured output's bytes count the
// command's bytes, as stdout_bytes does, when a character is cut at the
// end (it counted the U+FFFD that replaced the byte: 2,000,002 of
// 2,000,000).
func TestOutputBytesAreTheCommands(t *testing.T) {
	cs, _ := connect(t, nil)
	_, st, isErr := callTool(t, cs, "run", map[string]any{"command": "yes 'héllo wörld' | head -c 2000000"})
	require.False(t, isErr)
	assert.EqualValues(t, 2000000, int64(st["stdout"].(map[string]any)["bytes"].(float64)))
	_, st, isErr = callTool(t, cs, "run", map[string]any{"command": "printf 'a\\303'"})
	require.False(t, isErr)
	assert.EqualValues(t, 2, int64(st["stdout"].(map[string]any)["bytes"].(float64)), "a short output too")
}

// Items 6 and 15: a long output keeps its head and tail at line
// boundaries; the text and the structured content say exactly what was
// left out and which of it read_output can still read, and the
// structured content is the same bounded view as the text.
func TestCutOutput(t *testing.T) {
	cs, _ := connect(t, nil)
	// 200000 lines, 1288895 bytes: more than the command's kept 512 KiB.
	text, st, _ := callTool(t, cs, "run", map[string]any{"command": "seq 1 200000"})
	b, _ := json.Marshal(st)
	assert.Less(t, len(b), 3*textCap, "structured content is bounded")
	out := st["stdout"].(map[string]any)
	assert.True(t, strings.HasPrefix(text, out["text"].(string)), "the text shows the structured view")
	om := out["omitted"].(map[string]any)
	from, dropped := int64(om["offset"].(float64)), int64(om["bytes"].(float64))
	assert.EqualValues(t, 1288895, int64(out["bytes"].(float64)))
	_, hasLines := om["lines"]
	assert.False(t, hasLines, "lines is left out when not all of them were seen (it said -1)")
	m := regexp.MustCompile(`\n\[… (\d+) bytes left out at offset (\d+); only bytes (\d+)–(\d+) and (\d+)–(\d+) are still kept \(read_output with offset (\d+)\); the other (\d+) bytes are lost …\]\n(\d+)\n`).FindStringSubmatch(text)
	require.NotNil(t, m, text[len(text)/2-2000:len(text)/2+2000])
	assert.Equal(t, strconv.FormatInt(dropped, 10), m[1])
	assert.Equal(t, strconv.FormatInt(from, 10), m[2])
	// The head ends with a whole line, the tail starts with one.
	head := text[:strings.Index(text, "\n[…")+1]
	lines := strings.Split(strings.TrimSuffix(head, "\n"), "\n")
	last, err := strconv.Atoi(lines[len(lines)-1])
	require.NoError(t, err)
	assert.Len(t, lines, last, "the head is lines 1..%d", last)
	firstTail, _ := strconv.Atoi(m[9])
	assert.Greater(t, firstTail, last)
	// What the text says is kept is what read_output reads.
	id := st["exec_id"].(string)
	read, _, isErr := callTool(t, cs, "read_output", map[string]any{"exec_id": id, "offset": from, "max_bytes": 20})
	require.False(t, isErr, read)
	assert.True(t, strings.HasPrefix(read, fmt.Sprintf("%d\n", last+1)), read)
	// A read inside the lost part says so.
	gap, _ := strconv.ParseInt(m[4], 10, 64)
	read, _, _ = callTool(t, cs, "read_output", map[string]any{"exec_id": id, "offset": gap + 10, "max_bytes": 20})
	assert.Contains(t, read, fmt.Sprintf("[bytes %d–%s are no longer kept; reading from %s]", gap+10, m[5], m[5]))
}

// Item 6 within what is kept: the omitted middle is all readable.
func TestCutOutputReadable(t *testing.T) {
	cs, _ := connect(t, nil)
	text, st, _ := callTool(t, cs, "run", map[string]any{"command": "seq 1 20000"}) // 108894 bytes
	m := regexp.MustCompile(`\n\[… (\d+) bytes \((\d+) lines\) left out at offset (\d+); read_output with offset (\d+) reads them …\]\n`).FindStringSubmatch(text)
	require.NotNil(t, m, text)
	dropped, _ := strconv.Atoi(m[1])
	shown := st["stdout"].(map[string]any)["text"].(string)
	headTail := strings.Replace(shown, m[0][1:], "", 1)
	assert.Equal(t, 108894, len(headTail)+dropped, "every byte is shown or counted")
	lines, _ := strconv.Atoi(m[2])
	assert.Equal(t, 20000, strings.Count(headTail, "\n")+lines, "every line is shown or counted")
	assert.Equal(t, m[3], m[4], "all of it is readable from where it starts")
}

// Item 15: after a yield the structured content holds the whole bounded
// view of the output, not the last second's.
func TestStructuredAfterLongWait(t *testing.T) {
	cs, _ := connect(t, nil)
	text, st, _ := callTool(t, cs, "run", map[string]any{"command": "for i in 1 2 3 4; do echo tick$i; sleep 0.4; done", "yield_ms": 10000})
	assert.Equal(t, "tick1\ntick2\ntick3\ntick4\n", st["stdout"].(map[string]any)["text"], text)
}

// Item 16: session_info, read_background, resize.
func TestSessionInfoBackgroundResize(t *testing.T) {
	cs, _ := connect(t, nil)
	_, _, _ = callTool(t, cs, "run", map[string]any{"session": "bg", "command": "cd /tmp && (sleep 0.3; echo from-the-background) &"})
	text, st, isErr := callTool(t, cs, "session_info", map[string]any{"session": "bg"})
	require.False(t, isErr, text)
	assert.Contains(t, text, "(bg): idle")
	assert.Contains(t, text, " in /tmp")
	assert.Contains(t, text, "no command running")
	assert.Equal(t, "bg", st["name"])

	require.Eventually(t, func() bool {
		text, _, _ = callTool(t, cs, "read_background", map[string]any{"session": "bg"})
		return strings.Contains(text, "from-the-background")
	}, 10*time.Second, 100*time.Millisecond, text)
	assert.Regexp(t, `\[bytes 0–\d+; the next read starts at offset \d+\]$`, text)

	_, st, _ = callTool(t, cs, "run", map[string]any{"session": "bg", "command": "printf 'go? '; read x", "yield_ms": 5000})
	require.Equal(t, "waiting_input", st["state"])
	text, _, _ = callTool(t, cs, "session_info", map[string]any{"session": "bg"})
	assert.Contains(t, text, fmt.Sprintf("running %s: \"printf 'go? '; read x\"", st["exec_id"]))
	assert.Contains(t, text, `waiting for input (line): "go? "`)
	_, _, _ = callTool(t, cs, "send_input", map[string]any{"input": "y", "keys": []string{"Enter"}, "session": "bg"})

	text, st, isErr = callTool(t, cs, "resize", map[string]any{"session": "bg", "rows": 40, "cols": 120})
	require.False(t, isErr, text)
	assert.Contains(t, text, "is now 120 columns by 40 rows")
	assert.EqualValues(t, 40, st["rows"])
	text, _, _ = callTool(t, cs, "run", map[string]any{"session": "bg", "command": "stty size"})
	assert.Contains(t, text, "40 120\n")
}
