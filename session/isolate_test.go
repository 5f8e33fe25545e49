package session

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isolatedManager is a Manager that isolates, with a uid range of its
// own so that parallel test binaries do not share uids.
func isolatedManager(t *testing.T, nproc uint64) *Manager {
	t.Helper()
	if err := CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := uint32(2001000000 + os.Getpid()%50000*16)
	// Not under t.TempDir(): its parent is private to root, and the
	// sessions' uids must pass through to their homes.
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-test-homes-%d-%s", os.Getpid(), NewID("", 4)))
	t.Cleanup(func() { os.RemoveAll(homes) })
	m := NewManager(Options{Logger: testLogger(), Subreaper: true, Isolation: &Isolation{
		FirstUID: first, LastUID: first + 15, NProc: nproc, HomeRoot: homes,
	}})
	t.Cleanup(m.CloseAll)
	require.NoError(t, m.poolErr)
	return m
}

// TestIsolatedSessionsCannotReachEachOther: from one isolated session,
// another's /proc/PID/environ and fd/, its pipes, its processes and its
// files are out of reach, and so are the daemon's (SPEC §13).
func TestIsolatedSessionsCannotReachEachOther(t *testing.T) {
	m := isolatedManager(t, 0)
	a, err := m.Create(Config{})
	require.NoError(t, err)
	b, err := m.Create(Config{})
	require.NoError(t, err)

	out, _, st := run2(t, b, "id -u; pwd; echo secret > ~/file; stat -c %a .; sleep 300 & echo $!")
	require.Equal(t, 0, st.ExitCode)
	lines := strings.Fields(out)
	require.Len(t, lines, 4, out)
	bHome, bBg := lines[1], lines[3]
	assert.Equal(t, "700", lines[2], "the home's mode")
	outA, _, _ := run2(t, a, "id -u; pwd")
	aLines := strings.Fields(outA)
	require.Len(t, aLines, 2)
	assert.NotEqual(t, lines[0], aLines[0], "two sessions share a uid")
	assert.NotEqual(t, "0", aLines[0])
	assert.NotEqual(t, bHome, aLines[1])

	probes := map[string]string{
		"environ":          fmt.Sprintf("cat /proc/%d/environ", b.pid),
		"fd list":          fmt.Sprintf("ls /proc/%d/fd/", b.pid),
		"write its pipe":   fmt.Sprintf("echo 'echo INJECTED' > /proc/%d/fd/0", b.pid),
		"signal its shell": fmt.Sprintf("kill -0 %d", b.pid),
		"signal its job":   "kill -KILL " + bBg,
		"read its file":    "cat " + filepath.Join(bHome, "file"),
		"list its home":    "ls " + bHome,
		"daemon's fds":     fmt.Sprintf("ls /proc/%d/fd/", os.Getpid()),
		"daemon's environ": fmt.Sprintf("cat /proc/%d/environ", os.Getpid()),
		"its command file": "cat " + b.cmdFile(),
	}
	for name, cmd := range probes {
		out, _, _ := run2(t, a, "if "+cmd+" >/dev/null 2>&1; then echo REACHED; else echo denied; fi")
		assert.Equal(t, "denied\n", out, "%s: %s", name, cmd)
	}
	out, _, _ = run2(t, b, "cat ~/file; kill -0 "+bBg+" && echo alive")
	assert.Equal(t, "secret\nalive\n", out, "b was disturbed")
}

// TestIsolatedForkBomb: a fork bomb in one isolated session hits its
// uid's process limit while the daemon and the other sessions go on.
func TestIsolatedForkBomb(t *testing.T) {
	m := isolatedManager(t, 40)
	a, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	b, err := m.Create(Config{})
	require.NoError(t, err)
	k := &splitSink{}
	j, err := a.Start(Command{Text: "i=0; while [ $i -lt 200 ]; do sleep 60 & i=$((i+1)); done 2>/dev/null; echo looped"}, k)
	require.NoError(t, err)
	select {
	case <-j.Done():
	case <-time.After(60 * time.Second):
		t.Fatal("the fork loop did not end")
	}
	// dash gives up the line at the first fork refused.
	out, errOut := k.get()
	assert.NotEqual(t, "looped\n", out, "every fork succeeded: stderr %q, status %+v", errOut, j.Status())
	// Counted by uid, not by "sleep 60": under load many children are
	// still between fork and exec when the loop ends.
	uid := a.lease.uid
	n := len(pidsOfUID(uid))
	assert.LessOrEqual(t, n, 40, "processes of the bomb")
	assert.Greater(t, n, 10)

	t0 := time.Now()
	out, _, _ = run2(t, b, "echo fine")
	assert.Equal(t, "fine\n", out)
	c, err := m.Create(Config{})
	require.NoError(t, err, "the daemon can still create sessions")
	out, _, _ = run2(t, c, "echo ok")
	assert.Equal(t, "ok\n", out)
	assert.Less(t, time.Since(t0), 10*time.Second)

	_, err = m.Destroy(a.ID(), true)
	require.NoError(t, err)
	assert.False(t, uidsWithProcesses()[uid], "processes of the destroyed session's uid survive")
}

