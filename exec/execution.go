package exec

import (
	"strings"
	"sync"
	"time"

	"github.com/trl-project/trl/session"
	"golang.org/x/sys/unix"
)

// Job is one command running in a shell, as an Execution drives it:
// *session.Job is one, and the tests drive the escalation below with a
// fake in milliseconds.
type Job interface {
	// Done is closed when the command has ended and all its output has
	// reached its sink.
	Done() <-chan struct{}
	// Status is valid once Done is closed.
	Status() session.Status
	// Signal sends sig to the command while it runs (session.Job.Signal
	// says which signal is sent when); after its end it does nothing.
	Signal(sig unix.Signal) (unix.Signal, error)
	// Kill ends the whole session: the last resort for a shell that does
	// not stop its command.
	Kill()
	// Cause is why the session ended with the command, or nil.
	Cause() error
}

// Shell starts commands: InSession adapts a session.
type Shell interface {
	Start(c session.Command, sink session.Sink) (Job, error)
}

// InSession is the Shell of session s.
func InSession(s *session.Session) Shell { return sessionShell{s} }

type sessionShell struct{ s *session.Session }

func (sh sessionShell) Start(c session.Command, sink session.Sink) (Job, error) {
	j, err := sh.s.Start(c, sink)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Request is one command to run.
type Request struct {
	Command string
	Env     map[string]string
	Stdin   *string
	// Timeout ends the command (0: none).
	Timeout time.Duration
	// Owner is passed on to session.Command.Owner.
	Owner any
}

// Grace is how long a timed-out command gets after SIGINT before SIGKILL,
// and after SIGKILL before the whole session is killed, unless Options
// say otherwise.
const Grace = 2 * time.Second

// Options tune one Execution; the zero value is the default.
type Options struct {
	// Grace replaces the package's Grace (0: Grace).
	Grace time.Duration
	// OnExit, when set, runs once the command has ended, on the
	// Execution's own goroutine, before Done is closed: whoever waits on
	// Done sees what it did.
	OnExit func(Exit)
}

// Validate checks what the shell cannot carry.
func (r Request) Validate() error {
	if strings.ContainsRune(r.Command, 0) {
		return errorf(ErrInvalid, "command contains a NUL byte, which no shell can run")
	}
	if err := session.CheckEnv(r.Env); err != nil {
		return errorf(ErrInvalid, "%s", err)
	}
	if r.Timeout < 0 {
		return errorf(ErrInvalid, "timeout_s must not be negative")
	}
	return nil
}

// Exit is how an Execution ended.
type Exit struct {
	ExitCode int
	Duration time.Duration
	TimedOut bool
	Canceled bool
	Cwd      string
	// SessionExited is set when the shell ended with the command, and
	// Cause says why.
	SessionExited bool
	Cause         error
	// OutOfMemory is set when the OOM killer ended a process of the
	// session's memory-limited group while the command ran.
	OutOfMemory bool
}

// Execution is one running command. It owns it from start to end: its
// timeout and the escalation after it (one timer, stopped on every path),
// the record of how it ended, and OnExit. No goroutine waits for the end:
// the session calls back when the command has ended (session.Command's
// Done), on its reader, which records the exit and closes Done, so the
// caller waiting on Done is the only hand-off. Cancel may be called from
// anywhere.
type Execution struct {
	job     Job
	opts    Options
	start   time.Time
	started chan struct{} // closed once Start has set job and timer
	done    chan struct{}

	mu       sync.Mutex
	timer    *time.Timer // the timeout's next step; nil without a timeout
	step     int         // the next escalation step
	ended    bool
	timedOut bool
	canceled bool
	exit     Exit
}

// Start runs r in shell with its output going to sink.
func Start(shell Shell, r Request, sink session.Sink, opts Options) (*Execution, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Command) == "" {
		// A blank command line is a no-op for a shell, with status 0; so
		// it is here (SWE-ReX's suite expects it).
		r.Command = ":"
	}
	if opts.Grace <= 0 {
		opts.Grace = Grace
	}
	e := &Execution{opts: opts, start: time.Now(), started: make(chan struct{}), done: make(chan struct{})}
	job, err := shell.Start(session.Command{Text: r.Command, Env: r.Env, Stdin: r.Stdin, Owner: r.Owner, Done: e.jobDone}, sink)
	if err != nil {
		return nil, err
	}
	e.job = job
	if r.Timeout > 0 {
		e.mu.Lock()
		e.timer = time.AfterFunc(r.Timeout, e.escalate)
		e.mu.Unlock()
	}
	close(e.started)
	return e, nil
}

// escalate takes the timeout's next step: SIGINT to the command's process
// group at the timeout, SIGKILL a Grace later, and after another Grace the
// session is killed (a shell that ignores SIGINT while running a builtin
// loop cannot be stopped any other way). Each step acts on this command
// only: if it has just ended, the signal goes nowhere rather than to the
// next command.
func (e *Execution) escalate() {
	e.mu.Lock()
	if e.ended {
		e.mu.Unlock()
		return
	}
	step := e.step
	e.step++
	if step == 0 {
		// Marked before the signal, as in Cancel: the command may end
		// before Signal returns.
		e.timedOut = true
	}
	if step < 2 {
		e.timer.Reset(e.opts.Grace)
	}
	e.mu.Unlock()
	switch step {
	case 0:
		if _, err := e.job.Signal(unix.SIGINT); err != nil {
			e.mu.Lock()
			e.timedOut = false
			e.mu.Unlock()
		}
	case 1:
		e.job.Signal(unix.SIGKILL)
	default:
		e.job.Kill()
	}
}

// jobDone is the session's call once the command has ended and its output
// is delivered: the timer stops, the exit is recorded, OnExit runs, and
// Done closes.
func (e *Execution) jobDone() {
	<-e.started // the command may end before Start has returned
	e.mu.Lock()
	e.ended = true
	if e.timer != nil {
		e.timer.Stop()
	}
	e.mu.Unlock()
	e.finish()
	close(e.done)
}

func (e *Execution) finish() {
	st := e.job.Status()
	e.mu.Lock()
	e.exit = Exit{
		ExitCode:      st.ExitCode,
		Duration:      time.Since(e.start),
		TimedOut:      e.timedOut,
		Canceled:      e.canceled,
		Cwd:           st.Cwd,
		SessionExited: st.Exited,
		Cause:         e.job.Cause(),
		OutOfMemory:   st.OOMKilled,
	}
	x := e.exit
	e.mu.Unlock()
	if e.opts.OnExit != nil {
		e.opts.OnExit(x)
	}
}

// Cancel sends sig to the running command and marks it canceled. It
// returns the signal actually sent (see session.Signal).
func (e *Execution) Cancel(sig unix.Signal) (unix.Signal, error) {
	// Marked before the signal is sent: the command may end (and finish
	// read the flag) before Signal returns.
	e.mu.Lock()
	was := e.canceled
	e.canceled = true
	e.mu.Unlock()
	sent, err := e.job.Signal(sig)
	if err != nil {
		e.mu.Lock()
		e.canceled = was
		e.mu.Unlock()
	}
	return sent, err
}

// Done is closed when the command has ended and its output is delivered.
func (e *Execution) Done() <-chan struct{} { return e.done }

// Exit is valid once Done is closed.
func (e *Execution) Exit() Exit {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.exit
}
