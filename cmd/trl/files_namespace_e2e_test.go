package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/session"
)

// isolatedFilesDaemon starts a daemon with --isolate (and args), serving
// HTTP too, and two sessions.
func isolatedFilesDaemon(t *testing.T, uidBase int, args ...string) (*httpDaemon, *client, string, string) {
	t.Helper()
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := uidBase + os.Getpid()%50000*16
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-e2e-nshomes-%d-%d", uidBase, os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	args = append([]string{"--isolate", "--uid-range", fmt.Sprintf("%d-%d", first, first+15), "--isolate-homes", homes}, args...)
	d := startHTTPDaemon(t, args...)
	c := dial(t, d.socket)
	a := data(t, c.call("session.create", map[string]any{}))["session_id"].(string)
	b := data(t, c.call("session.create", map[string]any{}))["session_id"].(string)
	return d, c, a, b
}

// TestFilesSeeSessionNamespace: an isolated session has its own /tmp
// (a tmpfs in its mount namespace); fs.* and /files mean the session's
// /tmp, not the daemon's. What its shell writes there fs.read reads, what
// fs.write and PUT /files put there its shell sees, and another isolated
// session sees none of it, nor does the daemon's /tmp get it.
func TestFilesSeeSessionNamespace(t *testing.T) {
	d, c, a, b := isolatedFilesDaemon(t, 2008000000)
	shellFile := fmt.Sprintf("/tmp/trl-ns-shell-%d", os.Getpid())
	fsFile := fmt.Sprintf("/tmp/trl-ns-fs-%d", os.Getpid())
	putFile := fmt.Sprintf("/tmp/trl-ns-put-%d", os.Getpid())

	r := data(t, c.call("exec.run", map[string]any{"session_id": a, "command": "echo from the shell > " + shellFile}))
	require.EqualValues(t, 0, r["exit_code"], "%v", r)
	got := data(t, c.call("fs.read", map[string]any{"session_id": a, "path": shellFile}))
	assert.Equal(t, "from the shell\n", got["data"], "fs.read reads the session's /tmp")
	resp := d.do(t, http.MethodGet, d.filesURL(shellFile, "session", a), nil, bearer())
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.Equal(t, "from the shell\n", string(body), "GET /files reads the session's /tmp")

	data(t, c.call("fs.write", map[string]any{"session_id": a, "path": fsFile, "data": "from fs.write"}))
	resp = d.do(t, http.MethodPut, d.filesURL(putFile, "session", a), bytes.NewReader([]byte("from PUT")), bearer())
	m := bodyJSON(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", m)
	r = data(t, c.call("exec.run", map[string]any{"session_id": a, "command": "cat " + fsFile + "; echo; cat " + putFile}))
	assert.Equal(t, "from fs.write\nfrom PUT", r["stdout"], "the shell sees what fs.write and PUT /files wrote")
	l := data(t, c.call("fs.list", map[string]any{"session_id": a, "path": "/tmp"}))
	var names []string
	for _, e := range l["entries"].([]any) {
		names = append(names, e.(map[string]any)["name"].(string))
	}
	assert.Subset(t, names, []string{filepath.Base(shellFile), filepath.Base(fsFile), filepath.Base(putFile)})

	for _, p := range []string{shellFile, fsFile, putFile} {
		fail(t, c.call("fs.read", map[string]any{"session_id": b, "path": p}), "FILE_NOT_FOUND")
		resp = d.do(t, http.MethodGet, d.filesURL(p, "session", b), nil, bearer())
		assert.Equal(t, http.StatusNotFound, resp.StatusCode, p)
		resp.Body.Close()
		_, err := os.Stat(p)
		assert.True(t, os.IsNotExist(err), "the daemon's %s: %v", p, err)
	}
	r = data(t, c.call("exec.run", map[string]any{"session_id": b, "command": "cat " + fsFile + " " + shellFile + " 2>/dev/null; echo $?"}))
	assert.Equal(t, "1\n", r["stdout"], "another session's shell sees neither")
}

// TestFilesRootInSessionNamespace: --fs-root names a tree in the
// session's view: --fs-root /tmp with --isolate confines fs.* to the
// session's own /tmp.
func TestFilesRootInSessionNamespace(t *testing.T) {
	_, c, a, b := isolatedFilesDaemon(t, 2009000000, "--fs-root", "/tmp")
	p := fmt.Sprintf("/tmp/trl-ns-root-%d", os.Getpid())
	data(t, c.call("fs.write", map[string]any{"session_id": a, "path": p, "data": "inside"}))
	r := data(t, c.call("exec.run", map[string]any{"session_id": a, "command": "cat " + p}))
	assert.Equal(t, "inside", r["stdout"])
	fail(t, c.call("fs.read", map[string]any{"session_id": b, "path": p}), "FILE_NOT_FOUND")
	fail(t, c.call("fs.read", map[string]any{"session_id": a, "path": "/etc/passwd"}), "OUTSIDE_ROOT")
	data(t, c.call("exec.run", map[string]any{"session_id": a, "command": "ln -s /etc/passwd " + p + ".link"}))
	fail(t, c.call("fs.read", map[string]any{"session_id": a, "path": p + ".link"}), "OUTSIDE_ROOT")
	_, err := os.Stat(p)
	assert.True(t, os.IsNotExist(err), "the daemon's %s: %v", p, err)
}
