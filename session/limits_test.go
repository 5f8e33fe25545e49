package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLimitsCheckAndOver(t *testing.T) {
	def := Limits{MemoryMB: 512, PIDs: 100}
	assert.Equal(t, Limits{MemoryMB: 64, PIDs: 100, CPU: 0.5}, def.Over(Limits{MemoryMB: 64, CPU: 0.5}))
	for _, bad := range []Limits{{MemoryMB: 1}, {MemoryMB: -1}, {CPU: 0.001}, {PIDs: 2}, {IOWeight: 10001}, {IOWeight: -5}} {
		assert.ErrorIs(t, bad.Check(), ErrInvalid, "%+v", bad)
	}
	assert.NoError(t, Limits{MemoryMB: 64, CPU: 1.5, PIDs: 64, IOWeight: 200}.Check())
	assert.ElementsMatch(t, []string{"memory", "cpu", "pids", "io"}, Limits{MemoryMB: 64, CPU: 1.5, PIDs: 64, IOWeight: 200}.controllers())
}

// TestLimitsRefusedWithoutDelegation: where no cgroup is the daemon's to
// use for limits (neither a delegated v2 tree nor writable v1
// hierarchies; simulated with limitsOff where this host has them), a
// session asking for limits is refused with a clear error instead of
// being started without them (issue 23 §3).
func TestLimitsRefusedWithoutDelegation(t *testing.T) {
	if LimitsUnavailable() == nil {
		limitsOff.Store(true)
		t.Cleanup(func() { limitsOff.Store(false) })
	}
	require.Error(t, LimitsUnavailable())
	m := newManager(t)
	_, err := m.Create(Config{Limits: Limits{MemoryMB: 64}})
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "limits cannot be set on this host")
	assert.Contains(t, err.Error(), "cgroup v2")
	s, err := m.Create(Config{})
	require.NoError(t, err, "a session without limits still starts")
	out, _, _ := run2(t, s, "echo fine")
	assert.Equal(t, "fine\n", out)
}

// needLimits skips a test of enforcement on a host where limits cannot
// be set, saying why.
func needLimits(t *testing.T) {
	t.Helper()
	if why := LimitsUnavailable(); why != nil {
		t.Skipf("per-session limits are unavailable on this host, so they cannot be enforced: %v", why)
	}
}

// TestCPULimitThrottles: under cpu 0.2 a busy loop that runs for a second
// of wall time gets about a fifth of a CPU, as the session's usage says.
func TestCPULimitThrottles(t *testing.T) {
	needLimits(t)
	m := newManager(t)
	s, err := m.Create(Config{Limits: Limits{CPU: 0.2}})
	require.NoError(t, err)
	u0, ok := s.Usage()
	require.True(t, ok)
	_, _, st := run2(t, s, `end=$(($(date +%s%N) + 1000000000)); while [ "$(date +%s%N)" -lt "$end" ]; do :; done`)
	require.Equal(t, 0, st.ExitCode)
	u1, _ := s.Usage()
	used := u1.CPUSeconds - u0.CPUSeconds
	t.Logf("a second's busy loop used %.2f s of CPU", used)
	assert.Greater(t, used, 0.05, "the loop ran")
	assert.Less(t, used, 0.6, "a second at 0.2 CPU uses about 0.2 s of CPU (unlimited it would use about 1 s)")
}

// TestPIDsLimitRefusesForks: under pids 16 a program that tries to hold 40
// children gets at most 16 processes, the rest of its forks fail, and the
// shell lives on.
func TestPIDsLimitRefusesForks(t *testing.T) {
	needLimits(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	m := newManager(t)
	s, err := m.Create(Config{Limits: Limits{PIDs: 16}})
	require.NoError(t, err)
	out, _, st := run2(t, s, `python3 -c "
import os, time
n = 0
for i in range(40):
    try:
        if os.fork() == 0:
            time.sleep(1)
            os._exit(0)
        n += 1
    except OSError:
        pass
print(n)
"`)
	require.Equal(t, 0, st.ExitCode)
	n, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err, "%q", out)
	assert.Greater(t, n, 0)
	assert.Less(t, n, 16, "the shell and python3 count too")
	out, _, _ = run2(t, s, "sleep 1.2; echo alive")
	assert.Equal(t, "alive\n", out)
}

