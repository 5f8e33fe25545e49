package session

import (
	"os/exec"
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

// TestLimitsRefusedWithoutDelegation: where cgroup v2 with its memory,
// cpu, pids and io controllers is not the daemon's to use (this host binds
// them to cgroup v1), a session asking for limits is refused with a clear
// error instead of being started without them (issue 23 §3).
func TestLimitsRefusedWithoutDelegation(t *testing.T) {
	why := LimitsUnavailable()
	if why == nil {
		t.Skip("this host delegates cgroup v2 to the daemon: limits are set, not refused (TestMemoryHogKilledShellLives)")
	}
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

// TestMemoryHogKilledShellLives: under memory_mb 64 a python3 memory hog
// is killed by the OOM killer (exit 137, OOMKilled), the shell lives on,
// and the session's usage is readable (issue 23 §3).
func TestMemoryHogKilledShellLives(t *testing.T) {
	if why := LimitsUnavailable(); why != nil {
		t.Skipf("per-session limits are unavailable on this host, so the hog cannot be limited: %v", why)
	}
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
