package main

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	trlclient "github.com/trl-project/trl/client"
	"github.com/trl-project/trl/protocol"
)

func mcpClient() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "v0"}, nil)
}

func runTool(t *testing.T, cs *mcp.ClientSession, args map[string]any) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: args})
	require.NoError(t, err)
	require.False(t, res.IsError, "%v", res.Content)
	return res.Content[0].(*mcp.TextContent).Text
}

// `trl mcp` with no daemon on its socket runs the runtime in-process.
func TestMCPInProcess(t *testing.T) {
	cmd := exec.Command(trlBin, "mcp", "--socket", filepath.Join(t.TempDir(), "none.sock"))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cs, err := mcpClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	assert.Contains(t, runTool(t, cs, map[string]any{"command": "echo in-process"}), "in-process\nexit 0 · ")
	assert.Contains(t, stderr.String(), "in-process", "the mode is logged on stderr")
}

// `trl mcp` bridges to a live daemon: its sessions outlive the MCP client.
func TestMCPBridgeSessionsSurviveRestart(t *testing.T) {
	d := startDaemon(t)
	connect := func() (*mcp.ClientSession, *lockedBuffer) {
		cmd := exec.Command(trlBin, "mcp", "--socket", d.socket)
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		cs, err := mcpClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		return cs, &stderr
	}
	cs, stderr := connect()
	runTool(t, cs, map[string]any{"command": "export KEPT=across-restarts; cd /"})
	require.NoError(t, cs.Close())
	assert.Contains(t, stderr.String(), "bridging")

	cs, _ = connect()
	defer cs.Close()
	out := runTool(t, cs, map[string]any{"command": "echo $KEPT; pwd"})
	assert.Contains(t, out, "across-restarts\n/\n")
}

// /mcp on serve --http: the SDK's Streamable HTTP client, with and
// without the token.
func TestMCPOverHTTP(t *testing.T) {
	d := startHTTPDaemon(t)
	withToken := &http.Client{Transport: bearerTransport{token: e2eToken}}
	cs, err := mcpClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", HTTPClient: withToken}, nil)
	require.NoError(t, err)
	defer cs.Close()
	assert.Contains(t, runTool(t, cs, map[string]any{"command": "echo over-http"}), "over-http")

	_, err = mcpClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: d.url + "/mcp", MaxRetries: -1}, nil)
	require.Error(t, err, "no token, no MCP")
	assert.True(t, strings.Contains(err.Error(), "401") || strings.Contains(strings.ToLower(err.Error()), "unauthorized"), err.Error())
}

type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// Issue 24 item 11 in bridge mode, over real pipes to a real `trl mcp`
// process: closing its stdin (the MCP client goes away) leaves the
// daemon's command running; a request the client cancels
// (notifications/cancelled) interrupts it.
func TestMCPBridgeClientGoneVersusCancel(t *testing.T) {
	d := startDaemon(t)
	api, err := trlclient.Dial(context.Background(), d.socket)
	require.NoError(t, err)
	defer api.Close()
	find := func(command string) string {
		var id string
		require.Eventually(t, func() bool {
			list, err := api.ExecList(context.Background(), protocol.ExecListParams{})
			if err != nil {
				return false
			}
			for _, c := range list.Commands {
				if c.Command == command {
					id = c.ExecID
				}
			}
			return id != ""
		}, 20*time.Second, 20*time.Millisecond, "the command started")
		return id
	}
	waitEnd := func(id string) protocol.ExecStatus {
		st, err := api.ExecWait(context.Background(), protocol.ExecWaitParams{ExecID: id, TimeoutMS: ptrTo(int64(30000))})
		require.NoError(t, err)
		require.Equal(t, protocol.StateExited, st.State)
		return st
	}
	connect := func() *mcp.ClientSession {
		cmd := exec.Command(trlBin, "mcp", "--socket", d.socket)
		cs, err := mcpClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
		require.NoError(t, err)
		return cs
	}

	cs := connect()
	go func() {
		_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "sleep 2; echo survived", "yield_ms": 30000}})
	}()
	id := find("sleep 2; echo survived")
	require.NoError(t, cs.Close(), "closes trl mcp's stdin and waits for it to exit")
	st := waitEnd(id)
	assert.False(t, st.Canceled, "the command was not interrupted")
	require.NotNil(t, st.ExitCode)
	assert.Equal(t, 0, *st.ExitCode)

	cs = connect()
	defer cs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": "sleep 30; echo never", "yield_ms": 30000}})
		errc <- err
	}()
	id = find("sleep 30; echo never")
	cancel()
	require.Error(t, <-errc)
	st = waitEnd(id)
	assert.True(t, st.Canceled, "the cancelled request interrupted its command")
}

func ptrTo[T any](v T) *T { return &v }

// `trl mcp` bridging to a daemon that stops, then starts again on the
// same socket: while none answers, a tool call says so and how to start
// one; the first call after the restart says the sessions are gone and
// runs nothing (not a command meant for one directory, run in a fresh
// shell elsewhere); the next runs on the new daemon.
func TestMCPBridgeSaysTheDaemonStoppedOrRestarted(t *testing.T) {
	d := startDaemon(t)
	cmd := exec.Command(trlBin, "mcp", "--socket", d.socket)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	cs, err := mcpClient().Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, nil)
	require.NoError(t, err)
	defer cs.Close()
	workdir := t.TempDir()
	runTool(t, cs, map[string]any{"command": "cd " + workdir})

	call := func(command string) (string, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run", Arguments: map[string]any{"command": command}})
		require.NoError(t, err)
		require.Len(t, res.Content, 1)
		text, ok := res.Content[0].(*mcp.TextContent)
		require.True(t, ok, "%T", res.Content[0])
		return text.Text, res.IsError
	}

	d.stop(t)
	text, isErr := call("pwd")
	assert.True(t, isErr)
	assert.Regexp(t, `^INTERNAL_ERROR: the trl daemon on `+regexp.QuoteMeta(d.socket)+` is not running \(.+\), so nothing ran\. `+
		"Start it again \\(`trl serve --socket "+regexp.QuoteMeta(d.socket)+"`\\), then call again: the sessions it had, and their shells, are gone$", text)

	marker := filepath.Join(t.TempDir(), "ran")
	startDaemonAt(t, d.socket, trlBin, nil)
	text, isErr = call("touch " + marker)
	assert.True(t, isErr)
	assert.Regexp(t, `^SESSION_NOT_FOUND: the trl daemon on `+regexp.QuoteMeta(d.socket)+` restarted (less than a second|\d+s) ago: `+
		`the sessions of the daemon before it are gone, with their working directories, variables and commands, so this call ran nothing\. `+
		`Call again to go on with the new daemon \(session_list shows its sessions\)$`, text)
	assert.NoFileExists(t, marker, "the call after the restart ran nothing")

	text, isErr = call("touch " + marker + "; pwd")
	assert.False(t, isErr, text)
	assert.FileExists(t, marker)
	assert.NotContains(t, text, workdir, "a new daemon's session starts afresh")
}