// TestLimitGroupsHoldTheShellAndGo: a limited session's shell and what it
// starts are in the session's groups, whose limits are the ones asked
// for, and the groups are gone once the session is closed.
func TestLimitGroupsHoldTheShellAndGo(t *testing.T) {
	needLimits(t)
	m := newManager(t)
	s, err := m.Create(Config{Limits: Limits{MemoryMB: 48, PIDs: 32, CPU: 0.5, IOWeight: 200}})
	if err != nil && strings.Contains(err.Error(), "io_weight") {
		t.Logf("io_weight cannot be set here: %v", err)
		s, err = m.Create(Config{Limits: Limits{MemoryMB: 48, PIDs: 32, CPU: 0.5}})
	}
	require.NoError(t, err)
	var dirs []string
	var want map[string]string
	if s.v1 != nil {
		assert.GreaterOrEqual(t, s.v1.oomFD, 0, "the kernel tells OOM events on an eventfd (else each command reads memory.oom_control, ~30 µs, twice)")
		want = map[string]string{"memory/memory.limit_in_bytes": "50331648", "pids/pids.max": "32", "cpu/cpu.cfs_quota_us": "50000"}
		for c, dir := range s.v1.dirs {
			dirs = append(dirs, dir)
			for k, v := range want {
				if ctl, file, _ := strings.Cut(k, "/"); ctl == c {
					b, err := os.ReadFile(filepath.Join(dir, file))
					require.NoError(t, err)
					assert.Equal(t, v, strings.TrimSpace(string(b)), k)
				}
			}
		}
	} else {
		require.NotNil(t, s.cg)
		dirs = append(dirs, s.cg.dir)
		b, err := os.ReadFile(filepath.Join(s.cg.dir, "memory.max"))
		require.NoError(t, err)
		assert.Equal(t, "50331648", strings.TrimSpace(string(b)))
	}
	// A command's process is in every group.
	out, _, _ := run2(t, s, "cat /proc/self/cgroup")
	for _, dir := range dirs {
		assert.Contains(t, out, "/"+filepath.Base(dir)+"\n", "a command's process is in %s", dir)
	}
	s.Close()
	for _, dir := range dirs {
		_, err := os.Stat(dir)
		assert.True(t, os.IsNotExist(err), "%s is left after the session closed", dir)
	}
}

// TestMemoryHogKilledShellLives: under memory_mb 64 a python3 memory hog
// is killed by the OOM killer (exit 137, OOMKilled), the shell lives on,
// and the session's usage is readable (issue 23 §3).
func TestMemoryHogKilledShellLives(t *testing.T) {
	needLimits(t)
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	m := newManager(t)
	s, err := m.Create(Config{Limits: Limits{MemoryMB: 64, PIDs: 64, CPU: 1}})
	require.NoError(t, err)
	assert.Equal(t, Limits{MemoryMB: 64, PIDs: 64, CPU: 1}, s.Limits())
	k := &splitSink{}
	j, err := s.Start(Command{Text: `python3 -c "b = []
while True: b.append(bytearray(1 << 20))"`}, k)
	require.NoError(t, err)
	select {
	case <-j.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the hog was not stopped")
	}
	st := j.Status()
	assert.Equal(t, 137, st.ExitCode)
	assert.True(t, st.OOMKilled)
	out, _, st2 := run2(t, s, "echo alive")
	assert.Equal(t, "alive\n", out)
	assert.False(t, st2.OOMKilled)
	u, ok := s.Usage()
	require.True(t, ok)
	assert.Greater(t, u.MemoryBytes, int64(0))
	assert.GreaterOrEqual(t, u.OOMKills, int64(1))
	assert.Greater(t, u.PIDs, int64(0))
}

// TestV1SharedHierarchy: controllers mounted as one v1 hierarchy
// (cpu,cpuacct on most systemd hosts) get one group, made once, entered
// once and removed once.
func TestV1SharedHierarchy(t *testing.T) {
	v1Base("memory") // the host's bases are found once; replaced for this test
	saved := v1Bases
	t.Cleanup(func() { v1Bases = saved })
	shared, mem := t.TempDir(), t.TempDir()
	v1Bases = map[string]string{"cpu": shared, "cpuacct": shared, "memory": mem}
	g, err := newV1Groups("s-shared", Limits{CPU: 1})
	require.NoError(t, err, "a shared hierarchy's group is made once")
	assert.Equal(t, g.dirs["cpu"], g.dirs["cpuacct"])
	assert.Len(t, g.unique(), 2)
	require.NoError(t, g.remove())
	for _, dir := range g.dirs {
		_, err := os.Stat(dir)
		assert.True(t, os.IsNotExist(err), "%s is left", dir)
	}
}

// TestRefusedLimitsLeaveNoGroups: a session whose limits cannot be set
// after its groups were made (here a blkio hierarchy with no weight file)
// is refused and leaves none of its groups behind, its cgroup v2 group
// included.
func TestRefusedLimitsLeaveNoGroups(t *testing.T) {
	needLimits(t)
	v1Base("memory")
	if v1Bases["memory"] == "" {
		t.Skip("limits are set through cgroup v2 here: no v1 groups to leave")
	}
	saved := v1Bases
	t.Cleanup(func() { v1Bases = saved })
	fake := t.TempDir() // a directory, not a blkio hierarchy: no weight to set
	v1Bases = map[string]string{}
	for c, dir := range saved {
		v1Bases[c] = dir
	}
	v1Bases["blkio"] = fake
	m := newManager(t)
	_, err := m.Create(Config{Limits: Limits{MemoryMB: 64, IOWeight: 200}})
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "io_weight")
	mine := fmt.Sprintf("trl-%d-", os.Getpid())
	for _, base := range []string{cgroupBase(), saved["memory"], fake} {
		if base == "" {
			continue
		}
		entries, err := os.ReadDir(base)
		require.NoError(t, err)
		for _, e := range entries {
			assert.False(t, strings.HasPrefix(e.Name(), mine), "%s/%s is left after the refusal", base, e.Name())
		}
	}
}
