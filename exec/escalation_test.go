package exec_test

import (
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

// fakeJob is a command that ends when it gets one of the signals in
// endsOn (or on Kill, which ends its session), or by itself after runFor.
type fakeJob struct {
	endsOn map[unix.Signal]bool
	runFor time.Duration // > 0: ends by itself this long after its start
	start  time.Time

	mu      sync.Mutex
	actions []string // "SIGINT", "SIGKILL", "session killed"
	status  session.Status
	done    chan struct{}
	ended   bool
	onDone  func() // the Command's Done, set by fakeShell.Start
}

func newFakeJob(runFor time.Duration, endsOn ...unix.Signal) *fakeJob {
	j := &fakeJob{endsOn: map[unix.Signal]bool{}, start: time.Now(), done: make(chan struct{})}
	for _, s := range endsOn {
		j.endsOn[s] = true
	}
	j.runFor = runFor
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
	j.record(unix.SignalName(sig))
	if j.endsOn[sig] {
		j.end(session.Status{ExitCode: 128 + int(sig), Cwd: "/"})
	}
	return sig, nil
}

func (j *fakeJob) Kill() {
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

func (f fakeShell) Start(c session.Command, _ session.Sink) (trlexec.Job, error) {
	f.job.onDone = c.Done
	if f.job.runFor > 0 {
		time.AfterFunc(f.job.runFor, func() { f.job.end(session.Status{ExitCode: 0, Cwd: "/"}) })
	}
	return f.job, nil
}

// TestEscalation table-tests a timeout's steps against a fake job: SIGINT
// at the timeout, SIGKILL a grace later, the session killed after another,
// each step only while the command still runs; and how the Exit reads.
func TestEscalation(t *testing.T) {
	const timeout, grace = 20 * time.Millisecond, 20 * time.Millisecond
	cases := []struct {
		name     string
		job      func() *fakeJob
		timeout  time.Duration
		actions  []string
		timedOut bool
		exited   bool
		minTime  time.Duration
	}{
		{"ends before the timeout", func() *fakeJob { return newFakeJob(5 * time.Millisecond) }, timeout, nil, false, false, 0},
		{"no timeout", func() *fakeJob { return newFakeJob(30 * time.Millisecond) }, 0, nil, false, false, 30 * time.Millisecond},
		{"ends on SIGINT", func() *fakeJob { return newFakeJob(0, unix.SIGINT) }, timeout, []string{"SIGINT"}, true, false, timeout},
		{"ignores SIGINT", func() *fakeJob { return newFakeJob(0, unix.SIGKILL) }, timeout, []string{"SIGINT", "SIGKILL"}, true, false, timeout + grace},
		{"shell does not stop", func() *fakeJob { return newFakeJob(0) }, timeout, []string{"SIGINT", "SIGKILL", "session killed"}, true, true, timeout + 2*grace},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			job := tc.job()
			var onExit trlexec.Exit
			ran := make(chan struct{})
			e, err := trlexec.Start(fakeShell{job}, trlexec.Request{Command: "x", Timeout: tc.timeout}, trlexec.NewCollector(0),
				trlexec.Options{Grace: grace, OnExit: func(x trlexec.Exit) { onExit = x; close(ran) }})
			require.NoError(t, err)
			select {
			case <-e.Done():
			case <-time.After(5 * time.Second):
				t.Fatal("the execution did not end")
			}
			select {
			case <-ran: // OnExit ran before Done closed
			default:
				t.Fatal("Done closed before OnExit ran")
			}
			x := e.Exit()
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
			assert.GreaterOrEqual(t, x.Duration, tc.minTime)
		})
	}
}

// TestCancelMarks: Cancel signals the job and marks the exit canceled;
// a cancel after the end does nothing.
func TestCancelMarks(t *testing.T) {
	job := newFakeJob(0, unix.SIGTERM)
	e, err := trlexec.Start(fakeShell{job}, trlexec.Request{Command: "x"}, trlexec.NewCollector(0), trlexec.Options{})
	require.NoError(t, err)
	sent, err := e.Cancel(unix.SIGTERM)
	require.NoError(t, err)
	assert.Equal(t, unix.SIGTERM, sent)
	<-e.Done()
	assert.True(t, e.Exit().Canceled)
	assert.False(t, e.Exit().TimedOut)
	assert.Equal(t, 128+int(unix.SIGTERM), e.Exit().ExitCode)
	_, err = e.Cancel(unix.SIGINT)
	require.NoError(t, err)
	assert.Equal(t, []string{"SIGTERM"}, job.snapshot())
}
