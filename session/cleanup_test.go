package session

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/internal/leakcheck"
)

// These tests run the session manager as the daemon does, as child
// subreaper, so nothing in this package's tests may use os/exec.

// The reaper lives as long as the process, by design.
func TestMain(m *testing.M) { leakcheck.Main(m, "session.(*reaper).loop") }

type sink struct {
	mu  sync.Mutex
	out bytes.Buffer
}

func (s *sink) Output(_ Stream, p []byte) {
	s.mu.Lock()
	s.out.Write(p)
	s.mu.Unlock()
}

func newManager(t *testing.T) *Manager {
	m := NewManager(Options{Logger: testLogger(), Subreaper: true})
	t.Cleanup(m.CloseAll)
	return m
}

func runIn(t *testing.T, s *Session, cmd string) (string, Status) {
	t.Helper()
	k := &sink{}
	j, err := s.Start(Command{Text: cmd}, k)
	require.NoError(t, err)
	select {
	case <-j.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%q did not finish", cmd)
	}
	return k.out.String(), j.Status()
}

// procsMatching lists live processes whose command line contains needle.
func procsMatching(needle string) []string {
	var out []string
	for _, pid := range allPIDs() {
		cmd, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
		if err != nil || !strings.Contains(string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '})), needle) {
			continue
		}
		if st, ok := readStat(pid); ok && st.state != 'Z' {
			out = append(out, fmt.Sprintf("%d %s", pid, cmd))
		}
	}
	return out
}

// zombies lists our children that nobody reaped.
func zombies() []int {
	var out []int
	d, _ := os.ReadDir("/proc")
	for _, e := range d {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if st, ok := readStat(pid); ok && st.state == 'Z' && st.ppid == os.Getpid() {
			out = append(out, pid)
		}
	}
	return out
}

func TestDestroyEndsEveryProcess(t *testing.T) {
	t.Run("cgroups", func(t *testing.T) { testDestroyEndsEveryProcess(t, true) })
	// Where no cgroup can be made, the /proc scans must do it alone.
	noCgroups.Store(true)
	defer noCgroups.Store(false)
	t.Run("proc-scan", func(t *testing.T) { testDestroyEndsEveryProcess(t, false) })
}

func testDestroyEndsEveryProcess(t *testing.T, cgroups bool) {
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		t.Run(shell, func(t *testing.T) {
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			tag := numTag() // keeps runs apart
			escapes := []string{
				"sleep 3001" + tag + " &",
				"nohup sleep 3002" + tag + " >/dev/null 2>&1 &",
				"setsid sleep 3003" + tag + " &",
				"(sh -c 'sleep 3004" + tag + " &' &)",
				"sh -c 'trap \"\" HUP TERM INT; sleep 3005" + tag + "' &",
				"setsid sh -c 'trap \"\" HUP; (sleep 3006" + tag + "; true) &' &",
			}
			if cgroups && cgroupBase() != "" {
				// Leaves its session and drops the marker: only the
				// cgroup still holds it.
				escapes = append(escapes, "setsid env -i /bin/sleep 3007"+tag+" &")
			} else {
				t.Log("no writable cgroup v2 here: the escape that clears its environment is not tested")
			}
			for _, c := range escapes {
				if out, st := runIn(t, s, c); out != "" || st.ExitCode != 0 {
					t.Logf("%s: %d %q", c, st.ExitCode, out)
				}
			}
			require.Eventually(t, func() bool {
				for i := range escapes {
					if len(procsMatching(fmt.Sprintf("sleep 300%d%s", i+1, tag))) == 0 {
						return false
					}
				}
				return true
			}, 5*time.Second, 20*time.Millisecond, "all escapes started: %v", procsMatching(tag))

			start := time.Now()
			_, err = m.Destroy(s.ID(), true)
			require.NoError(t, err)
			assert.Less(t, time.Since(start), 3*time.Second)
			assert.Empty(t, procsMatching(tag), "survivors")
			require.Eventually(t, func() bool { return len(zombies()) == 0 }, 3*time.Second, 20*time.Millisecond, "zombies: %v", zombies())
		})
	}
}

