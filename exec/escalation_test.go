package exec_test

import (
	"bytes"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	trlexec "github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/session"
)

// fakeJob is a command line that ends when it gets one of the signals in
// endsOn (or on Kill, which ends its session), or when the test ends it.
type fakeJob struct {
	endsOn map[unix.Signal]bool
	// during, when set, is called as each signal is sent and as the
	// session is killed, with what is done.
	during func(what string)

	mu      sync.Mutex
	actions []string // "SIGINT", "SIGKILL", "session killed"
	status  session.Status
	done    chan struct{}
	ended   bool
	onDone  func() // the Command's Done, set by fakeShell.Start
}

func newFakeJob(endsOn ...unix.Signal) *fakeJob {
	j := &fakeJob{endsOn: map[unix.Signal]bool{}, done: make(chan struct{})}
	for _, s := range endsOn {
		j.endsOn[s] = true
	}
	return j
}

func (j *fakeJob) end(st session.Status) {
	j.mu.Lock()
	if j.ended {
		j.mu.Unlock()
		return
	}
	j.ended, j.status = true, st
	close(j.done)
	onDone := j.onDone
	j.mu.Unlock()
	onDone() // as a session does: after Done closes, with no lock held
}

func (j *fakeJob) record(a string) {
	j.mu.Lock()
	j.actions = append(j.actions, a)
	j.mu.Unlock()
}

func (j *fakeJob) Done() <-chan struct{}  { return j.done }
func (j *fakeJob) Status() session.Status { return j.status }

func (j *fakeJob) Signal(sig unix.Signal) (unix.Signal, error) {
	j.mu.Lock()
	ended := j.ended
	j.mu.Unlock()
	if ended {
		return sig, nil // after its end a signal goes nowhere
	}
	if j.during != nil {
		j.during(unix.SignalName(sig))
	}
	j.record(unix.SignalName(sig))
	if j.endsOn[sig] {
		j.end(session.Status{ExitCode: 128 + int(sig), Cwd: "/"})
	}
	return sig, nil
}

func (j *fakeJob) Kill() {
	if j.during != nil {
		j.during("session killed")
	}
	j.record("session killed")
	j.end(session.Status{ExitCode: 137, Exited: true})
}

var errKilled = errors.New("timeout escalation: killed")

func (j *fakeJob) Cause() error {
	if j.status.Exited {
		return errKilled
	}
	return nil
}

func (j *fakeJob) snapshot() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return append([]string(nil), j.actions...)
}

// fakeShell starts one prepared job.
type fakeShell struct{ job *fakeJob }

func (f fakeShell) Ended() <-chan struct{} { return nil }
func (f fakeShell) EndCause() error        { return nil }
func (f fakeShell) Cwd() string            { return "/fake" }

func (f fakeShell) Start(c session.Command, _ session.Sink) (trlexec.Line, error) {
	f.job.onDone = c.Done
	return f.job, nil
}

// fakeClock is a Clock whose timers fire only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c      *fakeClock
	ch     chan time.Time
	at     time.Time
	active bool
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_700_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) trlexec.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1), at: c.now.Add(d), active: true}
	c.timers = append(c.timers, t)
	return t
}

// advance moves the clock on by d and fires the timers due.
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for _, t := range c.timers {
		if t.active && !t.at.After(c.now) {
			t.active = false
			select {
			case t.ch <- c.now:
			default:
			}
		}
	}
}

// armed is how many timers wait to fire.
func (c *fakeClock) armed() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if t.active {
			n++
		}
	}
	return n
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.at, t.active = t.c.now.Add(d), true
}

func (t *fakeTimer) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.active = false
}

func start(t *testing.T, job *fakeJob, timeout time.Duration, opts trlexec.Options) (*trlexec.Job, *trlexec.Registry) {
	t.Helper()
	reg := trlexec.NewRegistry(trlexec.RegistryOptions{})
	j, err := trlexec.Start(fakeShell{job}, reg, trlexec.Request{ID: "x-1", SessionID: "s-1", Command: "x", Timeout: timeout, Output: trlexec.NewCollector(0)}, opts)
	require.NoError(t, err)
	return j, reg
}

