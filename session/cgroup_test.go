package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStaleCgroupsSwept: the groups a SIGKILLed daemon left (one with a
// group a command made inside it) are killed and removed by the next
// manager's sweep, which runs beside its start; CloseAll waits for it.
func TestStaleCgroupsSwept(t *testing.T) {
	base := cgroupBase()
	if base == "" {
		t.Skip("no writable cgroup2 with cgroup.kill here: the sweep has nothing to do")
	}
	cmd := exec.Command("true")
	require.NoError(t, cmd.Run())
	dead := strconv.Itoa(cmd.Process.Pid) // exited and reaped: no such process now
	group := filepath.Join(base, "trl-"+dead+"-s-stale")
	inner := filepath.Join(group, "made-by-a-command")
	require.NoError(t, os.MkdirAll(inner, 0o755))
	t.Cleanup(func() { removeGroup(group) })

	var ended []chan struct{}
	for _, dir := range []string{group, inner} {
		sleep := exec.Command("sleep", "300")
		require.NoError(t, sleep.Start())
		done := make(chan struct{})
		go func() { sleep.Wait(); close(done) }() // the manager's reaper may collect it first
		t.Cleanup(func() { sleep.Process.Kill() })
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(sleep.Process.Pid)), 0))
		ended = append(ended, done)
	}
	m := NewManager(Options{Logger: testLogger(), Subreaper: true})
	for _, done := range ended {
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a process of the dead daemon's group survived the sweep")
		}
	}
	m.CloseAll()
	_, err := os.Stat(group)
	require.True(t, os.IsNotExist(err), "the stale group is removed once CloseAll returns: %v", err)
}

// TestRemovedGroupIsEmpty: a group another daemon's sweep removed first is
// empty at once; waiting on it for the full limit, once per group, made
// daemons that started together stall for many seconds.
func TestRemovedGroupIsEmpty(t *testing.T) {
	c := &cgroup{dir: filepath.Join(t.TempDir(), "trl-1-s-gone")}
	require.True(t, c.waitEmpty(5*time.Second))
}
