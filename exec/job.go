package exec

import (
	"errors"
	goruntime "runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trl-project/trl/session"
	"golang.org/x/sys/unix"
)

// A command's whole life is one Job, from the request that starts it to
// the last exec.read of its retained output:
//
//	Start ── the line is written to the shell (Shell.Start); the Job is
//	   │     registered; output flows session → Watch → Collector|Stream
//	   │
//	   ├── Cancel / the deadline ──► the supervisor goroutine, the only
//	   │     one that decides the command's signals: SIGINT (or the asked
//	   │     signal), and, after a timeout, SIGKILL a Grace later, then the
//	   │     session (the session delivers each, and looks again a moment
//	   │     later on its follower goroutine: session/signal.go)
//	   │
//	   └── the shell's prompt record ──► lineDone (on the session's
//	         reader): the exit is recorded, the supervisor stops, OnExit
//	         runs (audit, metrics), the Job moves to the retained ones,
//	         Done closes
//
// Every change of a Job's state goes through update, under one lock that
// is never held while signalling, sleeping or doing I/O.

// Line is the session's side of one command line: the shell running it.
// *session.Job is one; the tests drive the escalation with a fake.
type Line interface {
	// Done is closed when the command has ended and all its output has
	// reached its sink.
	Done() <-chan struct{}
	// Status is valid once Done is closed.
	Status() session.Status
	// Signal sends sig to the command while it runs (session.Signal says
	// which signal is sent when); after its end it does nothing.
	Signal(sig unix.Signal) (unix.Signal, error)
	// Kill ends the whole session: the last resort for a shell that does
	// not stop its command.
	Kill()
	// Cause is why the session ended with the command, or nil.
	Cause() error
}

// Gate holds a command until a person decides (SPEC §16): the command's
// line is not written to the shell before Decided closes with Approved.
type Gate interface {
	// Decided is closed once the decision is made (or has timed out).
	Decided() <-chan struct{}
	// Approved reports the decision; valid once Decided is closed.
	Approved() bool
}

// Shell starts command lines: InSession adapts a session.
type Shell interface {
	Start(c session.Command, sink session.Sink) (Line, error)
	// Ended closes when the shell's session has ended: a command held
	// for its approval then ends without running.
	Ended() <-chan struct{}
	// EndCause is why the session ended, nil while it lives.
	EndCause() error
	// Cwd is the shell's working directory as last reported: a command
	// that never ran ends there.
	Cwd() string
}

// InSession is the Shell of session s.
func InSession(s *session.Session) Shell { return sessionShell{s} }

type sessionShell struct{ s *session.Session }

func (sh sessionShell) Ended() <-chan struct{} { return sh.s.Ended() }
func (sh sessionShell) EndCause() error        { return sh.s.EndCause() }
func (sh sessionShell) Cwd() string            { return sh.s.Cwd() }

func (sh sessionShell) Start(c session.Command, sink session.Sink) (Line, error) {
	j, err := sh.s.Start(c, sink)
	if err != nil {
		return nil, err
	}
	return j, nil
}

// Request is one command to run.
type Request struct {
	// ID is the command's exec_id (a stream's id is one too).
	ID      string
	Command string
	Env     map[string]string
	Stdin   *string
	// Timeout ends the command (0: none).
	Timeout time.Duration
	// Method and Actor say who started it how, for exec.list and audit.
	Method, Actor string
	// Session is the session the command runs in (nil in tests that
	// drive a fake Shell); SessionID names it.
	Session   *session.Session
	SessionID string
	// Output keeps the output: a Collector (exec.run) or a Stream
	// (exec.stream).
	Output Store
	// MaxOutput is the output budget of one status (exec.input may
	// change it with SetMax).
	MaxOutput int
	// Gate, when set, holds the command until a person approves it; a
	// denial ends it without running.
	Gate Gate
}