// TestEscalation table-tests a timeout's steps against a fake job on a
// fake clock (no real sleeps): SIGINT at the timeout, SIGKILL a grace
// later, the session killed after another, each step only while the
// command still runs; and how the Exit reads.
func TestEscalation(t *testing.T) {
	const timeout, grace = 20 * time.Millisecond, 20 * time.Millisecond
	cases := []struct {
		name     string
		job      func() *fakeJob
		timeout  time.Duration
		endsBy   time.Duration // > 0: the command ends by itself then
		actions  []string
		timedOut bool
		exited   bool
		duration time.Duration
	}{
		{"ends before the timeout", func() *fakeJob { return newFakeJob() }, timeout, 5 * time.Millisecond, nil, false, false, 5 * time.Millisecond},
		{"no timeout", func() *fakeJob { return newFakeJob() }, 0, 30 * time.Millisecond, nil, false, false, 30 * time.Millisecond},
		{"ends on SIGINT", func() *fakeJob { return newFakeJob(unix.SIGINT) }, timeout, 0, []string{"SIGINT"}, true, false, timeout},
		{"ignores SIGINT", func() *fakeJob { return newFakeJob(unix.SIGKILL) }, timeout, 0, []string{"SIGINT", "SIGKILL"}, true, false, timeout + grace},
		{"shell does not stop", func() *fakeJob { return newFakeJob() }, timeout, 0, []string{"SIGINT", "SIGKILL", "session killed"}, true, true, timeout + 2*grace},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job, clock := tc.job(), newFakeClock()
			var onExit trlexec.Exit
			ran := make(chan struct{})
			e, _ := start(t, job, tc.timeout, trlexec.Options{Grace: grace, Clock: clock,
				OnExit: func(_ *trlexec.Job, x trlexec.Exit) { onExit = x; close(ran) }})
			if tc.endsBy > 0 {
				clock.advance(tc.endsBy)
				job.end(session.Status{ExitCode: 0, Cwd: "/"})
			}
			// Each step: move the clock to the next deadline, then wait
			// for the supervisor to act on it (a signal recorded, and the
			// next deadline armed, or the end).
			for step := time.Duration(0); ; {
				select {
				case <-e.Done():
				default:
					next := timeout
					if step > 0 {
						next = grace
					}
					n := len(job.snapshot())
					require.Eventually(t, func() bool { return clock.armed() > 0 || isDone(e) }, 5*time.Second, time.Millisecond, "the next step is armed")
					if isDone(e) {
						continue
					}
					clock.advance(next)
					step += next
					require.Eventually(t, func() bool { return isDone(e) || len(job.snapshot()) > n }, 5*time.Second, time.Millisecond, "the supervisor acts at the deadline")
					continue
				}
				break
			}
			select {
			case <-ran: // OnExit ran before Done closed
			default:
				t.Fatal("Done closed before OnExit ran")
			}
			x, ended := e.Exit()
			require.True(t, ended)
			assert.Equal(t, x, onExit, "OnExit gets the Exit")
			assert.Equal(t, tc.actions, job.snapshot())
			assert.Equal(t, tc.timedOut, x.TimedOut)
			assert.Equal(t, tc.exited, x.SessionExited)
			assert.False(t, x.Canceled)
			if tc.exited {
				assert.ErrorIs(t, x.Cause, errKilled)
			} else {
				assert.NoError(t, x.Cause)
			}
			assert.Equal(t, tc.duration, x.Duration, "the duration is read on the job's clock")
			// The supervisor stops its timer as it returns, which may be
			// just after Done closes.
			assert.Eventually(t, func() bool { return clock.armed() == 0 }, 5*time.Second, time.Millisecond, "no timer is left armed after the end")
		})
	}
}

func isDone(j *trlexec.Job) bool {
	select {
	case <-j.Done():
		return true
	default:
		return false
	}
}

// TestCancelMarks: Cancel signals the job through its supervisor and
// marks the exit canceled; a cancel after the end sends nothing.
func TestCancelMarks(t *testing.T) {
	job := newFakeJob(unix.SIGTERM)
	e, reg := start(t, job, 0, trlexec.Options{Clock: newFakeClock()})
	assert.Same(t, e, reg.Running("s-1"), "the registry knows what the session runs")
	sent, err := e.Cancel(unix.SIGTERM)
	require.NoError(t, err)
	assert.Equal(t, unix.SIGTERM, sent)
	<-e.Done()
	x, _ := e.Exit()
	assert.True(t, x.Canceled)
	assert.False(t, x.TimedOut)
	assert.Equal(t, 128+int(unix.SIGTERM), x.ExitCode)
	_, err = e.Cancel(unix.SIGINT)
	assert.ErrorIs(t, err, session.ErrNoForeground)
	assert.Equal(t, []string{"SIGTERM"}, job.snapshot())
	assert.Nil(t, reg.Running("s-1"), "an ended command no longer runs in its session")
	got, err := reg.Get("x-1")
	require.NoError(t, err)
	assert.Same(t, e, got, "an ended command stays addressable")
}