func TestDestroyStopsForkFlood(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{})
	require.NoError(t, err)
	tag := "99" + numTag()
	j, err := s.Start(Command{Text: "while :; do sleep " + tag + " & done"}, &sink{})
	require.NoError(t, err)
	time.Sleep(time.Second)
	require.NotEmpty(t, procsMatching("sleep "+tag))
	_, err = m.Destroy(s.ID(), true)
	require.NoError(t, err)
	<-j.Done()
	assert.Empty(t, procsMatching("sleep "+tag), "survivors")
	require.Eventually(t, func() bool { return len(zombies()) == 0 }, 5*time.Second, 20*time.Millisecond)
}

// TestTimeoutKillReachesEscapes: killing a session (as a timeout's last
// step does) ends processes that left its terminal session too.
func TestKillEndsEscapes(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{})
	require.NoError(t, err)
	tag := numTag()
	runIn(t, s, "setsid sleep 4001"+tag+" &")
	require.Eventually(t, func() bool { return len(procsMatching(tag)) == 1 }, 5*time.Second, 20*time.Millisecond)
	s.Kill(nil)
	assert.Empty(t, procsMatching(tag))
	assert.Equal(t, StateExited, waitState(s, StateExited))
}

func waitState(s *Session, want State) State {
	for i := 0; i < 200; i++ {
		if st := s.Info().State; st == want {
			return st
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s.Info().State
}

func fdCount() int {
	d, _ := os.ReadDir("/proc/self/fd")
	return len(d)
}

// TestNoLeaksOverManyCycles: create, run, destroy a thousand times; fds,
// goroutines and children come back to where they started.
func TestNoLeaksOverManyCycles(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	m := newManager(t)
	// Warm up: the first session starts the reaper and the runtime's
	// pollers.
	s, err := m.Create(Config{})
	require.NoError(t, err)
	runIn(t, s, "true")
	_, err = m.Destroy(s.ID(), false)
	require.NoError(t, err)
	fds, goroutines := fdCount(), runtime.NumGoroutine()

	for i := 0; i < n; i++ {
		s, err := m.Create(Config{})
		require.NoError(t, err)
		out, st := runIn(t, s, "echo "+strconv.Itoa(i))
		require.Equal(t, strconv.Itoa(i)+"\n", out)
		require.Equal(t, 0, st.ExitCode)
		_, err = m.Destroy(s.ID(), false)
		require.NoError(t, err)
	}
	// Polled here, not with Eventually, whose own goroutine would count.
	ok := false
	for i := 0; i < 250 && !ok; i++ {
		ok = fdCount() <= fds && runtime.NumGoroutine() <= goroutines && len(zombies()) == 0
		time.Sleep(20 * time.Millisecond)
	}
	if !ok {
		t.Errorf("fds %d→%d, goroutines %d→%d, zombies %v", fds, fdCount(), goroutines, runtime.NumGoroutine(), zombies())
	}
	assert.Zero(t, m.Len())
}

// TestConcurrentClients: many goroutines creating, running and destroying
// sessions at once, and racing on shared ones, get correct errors and no
// deadlock.
func TestConcurrentClients(t *testing.T) {
	m := newManager(t)
	shared, err := m.Create(Config{Name: "shared"})
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 1000)
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := m.Create(Config{})
			if err != nil {
				errs <- err
				return
			}
			k := &sink{}
			j, err := s.Start(Command{Text: "echo hi"}, k)
			if err != nil {
				errs <- err
				return
			}
			<-j.Done()
			if k.out.String() != "hi\n" {
				errs <- fmt.Errorf("got %q", k.out.String())
			}
			// Racing on the shared session: either runs or is busy.
			if j, err := shared.Start(Command{Text: "true"}, &sink{}); err == nil {
				<-j.Done()
			} else if !isErr(err, ErrBusy) {
				errs <- err
			}
			if _, err := m.Destroy(s.ID(), false); err != nil {
				errs <- err
			}
			if _, err := m.Get(s.ID()); !isErr(err, ErrNotFound) {
				errs <- fmt.Errorf("after destroy: %v", err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// numTag is a fractional suffix that makes a sleep's command line unique
// and still a valid duration.
func numTag() string { return fmt.Sprintf(".%06d", time.Now().UnixNano()%1000000) }

func isErr(err, target error) bool { return errors.Is(err, target) }

func testLogger() zerolog.Logger {
	if os.Getenv("TRL_TEST_DEBUG") != "" {
		return zerolog.New(zerolog.NewConsoleWriter(func(w *zerolog.ConsoleWriter) { w.Out = os.Stderr; w.NoColor = true })).Level(zerolog.TraceLevel)
	}
	return zerolog.Nop()
}

// TestEscapeFromTheCgroup: a process that moves itself out of the
// session's cgroup is still found by its marks.
func TestEscapeFromTheCgroup(t *testing.T) {
	base := cgroupBase()
	if base == "" {
		t.Skip("no writable cgroup v2 hierarchy here")
	}
	m := newManager(t)
	s, err := m.Create(Config{})
	require.NoError(t, err)
	tag := numTag()
	runIn(t, s, "sh -c 'echo $$ > "+base+"/cgroup.procs; exec sleep 4002"+tag+"' &")
	require.Eventually(t, func() bool { return len(procsMatching("sleep 4002"+tag)) == 1 }, 5*time.Second, 20*time.Millisecond)
	_, err = m.Destroy(s.ID(), true)
	require.NoError(t, err)
	assert.Empty(t, procsMatching("sleep 4002"+tag), "survivors")
}

// TestChildCgroupsRemoved: a command that makes cgroups inside its
// session's group (and moves a process into one) does not make the
// group leak: destroy removes them children first (issue 10).
func TestChildCgroupsRemoved(t *testing.T) {
	if cgroupBase() == "" {
		t.Skip("no writable cgroup v2 hierarchy here")
	}
	m := newManager(t)
	s, err := m.Create(Config{})
	require.NoError(t, err)
	require.NotNil(t, s.cg)
	dir := s.cg.dir
	tag := numTag()
	out, st := runIn(t, s, "mkdir -p "+dir+"/a/b "+dir+"/c && sh -c 'echo $$ > "+dir+"/a/b/cgroup.procs; exec sleep 4003"+tag+"' & sleep 0.2; echo made")
	require.Equal(t, 0, st.ExitCode, out)
	require.Eventually(t, func() bool { return len(procsMatching("sleep 4003"+tag)) == 1 }, 5*time.Second, 20*time.Millisecond)
	_, err = m.Destroy(s.ID(), true)
	require.NoError(t, err)
	assert.Empty(t, procsMatching("sleep 4003"+tag), "survivors")
	_, err = os.Stat(dir)
	assert.True(t, os.IsNotExist(err), "the session's cgroup is left behind: %v", err)
}

// TestTreeSkipsOlderProcesses: a process older than the session's shell
// is not the session's even if it carries the marker (none the session
// started can be older), so a pass over /proc reads the environment only
// of processes younger than the shell.
func TestTreeSkipsOlderProcesses(t *testing.T) {
	id := "s-older-" + numTag()
	marked := []string{"TRL_SESSION_ID=" + id}
	old := startSleep(t, marked)
	time.Sleep(50 * time.Millisecond) // start times count 10 ms ticks
	shell := startSleep(t, nil)
	tr := newTree(shell, id, nil)
	t.Cleanup(tr.shellGone)
	require.NotZero(t, tr.born)
	time.Sleep(50 * time.Millisecond)
	young := startSleep(t, marked)
	require.Eventually(t, func() bool { return tr.owns(young) }, 5*time.Second, 10*time.Millisecond, "a younger marked process is the tree's")
	assert.False(t, tr.owns(old), "a process older than the shell is not the tree's")
	assert.Contains(t, tr.scan(), young)
	assert.NotContains(t, tr.scan(), old)
}

// TestTreeSkipsOtherSessions: a process in another live session's
// terminal session is that session's, even if it carries this session's
// marker, so a pass over /proc does not read the environment of other
// sessions' processes; one that left every terminal session (setsid) is
// still found by its marker.
func TestTreeSkipsOtherSessions(t *testing.T) {
	m := newManager(t)
	a, err := m.Create(Config{})
	require.NoError(t, err)
	b, err := m.Create(Config{})
	require.NoError(t, err)
	out, st := runIn(t, b, "TRL_SESSION_ID="+a.ID()+" sleep 30 & echo $!")
	require.Equal(t, 0, st.ExitCode)
	inB, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Kill(inB, syscall.SIGKILL) })
	assert.False(t, a.tree.owns(inB), "a process in b's terminal session is not a's, whatever its environment")
	assert.True(t, b.tree.owns(inB))
	assert.NotContains(t, a.tree.scan(), inB)

	// setsid -f returns at once; the pipe waits for the child's pid.
	out, st = runIn(t, a, "setsid -f sh -c 'echo $$; exec sleep 30 >/dev/null' | head -n 1")
	require.Equal(t, 0, st.ExitCode)
	left, err := strconv.Atoi(strings.TrimSpace(out))
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Kill(left, syscall.SIGKILL) })
	// Eventually: while it execs sleep, its environment may not be readable.
	assert.Eventually(t, func() bool { return a.tree.owns(left) }, 5*time.Second, 10*time.Millisecond, "a process of a's that left its terminal session is still a's")
	assert.False(t, b.tree.owns(left))
}