// Validate checks what the shell cannot carry.
func (r Request) Validate() error {
	if strings.ContainsRune(r.Command, 0) {
		return errorf(ErrInvalid, "command contains a NUL byte, which no shell can run")
	}
	if err := session.CheckCommandEnv(r.Env); err != nil {
		return errorf(ErrInvalid, "%s", err)
	}
	if r.Timeout < 0 {
		return errorf(ErrInvalid, "timeout_s must not be negative")
	}
	return nil
}

// Store is where a Job's output is kept: a Collector or a Stream.
type Store interface {
	session.Sink
	// Since returns stream s's output from offset, cut to at most limit
	// bytes.
	Since(s session.Stream, offset int64, limit int) Slice
	// finish is called once, at the end, before Done closes.
	finish(x Exit)
	// retained is the memory the output holds, in bytes.
	retained() int
}

// Slice is a part of one stream's output, as a status carries it.
type Slice struct {
	Data []byte
	// Start is the offset of Data's first byte in the stream; End is
	// where the next status goes on from: the stream's total so far for
	// a Collector (what Data leaves out is left out of every status), the
	// end of Data for a Stream (the rest comes next).
	Start, End int64
	// Cut says that output from the offset asked for to End is not all
	// in Data: before Start, in Gap, or after Data (not yet read).
	Cut bool
	// Gap, when Bytes is not 0, is the one run of output left out inside
	// Data: before Data[At], from the stream's Offset on.
	Gap Gap
}

// Gap is a run of output a Slice leaves out.
type Gap struct {
	At     int
	Offset int64
	Bytes  int64
}

// Grace is how long a timed-out command gets after SIGINT before SIGKILL,
// and after SIGKILL before the whole session is killed, unless Options
// say otherwise.
const Grace = 2 * time.Second

// Options tune how Jobs run; the zero value is the default.
type Options struct {
	// Grace replaces the package's Grace (0: Grace).
	Grace time.Duration
	// Clock is the time escalation is measured by (nil: the real one).
	Clock Clock
	// OnExit, when set, runs once a command has ended, before its Done
	// is closed: whoever waits on Done sees what it did.
	OnExit func(*Job, Exit)
	// Ended, when set, runs after Done has closed and whoever waited on
	// it has had the chance to run (see end): work an answer need not
	// wait for, such as the audit line.
	Ended func(*Job, Exit)
}

// Exit is how a Job ended.
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
	// Denied is set when its Gate was not approved; NotRun when its
	// line never reached the shell (denied, cancelled while it waited,
	// or the shell could not take it).
	Denied, NotRun bool
	// OutOfMemory is set when the OOM killer ended a process of the
	// session's memory-limited group while the command ran.
	OutOfMemory bool
}

// Job is one command: its id and text, the session line running it, its
// output, its deadline and escalation, the input typed into it, how it
// ended, and how far the statuses returned so far have carried its
// output. It is created by Start and lives in a Registry until it is
// dropped from the retained ones.
type Job struct {
	// ending: Ending.
	ending atomic.Bool

	id, text, method, actor string
	sessionID               string
	sess                    *session.Session
	started                 time.Time
	out                     Store
	watch                   *Watch
	opts                    Options
	timeout                 time.Duration
	reg                     *Registry
	shell                   Shell
	cmd                     session.Command
	gate                    Gate

	line  Line
	ready chan struct{} // closed once line is set (the line may end before)
	// gated is closed once the command has passed its Gate: its line was
	// started, or it ended without running. Closed from the start when
	// there is no Gate.
	gated chan struct{}
	done  chan struct{} // closed once the exit is recorded and OnExit has run

	// requests reach the supervisor, the one goroutine that signals
	// the command; it runs while the command runs and has a deadline or
	// was asked to signal.
	requests chan signalRequest
	stop     chan struct{} // closed at the end: the supervisor returns

	mu         sync.Mutex
	supervised bool // the supervisor runs
	st         state
}

// state is what changes during a Job's life; only update changes it.
type state struct {
	timedOut, canceled bool
	exit               *Exit
	ran                time.Time // when the line was written to the shell
	sent               [2]int64  // output offsets the statuses have carried
	yielded            bool      // a status returned before the end
	reported           bool      // a status with the exit was returned
	inputAt            time.Time
	max                int
}