// TestIsolationKeySharesUID: sessions of one key (the gateway's tenant and
// workspace) share a uid and home; the uid is freed with the last.
func TestIsolationKeySharesUID(t *testing.T) {
	m := isolatedManager(t, 0)
	a, err := m.Create(Config{IsolationKey: "t1/w1"})
	require.NoError(t, err)
	b, err := m.Create(Config{IsolationKey: "t1/w1"})
	require.NoError(t, err)
	c, err := m.Create(Config{IsolationKey: "t2/w1"})
	require.NoError(t, err)
	assert.Equal(t, a.lease.uid, b.lease.uid)
	assert.NotEqual(t, a.lease.uid, c.lease.uid)
	home := a.lease.home
	run2(t, a, "echo x > ~/f")
	out, _, _ := run2(t, b, "cat ~/f")
	assert.Equal(t, "x\n", out)
	_, err = m.Destroy(a.ID(), true)
	require.NoError(t, err)
	_, err = os.Stat(home)
	assert.NoError(t, err, "the home went while b uses it")
	_, err = m.Destroy(b.ID(), true)
	require.NoError(t, err)
	_, err = os.Stat(home)
	assert.True(t, os.IsNotExist(err), "the home outlives its last session")
	// stdin files reach the isolated command.
	s := "from stdin"
	k := &splitSink{}
	j, err := c.Start(Command{Text: "cat", Stdin: &s}, k)
	require.NoError(t, err)
	<-j.Done()
	out, _ = k.get()
	assert.Equal(t, s, out)
}

// TestUIDNotReusedWhileItsProcessesLive: a uid under which any process
// still runs is not handed out, and releasing a lease ends what runs
// under its uid before the uid is free.
func TestUIDNotReusedWhileItsProcessesLive(t *testing.T) {
	if err := CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := uint32(2004000000 + os.Getpid()%50000*4)
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-test-reuse-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	p, err := newUIDPool(Isolation{FirstUID: first, LastUID: first + 1, HomeRoot: homes})
	require.NoError(t, err)

	// A process of uid first that no lease knows of (a survivor).
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "300"}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: first, Gid: first, Groups: []uint32{}}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); syscall.Wait4(pid, nil, 0, nil) })
	require.Eventually(t, func() bool { return uidsWithProcesses()[first] }, 5*time.Second, 10*time.Millisecond)

	l, err := p.acquire("")
	require.NoError(t, err)
	assert.Equal(t, first+1, l.uid, "a uid with a live process was handed out")
	_, err = p.acquire("")
	assert.ErrorIs(t, err, ErrLimit, "the busy uid must stay out of use")

	// The lease's uid gets a process too; release ends it and frees it.
	pid2, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "301"}, &syscall.ProcAttr{
		Sys: &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: l.uid, Gid: l.uid, Groups: []uint32{}}},
	})
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Wait4(pid2, nil, 0, nil) }) // killed by release
	l.release()
	assert.False(t, uidsWithProcesses()[l.uid], "release left a process of the uid")
	_, err = os.Stat(l.home)
	assert.True(t, os.IsNotExist(err), "release left the home")
	l2, err := p.acquire("")
	require.NoError(t, err)
	assert.Equal(t, first+1, l2.uid)
	l2.release()
}

// TestUIDRangeWithoutTheDaemon: a uid range holding the daemon's own uid
// is refused: a session with it could reach what the daemon can.
func TestUIDRangeWithoutTheDaemon(t *testing.T) {
	me := uint32(os.Geteuid())
	if me == 0 {
		_, err := newUIDPool(Isolation{FirstUID: 0, LastUID: 10, HomeRoot: t.TempDir()})
		require.Error(t, err, "root is never in a range")
		return
	}
	_, err := newUIDPool(Isolation{FirstUID: me - min(me, 1) + 1, LastUID: me + 1, HomeRoot: t.TempDir()})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "daemon's own uid")
}
