package exec

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/trl-project/trl/session"
	"golang.org/x/sys/unix"
)

// Shell is what an Execution needs of a session.
type Shell interface {
	Start(c session.Command, sink session.Sink) (*session.Job, error)
	// Signal and Kill act only while job is the one running.
	Signal(job *session.Job, sig unix.Signal) (unix.Signal, error)
	Kill(job *session.Job)
}

// Errors the method table maps to wire codes.
var (
	ErrInvalid = errors.New("invalid command parameters")
)

// Request is one command to run.
type Request struct {
	Command string
	Env     map[string]string
	Stdin   *string
	// Timeout ends the command (0: none).
	Timeout time.Duration
}

// Grace is how long a timed-out command gets after SIGINT before SIGKILL,
// and after SIGKILL before the whole session is killed.
const Grace = 2 * time.Second

// Validate checks what the shell cannot carry.
func (r Request) Validate() error {
	if strings.ContainsRune(r.Command, 0) {
		return fmt.Errorf("%w: command contains a NUL byte, which no shell can run", ErrInvalid)
	}
	if err := session.CheckEnv(r.Env); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalid, strings.TrimPrefix(err.Error(), session.ErrInvalid.Error()+": "))
	}
	if r.Timeout < 0 {
		return fmt.Errorf("%w: timeout_s must not be negative", ErrInvalid)
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
	// SessionExited is set when the shell ended with the command.
	SessionExited bool
}

// Execution is one running command. One goroutine (watch) owns its
// timeout; Cancel may be called from anywhere.
type Execution struct {
	shell Shell
	job   *session.Job
	start time.Time
	done  chan struct{}

	mu       sync.Mutex
	timedOut bool
	canceled bool
	exit     Exit
}

// Start runs r in shell with its output going to sink.
func Start(shell Shell, r Request, sink session.Sink) (*Execution, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(r.Command) == "" {
		// A blank command line is a no-op for a shell, with status 0; so
		// it is here (SWE-ReX's suite expects it).
		r.Command = ":"
	}
	e := &Execution{shell: shell, start: time.Now(), done: make(chan struct{})}
	job, err := shell.Start(session.Command{Text: r.Command, Env: r.Env, Stdin: r.Stdin}, sink)
	if err != nil {
		return nil, err
	}
	e.job = job
	go e.watch(r.Timeout)
	return e, nil
}

// watch owns the command's deadline: at the timeout it sends SIGINT to the
// command's process group, after Grace SIGKILL, and after another Grace it
// kills the session (a shell that ignores SIGINT while running a builtin
// loop cannot be stopped any other way).
func (e *Execution) watch(timeout time.Duration) {
	defer close(e.done)
	if timeout > 0 {
		// Each step acts on this command only: if it has just ended, the
		// signal goes nowhere rather than to the next command.
		steps := []func(){
			func() {
				// Marked first, as in Cancel: the command may end before
				// Signal returns.
				e.mu.Lock()
				e.timedOut = true
				e.mu.Unlock()
				if _, err := e.shell.Signal(e.job, unix.SIGINT); err != nil {
					e.mu.Lock()
					e.timedOut = false
					e.mu.Unlock()
				}
			},
			func() { e.shell.Signal(e.job, unix.SIGKILL) },
			func() { e.shell.Kill(e.job) },
		}
		wait := timeout
		for _, step := range steps {
			t := time.NewTimer(wait)
			select {
			case <-e.job.Done():
				t.Stop()
				e.finish()
				return
			case <-t.C:
				step()
			}
			wait = Grace
		}
	}
	<-e.job.Done()
	e.finish()
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
	}
	e.mu.Unlock()
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
	sent, err := e.shell.Signal(e.job, sig)
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