// update changes the Job's state under its lock and returns what f
// returns: the one place state changes, never holding the lock across a
// signal, a sleep or I/O.
func update[T any](j *Job, f func(st *state) T) T {
	j.mu.Lock()
	defer j.mu.Unlock()
	return f(&j.st)
}

type signalRequest struct {
	sig   unix.Signal
	reply chan signalReply
}

type signalReply struct {
	sent unix.Signal
	err  error
}

// Start runs r in shell, registered in reg.
func Start(shell Shell, reg *Registry, r Request, opts Options) (*Job, error) {
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
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	now := opts.Clock.Now()
	j := &Job{
		id: r.ID, text: r.Command, method: r.Method, actor: r.Actor,
		sessionID: r.SessionID, sess: r.Session, out: r.Output,
		opts: opts, timeout: r.Timeout, reg: reg, shell: shell, gate: r.Gate,
		started:  now,
		ready:    make(chan struct{}),
		gated:    make(chan struct{}),
		done:     make(chan struct{}),
		requests: make(chan signalRequest),
		stop:     make(chan struct{}),
		st:       state{max: r.MaxOutput, ran: now},
	}
	j.watch = NewWatch(r.Output)
	j.cmd = session.Command{Text: r.Command, Env: r.Env, Stdin: r.Stdin, Done: j.lineDone}
	reg.starting()
	if j.gate != nil {
		// Registered at once, holding its session (SESSION_BUSY for the
		// next command); the supervisor waits for the decision.
		reg.add(j)
		j.mu.Lock()
		j.supervise()
		j.mu.Unlock()
		return j, nil
	}
	line, err := shell.Start(j.cmd, j.watch)
	if err != nil {
		reg.notStarted()
		return nil, err
	}
	j.line = line
	close(j.gated)
	reg.add(j)
	if j.timeout > 0 {
		j.mu.Lock()
		j.supervise()
		j.mu.Unlock()
	}
	close(j.ready)
	return j, nil
}

// passGate waits for the Gate's decision and starts the line when it is
// approved. A denial, a cancel or a shell that cannot take the line ends
// the Job without running it; passGate then reports false.
func (j *Job) passGate() bool {
	select {
	case <-j.gate.Decided():
	case req := <-j.requests:
		// Withdrawn: nothing ran, so no signal was sent and the exit is
		// a command's that never ran (it said SIGINT and 130).
		j.endUnrun(Exit{ExitCode: DeniedExitCode, Canceled: true})
		req.reply <- signalReply{}
		return false
	case <-j.shell.Ended():
		j.endUnrun(Exit{ExitCode: DeniedExitCode, Cause: j.shell.EndCause(), SessionExited: true})
		return false
	}
	if !j.gate.Approved() {
		j.endUnrun(Exit{ExitCode: DeniedExitCode, Denied: true})
		return false
	}
	now := j.opts.Clock.Now()
	update(j, func(st *state) struct{} { st.ran = now; return struct{}{} })
	line, err := j.shell.Start(j.cmd, j.watch)
	if err != nil {
		j.endUnrun(Exit{ExitCode: DeniedExitCode, Cause: err, SessionExited: errors.Is(err, session.ErrExited)})
		return false
	}
	j.line = line
	close(j.gated)
	close(j.ready)
	return true
}

// DeniedExitCode is the exit code of a command that never ran (126: found,
// not executed).
const DeniedExitCode = 126

// endUnrun ends a Job whose line was never started.
func (j *Job) endUnrun(x Exit) {
	x.NotRun = true
	if x.Cwd == "" {
		x.Cwd = j.shell.Cwd() // nothing ran: the shell is where it was
	}
	now := j.opts.Clock.Now()
	x.Duration = now.Sub(j.started)
	update(j, func(s *state) struct{} { s.exit = &x; return struct{}{} })
	close(j.gated)
	j.end(x)
}