// TestEndedAfterDone: Ended (the audit line's hook) runs once Done has
// closed, on the goroutine that ended the command, with the same Exit as
// OnExit: an answer waiting on Done does not wait for it.
func TestEndedAfterDone(t *testing.T) {
	job := newFakeJob()
	var order []string
	var ended trlexec.Exit
	e, _ := start(t, job, 0, trlexec.Options{Clock: newFakeClock(),
		OnExit: func(j *trlexec.Job, _ trlexec.Exit) {
			if isDone(j) {
				order = append(order, "OnExit after Done")
			} else {
				order = append(order, "OnExit before Done")
			}
		},
		Ended: func(j *trlexec.Job, x trlexec.Exit) {
			if isDone(j) {
				order = append(order, "Ended after Done")
			} else {
				order = append(order, "Ended before Done")
			}
			ended = x
		}})
	job.end(session.Status{ExitCode: 3, Cwd: "/"}) // returns once the hooks have run
	assert.Equal(t, []string{"OnExit before Done", "Ended after Done"}, order)
	x, ok := e.Exit()
	require.True(t, ok)
	assert.Equal(t, x, ended, "Ended gets the Exit")
	assert.Equal(t, 3, ended.ExitCode)
}

// TestWaitCoversEnded: the registry's Wait (what a stopping daemon waits
// for) returns only once Ended has run: no audit line is lost at shutdown.
func TestWaitCoversEnded(t *testing.T) {
	job := newFakeJob()
	release := make(chan struct{})
	_, reg := start(t, job, 0, trlexec.Options{Clock: newFakeClock(),
		Ended: func(*trlexec.Job, trlexec.Exit) { <-release }})
	go job.end(session.Status{Cwd: "/"})
	waited := make(chan struct{})
	go func() { reg.Wait(); close(waited) }()
	select {
	case <-waited:
		t.Fatal("Wait returned before Ended ran")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		t.Fatal("Wait did not return after Ended ran")
	}
}

// TestCancelRacesEnd: cancels from many goroutines while the command ends
// by itself never block, never signal after the end, and leave no
// supervisor behind (leakcheck).
func TestCancelRacesEnd(t *testing.T) {
	for i := 0; i < 50; i++ {
		job := newFakeJob()
		e, _ := start(t, job, time.Hour, trlexec.Options{Clock: newFakeClock()})
		var wg sync.WaitGroup
		for k := 0; k < 4; k++ {
			wg.Add(1)
			go func() { defer wg.Done(); _, _ = e.Cancel(unix.SIGINT) }()
		}
		job.end(session.Status{Cwd: "/"})
		wg.Wait()
		<-e.Done()
	}
}

// TestFinishedExpire: finished commands stay addressable for Retain and at
// most MaxFinished of them; running ones are never dropped.
func TestFinishedExpire(t *testing.T) {
	now := time.Now()
	reg := trlexec.NewRegistry(trlexec.RegistryOptions{Retain: 200 * time.Millisecond, MaxFinished: 2, Now: func() time.Time { return now }})
	startIn := func(id, sid string) (*trlexec.Job, *fakeJob) {
		job := newFakeJob()
		j, err := trlexec.Start(fakeShell{job}, reg, trlexec.Request{ID: id, SessionID: sid, Command: "x", Output: trlexec.NewStream(id, sid, 0)}, trlexec.Options{})
		require.NoError(t, err)
		return j, job
	}
	running, _ := startIn("st-run", "s-0")
	for i, id := range []string{"st-1", "st-2", "st-3"} {
		j, job := startIn(id, "s-"+string(rune('1'+i)))
		job.end(session.Status{})
		<-j.Done()
	}
	_, err := reg.Get("st-1")
	assert.ErrorIs(t, err, trlexec.ErrStreamNotFound, "the oldest of 3 finished commands is dropped when 2 are kept")
	for _, id := range []string{"st-2", "st-3"} {
		_, err := reg.Stream(id)
		require.NoError(t, err)
	}
	now = now.Add(199 * time.Millisecond)
	for _, id := range []string{"st-2", "st-3"} {
		_, err := reg.Get(id)
		require.NoError(t, err, "still kept just before Retain")
	}
	now = now.Add(2 * time.Millisecond)
	for _, id := range []string{"st-2", "st-3"} {
		_, err := reg.Get(id)
		assert.ErrorIs(t, err, trlexec.ErrStreamNotFound, "expired after Retain")
	}
	_, err = reg.Get(running.ID())
	assert.NoError(t, err, "a running command is never expired")
}