// TestTreeSeesProcessesInExec: a marked process found while it is still
// in its exec (its environment reads empty for a while) is the tree's.
// Read once, a third of processes just started were missed.
func TestTreeSeesProcessesInExec(t *testing.T) {
	tr := newTree(deadPID(t), "s-exec-"+numTag(), nil)
	t.Cleanup(tr.shellGone)
	for i := 0; i < 100; i++ {
		pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "30"}, &syscall.ProcAttr{Env: []string{string(bytes.TrimSuffix(tr.marker, []byte{0}))}})
		require.NoError(t, err)
		owned := tr.owns(pid)
		syscall.Kill(pid, syscall.SIGKILL)
		syscall.Wait4(pid, nil, 0, nil)
		require.True(t, owned, "process %d of 100, just started, was missed", i+1)
	}
}

// startSleep starts `sleep 30` with env, killed when the test ends. Not
// through os/exec: the manager's reaper may collect any child first, and
// an exec.Cmd's Wait then fails.
func startSleep(t *testing.T, env []string) int {
	t.Helper()
	pid, err := syscall.ForkExec("/bin/sleep", []string{"sleep", "30"}, &syscall.ProcAttr{Env: env})
	require.NoError(t, err)
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL); syscall.Wait4(pid, nil, 0, nil) })
	return pid
}

