package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/session"
)

// TestIsolateRefusedWithoutPrivilege: `trl serve --isolate` by a user who
// cannot change uids refuses to start and says why (SPEC §13).
func TestIsolateRefusedWithoutPrivilege(t *testing.T) {
	if os.Geteuid() != 0 {
		// Already unprivileged: run it as is.
		out, err := exec.Command(trlBin, "serve", "--isolate", "--socket", filepath.Join(t.TempDir(), "s")).CombinedOutput()
		require.Error(t, err)
		assert.Contains(t, string(out), "--isolate needs root")
		return
	}
	// As root: run the binary as nobody, from a copy nobody can execute.
	dir, err := os.MkdirTemp("", "trl-noroot-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin := filepath.Join(dir, "trl")
	src, err := os.Open(trlBin)
	require.NoError(t, err)
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	src.Close()
	require.NoError(t, dst.Close())
	cmd := exec.Command(bin, "serve", "--isolate", "--socket", filepath.Join(dir, "s.sock"))
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	done := make(chan struct{})
	var out []byte
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		<-done
		t.Fatal("trl serve --isolate without privilege did not refuse; it kept running")
	}
	require.Error(t, err, "output: %s", out)
	assert.Contains(t, string(out), "--isolate needs root")
	assert.Contains(t, string(out), "CAP_SETUID")
}

// TestIsolateEndToEnd: with --isolate each session has its own uid and
// home, and one cannot read the other's files.
func TestIsolateEndToEnd(t *testing.T) {
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := 2002000000 + os.Getpid()%50000*16
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-e2e-homes-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	d := startDaemon(t, "--isolate", "--uid-range", fmt.Sprintf("%d-%d", first, first+15), "--isolate-homes", homes)
	c := dial(t, d.socket)
	a := data(t, c.call("session.create", map[string]any{}))["session_id"]
	b := data(t, c.call("session.create", map[string]any{}))["session_id"]
	ra := data(t, c.call("exec.run", map[string]any{"session_id": a, "command": "id -u; echo private > ~/f; echo ~"}))
	rb := data(t, c.call("exec.run", map[string]any{"session_id": b, "command": "id -u"}))
	assert.NotEqual(t, ra["stdout"], rb["stdout"])
	var uid int
	var home string
	_, err := fmt.Sscanf(ra["stdout"].(string), "%d\n%s\n", &uid, &home)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, uid, first)
	rb = data(t, c.call("exec.run", map[string]any{"session_id": b, "command": "cat " + home + "/f"}))
	assert.NotEqual(t, 0.0, rb["exit_code"])
	assert.NotContains(t, rb["stdout"], "private")
}