// TestNoJobLockWhileSignalling: the supervisor sends every signal — a
// cancel's, the timeout's SIGINT and SIGKILL — and kills the session
// holding no lock of the Job: at each of those moments the Job answers
// Marks and Exit, which take its lock, at once.
func TestNoJobLockWhileSignalling(t *testing.T) {
	const timeout, grace = 20 * time.Millisecond, 20 * time.Millisecond
	job, clock := newFakeJob(), newFakeClock()
	var mu sync.Mutex
	var blocked []string
	jobs := make(chan *trlexec.Job, 1)
	job.during = func(what string) {
		e := <-jobs
		jobs <- e
		answered := make(chan struct{})
		go func() { e.Marks(); e.Exit(); close(answered) }()
		select {
		case <-answered:
		case <-time.After(2 * time.Second):
			mu.Lock()
			blocked = append(blocked, what)
			mu.Unlock()
		}
	}
	e, _ := start(t, job, timeout, trlexec.Options{Grace: grace, Clock: clock})
	jobs <- e
	_, err := e.Cancel(unix.SIGTERM) // the fake job does not end on it
	require.NoError(t, err)
	for _, d := range []time.Duration{timeout, grace, grace} {
		n := len(job.snapshot())
		require.Eventually(t, func() bool { return clock.armed() > 0 }, 5*time.Second, time.Millisecond, "the next step is armed")
		clock.advance(d)
		require.Eventually(t, func() bool { return len(job.snapshot()) > n }, 5*time.Second, time.Millisecond, "the supervisor acts at the deadline")
	}
	<-e.Done()
	assert.Equal(t, []string{"SIGTERM", "SIGINT", "SIGKILL", "session killed"}, job.snapshot())
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, blocked, "the Job's lock was held while these were sent")
}

// TestFinishedExpireUnasked: on the real clock, finished commands expire
// after Retain though nothing asks the registry again (they were kept
// until the next command: 984 MB after a burst of 50 outputs of 20 MB).
func TestFinishedExpireUnasked(t *testing.T) {
	reg := trlexec.NewRegistry(trlexec.RegistryOptions{Retain: 100 * time.Millisecond})
	job := newFakeJob()
	j, err := trlexec.Start(fakeShell{job}, reg, trlexec.Request{ID: "st-1", SessionID: "s-1", Command: "x", Output: trlexec.NewStream("st-1", "s-1", 0)}, trlexec.Options{})
	require.NoError(t, err)
	job.end(session.Status{})
	<-j.Done()
	addressable := func() int { _, n, _ := reg.Counts(); return n }
	require.Equal(t, 1, addressable(), "retained")
	assert.Eventually(t, func() bool { return addressable() == 0 }, 5*time.Second, 10*time.Millisecond, "expired with nothing asking")
}

// TestFinishedBoundedByBytes: finished commands' output kept in memory is
// bounded in bytes, not only in number: the oldest are forgotten once
// together they hold more than MaxRetainedBytes (256 retained streams of
// 8 MiB held 2.9 GB). The newest is kept whatever its size.
func TestFinishedBoundedByBytes(t *testing.T) {
	reg := trlexec.NewRegistry(trlexec.RegistryOptions{MaxRetainedBytes: 10 << 10, Now: time.Now})
	finish := func(id string, out []byte, store trlexec.Store) {
		job := newFakeJob()
		j, err := trlexec.Start(fakeShell{job}, reg, trlexec.Request{ID: id, SessionID: "s-" + id, Command: "x", Output: store}, trlexec.Options{})
		require.NoError(t, err)
		store.Output(session.Stdout, out)
		job.end(session.Status{})
		<-j.Done()
	}
	kept := func(id string) bool { _, err := reg.Get(id); return err == nil }
	four := bytes.Repeat([]byte("x"), 4<<10)
	finish("st-1", four, trlexec.NewStream("st-1", "s-st-1", 0))
	finish("x-2", four, trlexec.NewCollector(0))
	assert.True(t, kept("st-1") && kept("x-2"), "8 KiB of 10 KiB")
	finish("st-3", four, trlexec.NewStream("st-3", "s-st-3", 0))
	assert.False(t, kept("st-1"), "12 KiB: the oldest goes")
	assert.True(t, kept("x-2") && kept("st-3"))
	finish("st-4", bytes.Repeat([]byte("y"), 20<<10), trlexec.NewStream("st-4", "s-st-4", 0))
	assert.False(t, kept("x-2") || kept("st-3"), "the newest alone is over the bound")
	assert.True(t, kept("st-4"), "the newest is kept whatever its size")
}
