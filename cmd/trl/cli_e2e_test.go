package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCallSocketFromEnv: `trl call` finds the daemon through TRL_SOCKET,
// as the Python client does; --socket and --instance still win over it.
func TestCallSocketFromEnv(t *testing.T) {
	d := startDaemon(t)
	cmd := exec.Command(trlBin, "call", "system.ping")
	cmd.Env = append(os.Environ(), "TRL_SOCKET="+d.socket)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	assert.Contains(t, string(out), `"ok":true`)

	name := fmt.Sprintf("no-such-instance-%d", os.Getpid())
	cmd = exec.Command(trlBin, "call", "--instance", name, "system.ping")
	cmd.Env = append(os.Environ(), "TRL_SOCKET="+d.socket)
	out, err = cmd.CombinedOutput()
	require.Error(t, err, "--instance given should win over TRL_SOCKET: %s", out)
	assert.Contains(t, string(out), "/tmp/trl-"+name+".sock")
}

// TestMakeRunAndInstall runs the Makefile's targets as the README tells a
// person to: `make run INSTANCE=NAME` serves /tmp/trl-NAME.sock, `make
// run` with TRL_SOCKET set serves that socket, and `make install` puts a
// trl whose version is the checkout's `git describe` into GOBIN.
func TestMakeRunAndInstall(t *testing.T) {
	if testing.Short() {
		t.Skip("builds trl three times with make: not in -short")
	}
	for _, tool := range []string{"make", "git"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: the Makefile's targets cannot run here", tool)
		}
	}
	root, err := filepath.Abs("../..")
	require.NoError(t, err)
	dir := t.TempDir()
	bin := filepath.Join(dir, "trl")

	// makeRun starts `make run` with extra arguments and environment and
	// returns once a daemon answers on socket; it stops it at cleanup.
	makeRun := func(socket string, env []string, args ...string) {
		t.Helper()
		cmd := exec.Command("make", append([]string{"-C", root, "--no-print-directory", "run", "BIN=" + bin}, args...)...)
		cmd.Env = append(os.Environ(), env...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out lockedBuffer
		cmd.Stdout, cmd.Stderr = &out, &out
		require.NoError(t, cmd.Start())
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		stop := func() {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				t.Errorf("make run did not stop on SIGTERM: %s", out.String())
			}
		}
		require.Eventually(t, func() bool {
			c, err := net.Dial("unix", socket)
			if err == nil {
				c.Close()
			}
			return err == nil
		}, 3*time.Minute, 50*time.Millisecond, "make run did not serve %s: %s", socket, &out)
		ping := exec.Command(trlBin, "call", "system.ping")
		ping.Env = append(os.Environ(), "TRL_SOCKET="+socket)
		pout, err := ping.CombinedOutput()
		require.NoError(t, err, "%s", pout)
		stop()
	}

	instance := fmt.Sprintf("maketest-%d", os.Getpid())
	makeRun("/tmp/trl-"+instance+".sock", nil, "INSTANCE="+instance)
	socket := filepath.Join(dir, "env.sock")
	makeRun(socket, []string{"TRL_SOCKET=" + socket})

	gobin := filepath.Join(dir, "gobin")
	install := exec.Command("make", "-C", root, "--no-print-directory", "install")
	install.Env = append(os.Environ(), "GOBIN="+gobin)
	out, err := install.CombinedOutput()
	require.NoError(t, err, "%s", out)
	version, err := exec.Command(filepath.Join(gobin, "trl"), "version").Output()
	require.NoError(t, err)
	describe := exec.Command("git", "describe", "--tags", "--always", "--dirty")
	describe.Dir = root
	want, err := describe.Output()
	require.NoError(t, err)
	assert.Equal(t, "trl "+strings.TrimSpace(string(want)), strings.TrimSpace(string(version)))
	assert.Contains(t, string(out), filepath.Join(gobin, "trl"))
}
