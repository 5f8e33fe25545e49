package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecondDaemonPrintsNoDeadURL: a `trl serve --http --console` whose
// socket another daemon holds fails before it listens on HTTP: it logged
// "listening on HTTP" and a one-time console login URL, dead a moment
// later. Its error says how to start it beside the other daemon.
func TestSecondDaemonPrintsNoDeadURL(t *testing.T) {
	d := startDaemon(t)
	t.Setenv("TRL_AUTH_TOKEN", e2eToken)
	out, errs, code := runTrl(t, "serve", "--socket", d.socket, "--http", "127.0.0.1:0", "--console", "--metrics", "127.0.0.1:0")
	assert.Equal(t, 1, code, "%s", errs)
	assert.Empty(t, out)
	assert.Contains(t, errs, "another trl daemon is already listening on "+d.socket)
	assert.Contains(t, errs, "--instance NAME")
	assert.Contains(t, errs, "--socket PATH")
	for _, dead := range []string{"listening on HTTP", "login", "/metrics"} {
		assert.NotContains(t, errs, dead, "a start that fails logs no address it served")
	}
}

// TestConsoleFlagsNeedHTTP: --console, --console-write and
// --console-approve without --http are refused at start (the daemon
// started without a console and said nothing).
func TestConsoleFlagsNeedHTTP(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "s.sock")
	for _, flag := range []string{"--console", "--console-write", "--console-approve"} {
		_, errs, code := runTrl(t, "serve", "--socket", socket, flag)
		assert.Equal(t, 2, code, "%s", errs)
		assert.Contains(t, errs, flag+": the web console is served over HTTP; add --http ADDR")
	}
	_, err := os.Stat(socket)
	assert.True(t, os.IsNotExist(err), "no daemon started")
}

// TestRecordWithoutHTTP: --record records without --http too (it made
// no directory and no file, and said nothing): the recordings are for
// `asciinema play` as well as for the console.
func TestRecordWithoutHTTP(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "rec")
	d := startDaemon(t, "--record", dir)
	c := dial(t, d.socket)
	s := data(t, c.call("session.create", map[string]any{"name": "recorded"}))
	data(t, c.call("exec.run", map[string]any{"session_id": s["session_id"], "command": "echo marker-recorded"}))
	cast := filepath.Join(dir, s["session_id"].(string)+".cast")
	require.Eventually(t, func() bool {
		b, err := os.ReadFile(cast)
		return err == nil && strings.Contains(string(b), "marker-recorded")
	}, 10*time.Second, 50*time.Millisecond, "no recording at %s: %s", cast, d.stderr)
}

// TestSocketClaimedBeforeHTTP: the socket is taken before the HTTP
// port, so a daemon whose HTTP port is taken leaves no socket behind and
// one whose socket is taken never binds the port.
func TestSocketClaimedBeforeHTTP(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	t.Setenv("TRL_AUTH_TOKEN", e2eToken)
	socket := filepath.Join(t.TempDir(), "s.sock")
	_, errs, code := runTrl(t, "serve", "--socket", socket, "--http", l.Addr().String())
	assert.Equal(t, 1, code, "%s", errs)
	assert.Contains(t, errs, "address already in use")
	_, err = os.Stat(socket)
	assert.True(t, os.IsNotExist(err), "the socket of a start that failed is removed")
}
