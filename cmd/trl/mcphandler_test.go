package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/mcpserver"
	"github.com/trl-project/trl/runtime"
)

// The daemon's /mcp server, with its tools' schemas, is built by the
// first MCP request, once, and not at start-up (the idle RSS goal).
func TestMCPServerBuiltOnFirstRequest(t *testing.T) {
	var built atomic.Int32
	orig := newMCPServer
	newMCPServer = func(o mcpserver.Options) *mcp.Server {
		built.Add(1)
		return orig(o)
	}
	t.Cleanup(func() { newMCPServer = orig })

	rt := quietRuntime(t)
	srv := httptest.NewServer(mcpHandler(rt))
	defer srv.Close()
	assert.Zero(t, built.Load(), "no MCP request yet: no server built")

	for range 2 {
		cs, err := mcpClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
		require.NoError(t, err)
		tools, err := cs.ListTools(context.Background(), nil)
		require.NoError(t, err)
		assert.NotEmpty(t, tools.Tools)
		require.NoError(t, cs.Close())
	}
	assert.EqualValues(t, 1, built.Load(), "one server for every MCP session")
}

// TestMCPSessionsEnd: an MCP session that goes without requests for
// mcpSessionIdle is closed (every initialize was kept for ever), and its
// client is told so.
func TestMCPSessionsEnd(t *testing.T) {
	orig := mcpSessionIdle
	mcpSessionIdle = 200 * time.Millisecond
	t.Cleanup(func() { mcpSessionIdle = orig })
	rt := quietRuntime(t)
	srv := httptest.NewServer(mcpHandler(rt))
	defer srv.Close()
	cs, err := mcpClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	require.NoError(t, err)
	defer cs.Close()
	_, err = cs.ListTools(context.Background(), nil)
	require.NoError(t, err)
	time.Sleep(time.Second)
	_, err = cs.ListTools(context.Background(), nil)
	assert.Error(t, err, "the idle session was closed")
}

// quietRuntime is a runtime that logs nothing, shut down after the test.
func quietRuntime(t *testing.T) *runtime.Runtime {
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return rt
}

// TestMCPSessionsCapped: /mcp holds at most maxMCPSessions sessions; one
// more initialize is refused with 503 and a reason, while the live ones
// keep working, and a session that ends frees its place (each kept about
// 15 KB until its idle timeout, with no bound on how many).
func TestMCPSessionsCapped(t *testing.T) {
	orig := maxMCPSessions
	maxMCPSessions = 3
	t.Cleanup(func() { maxMCPSessions = orig })
	rt := quietRuntime(t)
	srv := httptest.NewServer(mcpHandler(rt))
	defer srv.Close()
	connect := func() (*mcp.ClientSession, error) {
		return mcpClient().Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, MaxRetries: -1}, nil)
	}
	var live []*mcp.ClientSession
	defer func() { // before the server closes, which waits for them
		for _, cs := range live {
			cs.Close()
		}
	}()
	for range 3 {
		cs, err := connect()
		require.NoError(t, err)
		live = append(live, cs)
	}
	_, err := connect()
	require.Error(t, err, "a fourth session is refused")
	assert.Contains(t, err.Error(), "Service Unavailable")

	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	assert.Contains(t, string(body), "at most 3 MCP sessions")

	for _, cs := range live {
		_, err := cs.ListTools(context.Background(), nil)
		assert.NoError(t, err, "the live sessions keep working")
	}
	require.NoError(t, live[0].Close())
	require.Eventually(t, func() bool {
		cs, err := connect()
		if err != nil {
			return false
		}
		cs.Close()
		return true
	}, 5*time.Second, 50*time.Millisecond, "a closed session frees its place")
}
