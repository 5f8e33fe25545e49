package session

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStartTickKeepsAProcessForkedAtOnce: a process forked just after
// since, in since's own clock tick, starts no earlier than startTick
// says. startTick once read /proc/uptime and added a tick, and so left
// out about a third of such processes: a timed-out command's answer then
// did not name the stray it had started (TestTimeoutSaysWhatStillRuns
// failed in a full make test).
func TestStartTickKeepsAProcessForkedAtOnce(t *testing.T) {
	t.Parallel()
	for i := 0; i < 100; i++ {
		since := time.Now()
		c := exec.Command("sleep", "5")
		require.NoError(t, c.Start())
		time.Sleep(time.Duration(i%15) * time.Millisecond)
		from := startTick(since)
		st, ok := readStat(c.Process.Pid)
		c.Process.Kill()
		c.Wait()
		require.True(t, ok)
		require.GreaterOrEqual(t, st.start, from, "round %d: forked %v after since", i, time.Duration(i%15)*time.Millisecond)
	}
}
