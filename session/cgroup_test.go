package session

import (
	"os"
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
	dead := strconv.Itoa(deadPID(t))
	group := filepath.Join(base, "trl-"+dead+"-s-stale")
	inner := filepath.Join(group, "made-by-a-command")
	require.NoError(t, os.MkdirAll(inner, 0o755))
	t.Cleanup(func() { removeGroup(group) })

	var pids []int
	for _, dir := range []string{group, inner} {
		pid := startSleep(t, nil)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0))
		pids = append(pids, pid)
	}
	m := NewManager(Options{Logger: testLogger(), Subreaper: true})
	for _, pid := range pids {
		// Ended: a zombie (startSleep's clean-up reaps it) or gone.
		require.Eventually(t, func() bool { st, ok := readStat(pid); return !ok || st.state == 'Z' }, 10*time.Second, 10*time.Millisecond,
			"a process of the dead daemon's group survived the sweep")
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

// TestStaleV1GroupsSwept: the cgroup v1 groups (limits on a v1 host) and
// a probe a SIGKILLed daemon left are emptied and removed by the next
// manager's sweep.
func TestStaleV1GroupsSwept(t *testing.T) {
	base := v1Base("pids")
	if base == "" {
		t.Skip("no writable cgroup v1 pids hierarchy here: the v1 sweep has nothing to do")
	}
	dead := strconv.Itoa(deadPID(t))
	group := filepath.Join(base, "trl-"+dead+"-s-stale")
	probe := filepath.Join(base, "trl-probe-"+dead+"-abcd")
	for _, dir := range []string{group, probe} {
		require.NoError(t, os.Mkdir(dir, 0o755))
		t.Cleanup(func() { removeGroup(dir) })
	}
	pid := startSleep(t, nil)
	require.NoError(t, os.WriteFile(filepath.Join(group, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0))
	m := NewManager(Options{Logger: testLogger(), Subreaper: true})
	require.Eventually(t, func() bool { st, ok := readStat(pid); return !ok || st.state == 'Z' }, 10*time.Second, 10*time.Millisecond,
		"a process of the dead daemon's v1 group survived the sweep")
	m.CloseAll()
	for _, dir := range []string{group, probe} {
		_, err := os.Stat(dir)
		require.True(t, os.IsNotExist(err), "%s is removed once CloseAll returns: %v", dir, err)
	}
}
