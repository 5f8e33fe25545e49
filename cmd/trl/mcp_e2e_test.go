package main

import (
	"context"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