// deadPID returns a pid no process has now.
func deadPID(t *testing.T) int {
	t.Helper()
	for pid := 4_000_000; pid > 1; pid-- {
		if syscall.Kill(pid, 0) == syscall.ESRCH {
			return pid
		}
	}
	t.Fatal("every pid is in use")
	return 0
}

// TestCloseEndsAStuckLineWrite: a line written to a shell that does not
// read it (busy in a trap at its prompt), too long for the command
// socket's buffer, is ended by Close even when a process that escaped the
// session still holds the shell's end (no cgroup to find it): the write
// blocked for as long as that process lived, with the request unanswered.
func TestCloseEndsAStuckLineWrite(t *testing.T) {
	noCgroups.Store(true)
	defer noCgroups.Store(false)
	const escapee = "sleep 31.7"
	defer killCmdline(escapee)
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/bash"})
	require.NoError(t, err)
	run2(t, s, "trap 'env -i setsid -f "+escapee+"; sleep 30' USR1; (sleep .3; kill -USR1 $$) &")
	time.Sleep(800 * time.Millisecond) // the trap runs: the shell reads nothing
	started := make(chan error, 1)
	go func() {
		_, err := s.Start(Command{Text: "echo " + strings.Repeat("x", 1<<20)}, &splitSink{})
		started <- err
	}()
	time.Sleep(300 * time.Millisecond) // the write is stuck
	closed := make(chan struct{})
	go func() { s.Close(); close(closed) }()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the line's write still blocks after the session was closed")
	}
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
}

// killCmdline kills every process whose command line is cmdline.
func killCmdline(cmdline string) {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err == nil && strings.Join(strings.Split(strings.TrimRight(string(b), "\x00"), "\x00"), " ") == cmdline {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}
