package main

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/session"
	"golang.org/x/sys/unix"
)

// TestIsolateRefusedWithoutPrivilege: `trl serve --isolate` by a user who
// cannot change uids refuses to start and says why (SPEC §13); so does
// one that can change uids but lacks a capability isolation needs (it
// would start sessions it could not stop).
func TestIsolateRefusedWithoutPrivilege(t *testing.T) {
	if os.Geteuid() != 0 {
		// Already unprivileged: run it as is.
		out, err := exec.Command(trlBin, "serve", "--isolate", "--socket", filepath.Join(t.TempDir(), "s")).CombinedOutput()
		require.Error(t, err)
		assert.Contains(t, string(out), "--isolate needs root")
		return
	}
	bin, dir := nobodyBinary(t)
	for name, c := range map[string]struct {
		caps          []uintptr
		named, unsaid []string
	}{
		"no capability": {nil, []string{"CAP_SETUID", "CAP_KILL", "CAP_SYS_PTRACE"}, nil},
		// Enough before: it started, and could neither stop its
		// sessions' commands nor reuse their uids.
		"only the uid ones": {[]uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_CHOWN},
			[]string{"CAP_KILL", "CAP_DAC_OVERRIDE", "CAP_SYS_PTRACE", "CAP_SYS_ADMIN"}, []string{"CAP_SETUID", "CAP_CHOWN"}},
	} {
		t.Run(name, func(t *testing.T) {
			cmd := asNobody(bin, dir, c.caps, "serve", "--isolate", "--socket", filepath.Join(dir, "s.sock"))
			done := make(chan struct{})
			var out []byte
			var err error
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
			for _, s := range c.named {
				assert.Contains(t, string(out), s+" (to ")
			}
			for _, s := range c.unsaid {
				assert.NotContains(t, string(out), s+" (to ")
			}
		})
	}
}

// TestIsolateAsNonRootWithCapabilities: a daemon that is not root but
// holds the capabilities isolation needs isolates as root does: its
// sessions run under their own uids, a timeout stops a command, a quiet
// command is not mistaken for one waiting for input, and destroy kills
// what a session left and removes its home so that its uid is reused.
func TestIsolateAsNonRootWithCapabilities(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to start the daemon as nobody with capabilities")
	}
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("this test run cannot grant the capabilities it lacks itself: %v", err)
	}
	bin, dir := nobodyBinary(t)
	run := filepath.Join(dir, "run") // nobody's: the socket and the homes
	require.NoError(t, os.Mkdir(run, 0o755))
	require.NoError(t, os.Chown(run, 65534, 65534))
	socket, homes := filepath.Join(run, "trl.sock"), filepath.Join(run, "homes")
	uid := 2004000000 + os.Getpid()%50000*16 // one uid: it must be reused
	caps := []uintptr{unix.CAP_SETUID, unix.CAP_SETGID, unix.CAP_CHOWN, unix.CAP_KILL, unix.CAP_DAC_OVERRIDE, unix.CAP_SYS_PTRACE, unix.CAP_SYS_ADMIN}
	cmd := asNobody(bin, dir, caps, "serve", "--socket", socket, "--isolate", "--isolate-homes", homes,
		"--uid-range", fmt.Sprintf("%d-%d", uid, uid))
	var logs lockedBuffer
	cmd.Stderr = &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
		}
	})
	require.Eventually(t, func() bool {
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "daemon did not listen: %s", &logs)
	c := dial(t, socket)

	s := data(t, c.call("session.create", map[string]any{}))["session_id"]
	r := data(t, c.call("exec.run", map[string]any{"session_id": s, "command": "id -u; echo mine > ~/f; sleep 300 & echo $!"}))
	var gotUID, bg int
	_, err := fmt.Sscanf(r["stdout"].(string), "%d\n%d\n", &gotUID, &bg)
	require.NoError(t, err, "stdout %q", r["stdout"])
	assert.Equal(t, uid, gotUID)

	r = data(t, c.call("exec.run", map[string]any{"session_id": s, "command": "sleep 30", "timeout_s": 1, "until": []string{}}))
	assert.Equal(t, true, r["timed_out"], "the timeout stopped the command: %v", r)

	r = data(t, c.call("exec.run", map[string]any{"session_id": s, "command": "sleep 2", "yield_ms": 500}))
	assert.Equal(t, "running", r["state"], "a quiet sleep is running, not waiting for input: %v", r["input"])
	data(t, c.call("exec.wait", map[string]any{"exec_id": r["exec_id"], "until": []string{}}))

	data(t, c.call("session.destroy", map[string]any{"session_id": s}))
	assert.Eventually(t, func() bool { return syscall.Kill(bg, 0) == syscall.ESRCH }, 10*time.Second, 20*time.Millisecond,
		"the session's background sleep survived destroy")
	s = data(t, c.call("session.create", map[string]any{}))["session_id"]
	r = data(t, c.call("exec.run", map[string]any{"session_id": s, "command": "id -u; ls -A ~ | wc -l"}))
	assert.Equal(t, fmt.Sprintf("%d\n0\n", uid), r["stdout"], "the uid is reused, its home emptied of the last session's file")
}

// nobodyBinary copies trl where nobody can execute it and returns the
// copy and its directory (0755, root's).
func nobodyBinary(t *testing.T) (bin, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "trl-noroot-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, 0o755))
	bin = filepath.Join(dir, "trl")
	src, err := os.Open(trlBin)
	require.NoError(t, err)
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(dst, src)
	src.Close()
	require.NoError(t, err)
	require.NoError(t, dst.Close())
	return bin, dir
}

// asNobody is bin with args, to run as nobody holding caps (ambient, so
// that they survive the change of uid and the exec).
func asNobody(bin, dir string, caps []uintptr, args ...string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}, AmbientCaps: caps}
	return cmd
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