// supervise starts the supervisor unless it runs or the command has
// ended. Called with mu held.
func (j *Job) supervise() {
	if j.supervised || j.st.exit != nil {
		return
	}
	j.supervised = true
	go j.supervisor()
}

// supervisor is the one goroutine that signals the command: the signals
// asked for by Cancel, and the timeout's escalation — SIGINT to the
// command's process group at the deadline, SIGKILL a Grace later, and
// after another Grace the session is killed (a shell that ignores SIGINT
// while running a builtin loop cannot be stopped any other way). It
// returns when the command ends. Each step acts on this command only:
// if it has just ended, the signal goes nowhere rather than to the next
// command.
func (j *Job) supervisor() {
	if j.gate != nil && !j.passGate() {
		return
	}
	var deadline <-chan time.Time
	if j.timeout > 0 {
		ran := update(j, func(st *state) time.Time { return st.ran })
		t := j.opts.Clock.NewTimer(j.timeout - j.opts.Clock.Now().Sub(ran))
		defer t.Stop()
		deadline = t.C()
		step := 0
		for {
			select {
			case <-j.stop:
				return
			case req := <-j.requests:
				req.reply <- j.signal(req.sig, func(st *state) *bool { return &st.canceled })
			case <-deadline:
				switch step {
				case 0:
					j.signal(unix.SIGINT, func(st *state) *bool { return &st.timedOut })
				case 1:
					j.line.Signal(unix.SIGKILL)
				default:
					j.line.Kill()
					return
				}
				step++
				t.Reset(j.opts.Grace)
			}
		}
	}
	for {
		select {
		case <-j.stop:
			return
		case req := <-j.requests:
			req.reply <- j.signal(req.sig, func(st *state) *bool { return &st.canceled })
		}
	}
}

// signal sends sig to the command, marking what flag says first: the
// command may end (and its exit read the flag) before Signal returns. A
// signal that went nowhere takes the mark back.
func (j *Job) signal(sig unix.Signal, flag func(*state) *bool) signalReply {
	was := update(j, func(st *state) bool { f := flag(st); w := *f; *f = true; return w })
	sent, err := j.line.Signal(sig)
	if err != nil {
		update(j, func(st *state) struct{} { *flag(st) = was; return struct{}{} })
	}
	return signalReply{sent, err}
}

// Cancel sends sig to the running command through the supervisor and
// marks it canceled. It returns the signal actually sent (see
// session.Signal); ErrNotRunning once the command has ended.
func (j *Job) Cancel(sig unix.Signal) (unix.Signal, error) {
	if !update(j, func(*state) bool {
		j.supervise()
		return j.supervised && j.st.exit == nil
	}) {
		return 0, session.ErrNoForeground
	}
	req := signalRequest{sig: sig, reply: make(chan signalReply, 1)}
	select {
	case j.requests <- req:
		r := <-req.reply
		if r.err == nil {
			switch r.sent {
			case unix.SIGINT, unix.SIGTERM, unix.SIGKILL, unix.SIGHUP, unix.SIGQUIT:
				j.ending.Store(true)
			}
		}
		return r.sent, r.err
	case <-j.stop:
		return 0, session.ErrNoForeground
	}
}

// Ending reports whether a signal that ends a program (INT, TERM, KILL,
// HUP, QUIT) was sent to the command by Cancel.
func (j *Job) Ending() bool { return j.ending.Load() }

// lineDone is the session's call once the command has ended and its
// output is delivered (on the session's reader): the exit is recorded,
// the supervisor stops, OnExit runs, the Job is retained, Done closes.
func (j *Job) lineDone() {
	<-j.ready // the command may end before Start has returned
	st := j.line.Status()
	cause := j.line.Cause()
	now := j.opts.Clock.Now()
	x := update(j, func(s *state) Exit {
		x := Exit{
			ExitCode:      st.ExitCode,
			Duration:      now.Sub(s.ran),
			TimedOut:      s.timedOut,
			Canceled:      s.canceled,
			Cwd:           st.Cwd,
			SessionExited: st.Exited,
			Cause:         cause,
			OutOfMemory:   st.OOMKilled,
		}
		s.exit = &x
		return x
	})
	j.end(x)
}

