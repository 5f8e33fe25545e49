package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/session"
)

// TestSessionLimitsRefusedWithoutDelegation: on a host where the daemon
// can use neither a delegated cgroup v2 tree nor writable cgroup v1
// hierarchies for the memory, cpu and pids controllers, the daemon says so at start,
// refuses --session-memory, and answers session.create's limits with
// INVALID_PARAMS instead of ignoring them (issue 23 §3).
func TestSessionLimitsRefusedWithoutDelegation(t *testing.T) {
	if session.LimitsUnavailable() == nil {
		t.Skip("this host lets the daemon set limits (cgroup v2 delegated or v1 writable): they are set, not refused (TestSessionLimitsEndToEnd; the refusal is TestLimitsRefusedWithoutDelegation in session)")
	}
	out, err := exec.Command(trlBin, "serve", "--socket", filepath.Join(t.TempDir(), "s"), "--session-memory", "64").CombinedOutput()
	require.Error(t, err, "the daemon started with limits it cannot set: %s", out)
	assert.Contains(t, string(out), "need cgroup v2 delegated to the daemon")

	d := startDaemon(t)
	c := dial(t, d.socket)
	r := c.call("session.create", map[string]any{"limits": map[string]any{"memory_mb": 64}})
	require.Equal(t, false, r["ok"], "%v", r)
	e := r["error"].(map[string]any)
	assert.Equal(t, "INVALID_PARAMS", e["code"])
	assert.Contains(t, e["message"], "limits cannot be set on this host")
	assert.Contains(t, d.stderr.String(), "per-session limits are unavailable")
	data(t, c.call("session.create", map[string]any{}))
}

// TestSessionLimitsEndToEnd: with --session-memory 64 a python3 memory hog
// is killed (exit 137, end_cause "out of memory"), the session stays
// usable, and session.info shows its limits and usage.
func TestSessionLimitsEndToEnd(t *testing.T) {
	if why := session.LimitsUnavailable(); why != nil {
		t.Skipf("per-session limits are unavailable on this host: %v", why)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	d := startDaemon(t, "--session-memory", "64", "--session-pids", "128")
	c := dial(t, d.socket)
	s := data(t, c.call("session.create", map[string]any{"limits": map[string]any{"cpu": 1}}))["session_id"]
	r := data(t, c.call("exec.run", map[string]any{"session_id": s, "timeout_s": 60,
		"command": "python3 -c \"b = []\nwhile True: b.append(bytearray(1 << 20))\""}))
	assert.EqualValues(t, 137, r["exit_code"], "%v", r)
	assert.Equal(t, "out of memory", r["end_cause"])
	r = data(t, c.call("exec.run", map[string]any{"session_id": s, "command": "echo alive"}))
	assert.Equal(t, "alive\n", r["stdout"])
	assert.Nil(t, r["end_cause"])
	in := data(t, c.call("session.info", map[string]any{"session_id": s}))
	assert.Equal(t, map[string]any{"memory_mb": 64.0, "pids": 128.0, "cpu": 1.0}, in["limits"])
	u := in["usage"].(map[string]any)
	assert.Greater(t, u["memory_bytes"], 0.0)
	assert.GreaterOrEqual(t, u["oom_kills"], 1.0)
}

// TestIsolatedSessionLimitsEndToEnd: limits hold for an isolated session
// too, whose shell runs under its own uid in its own mount namespace: a
// memory hog is killed, the command says "out of memory", the shell goes
// on, and session.info counts the kill.
func TestIsolatedSessionLimitsEndToEnd(t *testing.T) {
	if why := session.LimitsUnavailable(); why != nil {
		t.Skipf("per-session limits are unavailable on this host: %v", why)
	}
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	first := 2007000000 + os.Getpid()%50000*16
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-e2e-limithomes-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	d := startDaemon(t, "--isolate", "--uid-range", fmt.Sprintf("%d-%d", first, first+15), "--isolate-homes", homes, "--session-memory", "64")
	c := dial(t, d.socket)
	s := data(t, c.call("session.create", map[string]any{}))["session_id"]
	r := data(t, c.call("exec.run", map[string]any{"session_id": s, "timeout_s": 60,
		"command": "python3 -c \"b = []\nwhile True: b.append(bytearray(1 << 20))\""}))
	assert.EqualValues(t, 137, r["exit_code"], "%v", r)
	assert.Equal(t, "out of memory", r["end_cause"])
	r = data(t, c.call("exec.run", map[string]any{"session_id": s, "command": "id -u"}))
	uid, err := strconv.Atoi(strings.TrimSpace(r["stdout"].(string)))
	require.NoError(t, err, "%v", r)
	assert.GreaterOrEqual(t, uid, first, "the shell runs under the session's own uid")
	in := data(t, c.call("session.info", map[string]any{"session_id": s}))
	u, ok := in["usage"].(map[string]any)
	require.True(t, ok, "session.info has usage: %v", in)
	assert.GreaterOrEqual(t, u["oom_kills"], 1.0)
}