// end finishes an ended Job: the supervisor stops, the output store is
// flushed, OnExit runs, the Job moves to the retained ones, Done closes.
func (j *Job) end(x Exit) {
	close(j.stop)
	j.out.finish(x)
	if j.opts.OnExit != nil {
		j.opts.OnExit(j, x)
	}
	j.reg.retain(j)
	close(j.done)
	if j.opts.Ended != nil {
		// Closing done made the waiter (the request that answers with
		// this exit) runnable on this P; yielding lets it answer before
		// Ended's work (a log write) runs on this goroutine.
		goruntime.Gosched()
		j.opts.Ended(j, x)
	}
	j.reg.ended() // Wait waits for Ended too: a stopping daemon audits every command
}

// ID is the command's exec_id.
func (j *Job) ID() string { return j.id }

// Command is the command line.
func (j *Job) Command() string { return j.text }

// Method is the method that started it (exec.run or exec.stream).
func (j *Job) Method() string { return j.method }

// Actor is who started it.
func (j *Job) Actor() string { return j.actor }

// SessionID names the session it runs in.
func (j *Job) SessionID() string { return j.sessionID }

// Session is the session it runs in (nil with a fake Shell).
func (j *Job) Session() *session.Session { return j.sess }

// Started is when it started.
func (j *Job) Started() time.Time { return j.started }

// Watch is what waiting for the command needs: when output came, and the
// prompt.
func (j *Job) Watch() *Watch { return j.watch }

// Store is where its output is kept.
func (j *Job) Store() Store { return j.out }

// Collector is its output kept head and tail (exec.run), or nil.
func (j *Job) Collector() *Collector { c, _ := j.out.(*Collector); return c }

// Stream is its window of recent output (exec.stream), or nil.
func (j *Job) Stream() *Stream { s, _ := j.out.(*Stream); return s }

// Gate is what holds the command for approval (nil: nothing).
func (j *Job) Gate() Gate { return j.gate }

// Gated is closed once the command has passed its Gate (its line
// started, or it ended without running); closed from the start without
// one.
func (j *Job) Gated() <-chan struct{} { return j.gated }

// Awaiting reports whether the command still waits for its approval.
func (j *Job) Awaiting() bool {
	select {
	case <-j.gated:
		return false
	default:
		return true
	}
}

// Done is closed once the command has ended, its exit is recorded and
// OnExit has run.
func (j *Job) Done() <-chan struct{} { return j.done }

// Exit returns how the command ended, and whether it has.
func (j *Job) Exit() (Exit, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.st.exit == nil {
		return Exit{}, false
	}
	return *j.st.exit, true
}

// Marks are how far the statuses returned so far have carried a Job's
// output, and what the client was told.
type Marks struct {
	Sent     [2]int64
	Yielded  bool
	Reported bool
	InputAt  time.Time
	Max      int
}

// Marks returns the Job's marks.
func (j *Job) Marks() Marks {
	return update(j, func(st *state) Marks {
		return Marks{Sent: st.sent, Yielded: st.yielded, Reported: st.reported, InputAt: st.inputAt, Max: st.max}
	})
}

// Advance records a status that carried output up to ends: a yield before
// the end, or the report of the exit after it.
func (j *Job) Advance(ends [2]int64) {
	update(j, func(st *state) struct{} {
		st.sent = ends
		if st.exit == nil {
			st.yielded = true
		} else {
			st.reported = true
		}
		return struct{}{}
	})
}

// Reported records that a result carried the exit.
func (j *Job) Reported() {
	update(j, func(st *state) struct{} { st.reported = true; return struct{}{} })
}

// Typed records that input was typed now.
func (j *Job) Typed(at time.Time) {
	update(j, func(st *state) struct{} { st.inputAt = at; return struct{}{} })
}

// SetMax sets the output budget of one status.
func (j *Job) SetMax(n int) {
	update(j, func(st *state) struct{} { st.max = n; return struct{}{} })
}
