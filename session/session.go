package session

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/internal/callbacks"
	"github.com/trl-project/trl/internal/rawio"
	"github.com/trl-project/trl/internal/termwait"
	"github.com/trl-project/trl/screen"
	"golang.org/x/sys/unix"
)

// State is a session's state as clients see it.
type State string

const (
	StateIdle   State = "idle"
	StateBusy   State = "busy"
	StateExited State = "exited"
)

// Session is one shell on one PTY. Its methods are safe for concurrent use.
type Session struct {
	id      string
	cfg     Config
	dialect dialect
	nonce   string
	created time.Time
	log     zerolog.Logger

	proc *os.Process
	pid  int      // the shell's pid, kept apart: Release clears proc.Pid
	ptm  *os.File // PTY master: stdout of commands
	cmdW *os.File // the daemon's end of the command channel (the shell's fd 0; shellChannel)
	// cmdRaw is cmdW's RawConn, for writeLine's raw send.
	cmdRaw syscall.RawConn
	// cmdMu is held while a line is written to cmdW (writeLine): lines go
	// whole and in order, the set-up line first.
	cmdMu  sync.Mutex
	ctlR   *os.File // read end of the control pipe (the shell's fds 1 and 2)
	errR   *os.File // read end of the stderr pipe (commands' fd 2)
	ptmRaw syscall.RawConn
	errRaw syscall.RawConn
	// pts is the daemon's own copy of the terminal's slave side: the
	// flushes and flow control of restoreTerminal, and the question whether
	// typed input is unread, act on the slave and need an fd of it.
	pts    *os.File
	ptsRaw syscall.RawConn
	tmpDir string // private directory for stdin files
	// cmdF is the command file source dialects run each line from (see
	// writeCommand), open for the session's life; cmdLen, guarded by
	// startClaim, is how long its text is. startClaim is held by a Start
	// from its first look at the session until its line is written, so
	// that the file is written with no lock held and by one Start only.
	cmdF       *os.File
	cmdLen     int
	startClaim atomic.Bool
	// lastStatus, guarded by mu, is the status of the last command's line
	// (not of trl's own): the next command starts with it as $?.
	lastStatus int
	// errexit is whether the shell's errexit was on at its last prompt;
	// captured, guarded by mu, whether the last command's line captured
	// its status (errexitNote).
	errexit  atomic.Bool
	captured bool
	// startEnv is the environment the shell was started with (a state
	// applied to the session unsets what it does not name).
	startEnv []string
	// stateClaim is held by the one state line at a time (see
	// claimState); stateMade, guarded by it, says which of its files exist
	// (see stateFile) and stateScript what the sourced one holds.
	stateClaim  atomic.Bool
	stateMade   uint8
	stateScript string
	// readerDefined, guarded by stateClaim, says the shell has trl's
	// state reader function (bash); bashOpts, guarded by it too, holds
	// the names of bash's options once a reading listed them.
	readerDefined bool
	bashOpts      bashOptionNames
	modes         termModes // the terminal's launch settings (see terminal.go)
	cg            *cgroup
	v1            *v1Groups // the session's cgroup v1 groups, when its limits are set there
	lim           limiter   // where its limits are set and its usage read: cg, v1 or nil
	enterErr      error     // the shell could not be moved into v1 (launch)
	// argv is the shell's command line as trl started it (Replaced).
	argv []string
	// aliases, under mu: Aliases. Replaced, never modified.
	aliases map[string]string
	// shellExe is the shell's program as /proc/<pid>/exe names it
	// (runsShellImage).
	shellExe string
	// wroteInput is set when trl writes the terminal's input (typed
	// input, a reply to a query) and cleared by restoreTerminal.
	wroteInput atomic.Bool
	tree       tree
	// status delivers the shell's wait status when the process-wide
	// reaper owns reaping; nil when reap waits itself.
	status <-chan unix.WaitStatus

	// ioMu orders reads of ptm and errR with the hand-over of their bytes
	// to the current job, so that the drain after a completion record
	// never overtakes bytes a reader goroutine already holds.
	ioMu sync.Mutex
	job  *Line // running job; guarded by ioMu and mu (both held to change)
	// secrets are masked in all output; held is, per stream, a tail that
	// could begin one, not yet handed on (mask.go). Guarded by ioMu.
	secrets secretSet
	// named are the secrets the session was created with (Config.Secrets:
	// never forgotten), later the others (exec.input secret, a fork's
	// Masks), oldest first, at most maxSecrets. Guarded by ioMu.
	named, later [][]byte
	held         [2][]byte
	// stray finds the shell's own prompt record on the stderr pipe
	// (strayRecord). Guarded by ioMu.
	stray recordParser
	// exitTail is what the shell wrote to the control pipe since the
	// running line's start record (exitTailNote). Guarded by ioMu.
	exitTail []byte
	// ctlEnded is closed when readControl has read the control pipe to
	// its end.
	ctlEnded chan struct{}
	// typed is what a person typed so far on the line of a password
	// prompt (WriteTyped).
	typedMu sync.Mutex
	typed   []byte

	mu       sync.Mutex
	state    State
	cwd      string
	lastUsed time.Time
	commands int64
	seq      int64 // sequence number of the last command line sent
	// lastRecord is the sequence number of the last prompt record the
	// control reader has seen, set before it takes mu to complete.
	lastRecord atomic.Int64
	exitCode   *int
	closing    bool // no new commands: the session is being closed
	closeBegun bool // Close has run (or is running)
	// resync is set when the shell itself was sent SIGINT: the next
	// command waits until a plain line has made the round trip (see
	// settle).
	resync bool
	// sending counts the signals decided for a line and not yet sent;
	// no line is written while it is above 0, and sendsDone (on mu) is
	// broadcast when it drops to 0 (see signal.go).
	sending   int
	sendsDone *sync.Cond
	// fu is the schedule of the delayed work of signal.go and end.go,
	// run by the session's one follower goroutine (followup.go).
	fu followUps

	scr  *screen.Screen           // the terminal as a person sees it (screen.go)
	idle idleLog                  // output written while no command runs
	obs  callbacks.List[Observer] // byte observers (observe.go)

	ready   chan struct{} // closed at the first prompt record
	exited  chan struct{} // closed when the shell has been reaped
	closed  chan struct{} // closed when Close has released everything
	readers sync.WaitGroup

	// ended is cancelled, with the cause, when the session is over (see
	// end.go).
	ended      context.Context
	endSession context.CancelCauseFunc
	logEndOnce sync.Once
	// killOnce starts the one goroutine that kills the session's
	// processes (see kill); killed is closed when it is done.
	killOnce sync.Once
	killed   chan struct{}
	noFile   unix.Rlimit   // the shell's open-file limit at launch
	launched chan struct{} // closed once launch has set pid, tree and log
	reaped   atomic.Bool   // set with state exited, read without mu
	// filesClosed is set just before closeFiles closes the fds the
	// readers block on: a read failing after it is the close, not a fault.
	filesClosed atomic.Bool

	limits Limits // set on cg at launch (limits.go)
	// replaced holds the id of the default session this one replaced,
	// until the first command's status has said so (TakeReplaced).
	replaced atomic.Pointer[string]

	lease     *lease // the uid the session runs under, when isolated
	leaseOnce sync.Once
	root      nsRoot // its mount namespace's "/", when isolated (root.go)

	// tw samples the terminal for input waits (SPEC §8), made on first use.
	twOnce sync.Once
	tw     *termwait.Terminal
	twErr  error

	// sigHook, set only by tests, is called as each signal is sent.
	sigHook atomic.Pointer[func(pid int, sig unix.Signal)]
	// fileHook, set only by tests, is called as each file of a line (its
	// command file, its stdin) is written.
	fileHook atomic.Pointer[func(what string)]
}

// Line is one command line the shell runs: the session's side of a
// command (exec.Job owns the command itself) — its sequence number,
// whether the shell has begun executing it, where its output goes, and
// the timers of the signals sent for it.
type Line struct {
	s      *Session
	onDone func()
	seq    int64
	sink   Sink
	stdin  string // stdin file to remove afterwards
	// src, for source dialects, takes the command file's name out of the
	// shell's messages about this line (sourcename.go).
	src *sourceName
	// started is set when the shell's start record for this line arrives:
	// from then on the line is being executed, so SIGINT to the shell
	// interrupts it rather than a line still being read. pendingINT is an
	// interrupt asked for before that, sent when the record comes. Both
	// are guarded by Session.mu.
	started   bool
	startedAt time.Time
	// noticeOpen: a job notice's text goes on in the next stderr bytes
	// (splitNotices). Guarded by ioMu.
	noticeOpen bool
	announced  bool // observers were told of its start (not settle's lines)
	// oomBase is the group's OOM kill count when the job started (memory
	// limited sessions only).
	oomBase    int64
	pendingINT bool
	done       chan struct{}
	status     Status
	// watched and dropChecked say the follower has been given the
	// line's watchdog and its check for a dropped line (end.go): each
	// once. Guarded by Session.mu.
	watched, dropChecked bool
}

// Done is closed when the command has ended and all its output has been
// handed to the sink.
func (j *Line) Done() <-chan struct{} { return j.done }

// Status is valid once Done is closed.
func (j *Line) Status() Status { return j.status }

// Signal sends sig to the job while it runs (see Session.Signal).
func (j *Line) Signal(sig unix.Signal) (unix.Signal, error) { return j.s.Signal(j, sig) }

// Kill ends the session if the job still runs (see Session.Kill).
func (j *Line) Kill() { j.s.Kill(j) }

// Cause is why the session ended with the job, or nil while it lives.
func (j *Line) Cause() error {
	if !j.status.Exited {
		return nil
	}
	return j.s.EndCause()
}

// NewID returns prefix followed by n random bytes in hex.
func NewID(prefix string, n int) string {
	b := make([]byte, n)
	idSource.Lock()
	idSource.r.Read(b)
	idSource.Unlock()
	return prefix + hex.EncodeToString(b)
}

// idShaped reports whether name has the form NewID("s-", 6) gives a
// session's id.
func idShaped(name string) bool {
	if len(name) != 14 || !strings.HasPrefix(name, "s-") {
		return false
	}
	_, err := hex.DecodeString(name[2:])
	return err == nil && strings.ToLower(name) == name
}

// idSource draws ids from a ChaCha8 stream (a cryptographically strong
// generator) seeded once from crypto/rand: as unguessable as reading
// crypto/rand for each id, without its getrandom system call, two per
// command (7% of exec.run's CPU in BenchmarkExecRunTrue).
var idSource = struct {
	sync.Mutex
	r *mrand.ChaCha8
}{r: mrand.NewChaCha8(idSeed())}

func idSeed() (seed [32]byte) {
	if _, err := rand.Read(seed[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return seed
}

// Start sends c to the shell. The job's Done channel closes when it ends.
func (s *Session) Start(c Command, sink Sink) (*Line, error) {
	if !s.startClaim.CompareAndSwap(false, true) {
		return nil, s.busyErr()
	}
	defer s.startClaim.Store(false)
	// Files are read and written before mu is taken.
	oomBase := int64(-1)
	if s.limits.MemoryMB > 0 {
		oomBase = s.lim.oomKills()
	}
	st := capturing{capture: captures(c.Text, s.errexit.Load(), s.dialect.lang)}
	if s.dialect.source {
		if err := s.writeCommand(bashCommandFile(s.nonce, c.Text, st)); err != nil {
			return nil, err
		}
	}
	stdin, stdinErr := s.writeStdin(c.Stdin)
	s.mu.Lock()
	s.awaitSends()
	fail := func(err error) (*Line, error) {
		s.mu.Unlock()
		if stdin != "" {
			os.Remove(stdin)
		}
		return nil, err
	}
	if err := s.unready(); err != nil {
		return fail(err)
	}
	if stdinErr != nil {
		return fail(stdinErr)
	}
	if s.resync {
		s.resync = false
		if err := s.settle(); err != nil {
			return fail(err)
		}
	}
	// A TUI killed before it restored the terminal leaves the alternate
	// screen on in the model; the next command's output goes to the main
	// screen.
	redraw := s.scr.LeaveAltScreen()
	s.seq++
	j := &Line{s: s, onDone: c.Done, seq: s.seq, sink: sink, done: make(chan struct{}), stdin: stdin, oomBase: oomBase}
	if s.dialect.source {
		j.src = newSourceName(s.cmdFile(), c.Text)
	}
	s.ioMu.Lock()
	s.flushHeld() // what came between commands is not this command's
	s.job = j
	j.announced = true
	if redraw {
		s.announce(ScreenReset, nil)
	}
	text := []byte(c.Text)
	if len(s.secrets) > 0 { // ioMu is held: the secrets are read directly
		text = s.secrets.maskAll(text)
	}
	s.announce(CommandStart, text)
	s.ioMu.Unlock()
	s.state = StateBusy
	s.commands++
	s.lastUsed = time.Now().UTC()
	st.reset, s.captured = s.captured, st.capture
	line := s.dialect.commandLine(s.nonce, j.seq, c, s.cmdFile(), j.stdin, s.lastStatus, st)
	s.restoreTerminal()
	s.mu.Unlock()

	if s.log.GetLevel() <= zerolog.TraceLevel {
		s.log.Trace().Bytes("line", s.maskLog(line)).Msg("send")
	}
	if err := s.writeLine(line); err != nil {
		s.log.Debug().Err(err).Msg("write command")
		s.channelBroken(err)
	}
	return j, nil
}

// writeLine writes one line to the shell's command channel, whole and in
// turn: a line longer than the channel's buffer is written in parts, which
// another writer's must not split. What the channel takes at once goes
// with one raw send (rawio); the rest, if any, with the blocking write,
// which the runtime knows may wait.
func (s *Session) writeLine(line []byte) error {
	s.cmdMu.Lock()
	defer s.cmdMu.Unlock()
	if s.cmdRaw != nil {
		var n int
		var err error
		if cerr := s.cmdRaw.Control(func(fd uintptr) { n, err = rawio.SendNoWait(int(fd), line) }); cerr != nil {
			return cerr
		}
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			return err
		}
		if line = line[n:]; len(line) == 0 {
			return nil
		}
	}
	_, err := s.cmdW.Write(line)
	return err
}

// channelGrace is how long a shell whose command channel refused a line
// may take to be reaped before the session is ended for it.
const channelGrace = 200 * time.Millisecond

// channelBroken handles a line the command channel refused. Usually the
// shell is gone and reap completes the line with its status. A shell
// still alive lost the channel's read end to a command (bash's `exec
// {n}<&-` on the copy it saved): it now reads the terminal, and would
// wait there for ever, so the session ends with that cause.
func (s *Session) channelBroken(err error) {
	if !errors.Is(err, unix.EPIPE) || s.filesClosed.Load() {
		return
	}
	go func() {
		select {
		case <-s.exited:
		case <-time.After(channelGrace):
			s.endWith(fmt.Errorf("%w: the shell's command channel was closed while the shell runs (a command closed the descriptor it reads its commands from, such as bash's exec {n}<&- on a saved copy); ended", ErrUnresponsive))
		}
	}()
}

// writeStdin writes a command's stdin to a file of its own (none when
// stdin is nil) and returns its name.
func (s *Session) writeStdin(stdin *string) (string, error) {
	if stdin == nil {
		return "", nil
	}
	if h := s.fileHook.Load(); h != nil {
		(*h)("the stdin file")
	}
	f, err := os.CreateTemp(s.tmpDir, "stdin-")
	if err == nil {
		_, err = f.WriteString(*stdin)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.Name())
		}
	}
	if err == nil && s.lease != nil {
		if err = s.lease.share(f.Name(), 0o640); err != nil {
			os.Remove(f.Name())
		}
	}
	if err != nil {
		return "", fmt.Errorf("write stdin for the command: %w", err)
	}
	return f.Name(), nil
}

// Retire refuses new commands from now on, unless one is running and
// force is false, in which case it returns ErrBusy. It lets a destroy
// check and act without a command slipping in between.
func (s *Session) Retire(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job != nil && !force {
		return errorf(ErrBusy, "session %s is running a command; pass \"force\": true to destroy it anyway", s.id)
	}
	s.closing = true
	return nil
}

// cmdFile is where source dialects find the command text.
func (s *Session) cmdFile() string { return s.tmpDir + "/command" }

// writeCommand puts text in the command file, for the line Start is about
// to write. It holds no lock. The caller holds startClaim, so no other
// Start writes the file meanwhile, and it writes only while no line runs:
// a line the shell had not begun yet would otherwise run this text (a
// line runOwn starts meanwhile does not read the file, and Start then
// finds the session busy). The text is written over the old in place and
// the file cut to its length, never truncated to nothing first (see
// stateFiles).
func (s *Session) writeCommand(text string) error {
	s.mu.Lock()
	err := s.unready()
	s.mu.Unlock()
	if err != nil {
		return err
	}
	if h := s.fileHook.Load(); h != nil {
		(*h)("the command file")
	}
	if _, err := s.cmdF.WriteAt([]byte(text), 0); err != nil {
		s.cmdLen = max(s.cmdLen, len(text)) // what it may hold now
		return fmt.Errorf("write the command for the shell: %w", err)
	}
	if len(text) < s.cmdLen {
		if err := s.cmdF.Truncate(int64(len(text))); err != nil {
			return fmt.Errorf("write the command for the shell: %w", err)
		}
	}
	s.cmdLen = len(text)
	return nil
}

// unready is why no line can be started now: the session has ended or is
// closing, or a line runs. Called with mu held.
func (s *Session) unready() error {
	switch {
	case s.state == StateExited || s.closing:
		return s.exitedErr()
	case s.job != nil:
		return s.busyErr()
	}
	return nil
}

// busyErr is the error of a line refused because another runs.
func (s *Session) busyErr() error {
	return errorf(ErrBusy, "session %s is running a command; wait for it, cancel it with exec.cancel, or use another session", s.id)
}

// Kill ends the shell and every process it started at once, if job is
// still the one running (nil: whatever runs). The job completes with the
// shell's status.
func (s *Session) Kill(job *Line) {
	// Under mu: the check, the cause, and closing, so that no new command
	// can start between the check and the kill. The kill itself (up to
	// 2 s of SIGKILL) holds no lock.
	s.mu.Lock()
	if job != nil && s.job != job {
		s.mu.Unlock()
		return
	}
	s.setCause(fmt.Errorf("%w: a command did not end after its timeout's SIGINT and SIGKILL, so the session was ended", ErrEscalation))
	s.closing = true
	s.mu.Unlock()
	<-s.kill()
}

// exitedErr is the error for a command asked of an ended session.
func (s *Session) exitedErr() error {
	why := "its shell has exited"
	if c := s.EndCause(); c != nil {
		why = "it ended: " + c.Error()
	}
	return errorf(ErrExited, "session %s cannot run commands, %s; create a new session", s.id, why)
}

func (s *Session) killTree() {
	if !s.tree.kill(2 * time.Second) {
		s.log.Error().Msg("processes of the session survived 2 s of SIGKILL")
	}
}

// kill ends the shell and everything it started. Every path that ends a
// session by force (a timeout's last step, a shell that stopped
// answering, destroy, shutdown) comes here: the first call starts the one
// goroutine that kills (up to 2 s of SIGKILL, holding no lock), later
// calls find it under way. The returned channel is closed when it is done.
func (s *Session) kill() <-chan struct{} {
	s.killOnce.Do(func() {
		go func() {
			defer close(s.killed)
			s.killTree()
		}()
	})
	return s.killed
}

// Close ends the session: every process it started, the PTY and the pipes.
// It returns when all of them are released; calling it again waits for the
// first call. The end cause, unless one is recorded already, is
// ErrDestroyed.
func (s *Session) Close() { s.CloseWith(ErrDestroyed) }

// CloseWith is Close with the cause to record if none is yet.
func (s *Session) CloseWith(cause error) {
	s.setCause(cause)
	s.mu.Lock()
	if s.closeBegun {
		s.mu.Unlock()
		<-s.closed
		return
	}
	s.closeBegun, s.closing = true, true
	s.mu.Unlock()

	if s.proc != nil {
		<-s.kill()
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			s.log.Error().Msg("shell not reaped 5 s after SIGKILL")
		}
	}
	s.stopFollowing()
	s.closeFiles()
	s.readers.Wait()
	s.scr.Close()
	if s.tmpDir != "" {
		os.RemoveAll(s.tmpDir)
	}
	s.removeGroups()
	s.root.drop()
	s.releaseLease()
	close(s.closed)
	s.logEnd()
	s.log.Debug().Msg("session closed")
}

func (s *Session) closeFiles() {
	s.filesClosed.Store(true)
	if s.cmdW != nil {
		// The command channel's end is blocking (shellChannel): Close
		// would not end a write stuck on a shell that does not read, and
		// a process that escaped the session can keep the shell's end
		// open. Shutting it down fails that write (EPIPE) at once.
		if rc, err := s.cmdW.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_WR) })
		}
	}
	for _, f := range []*os.File{s.cmdW, s.ptm, s.pts, s.ctlR, s.errR, s.cmdF} {
		if f != nil {
			f.Close()
		}
	}
}

// hasExited reports, without a lock, whether the shell has been reaped
// (state exited).
func (s *Session) hasExited() bool { return s.reaped.Load() }

// exitStatus returns the shell's exit code once reaped (-1 before).
func (s *Session) exitStatus() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitCode == nil {
		return -1
	}
	return *s.exitCode
}

// TakeReplaced returns, once, the id of the default session this one
// replaced ("" if none, or already taken).
func (s *Session) TakeReplaced() string {
	if p := s.replaced.Swap(nil); p != nil {
		return *p
	}
	return ""
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Name is the session's name ("" when it has none).
func (s *Session) Name() string { return s.cfg.Name }

// Aliases are the shell's aliases as far as trl has seen them defined: by
// a state the session started with, and by the command lines the policy
// looked at (NoteAliases). The map is never modified once returned.
func (s *Session) Aliases() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.aliases
}

// NoteAliases adds aliases the shell has been given.
func (s *Session) NoteAliases(m map[string]string) {
	if len(m) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	next := make(map[string]string, len(s.aliases)+len(m))
	for k, v := range s.aliases {
		next[k] = v
	}
	for k, v := range m {
		next[k] = v
	}
	s.aliases = next
}

// Cwd is the shell's working directory as its last prompt record told
// it: while a command runs, the directory that command started in.
func (s *Session) Cwd() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cwd
}

// DefaultTimeout is the session's default command timeout (0: none).
func (s *Session) DefaultTimeout() time.Duration { return s.cfg.Timeout }

// Info is a snapshot of the session.
type Info struct {
	ID, Name, Shell, WorkingDir string
	State                       State
	Created, LastUsed           time.Time
	CommandsRun                 int64
	PID                         int
	Timeout                     time.Duration
	Rows, Cols                  int
	ExitCode                    *int
	// EndCause says why the session ended ("" while it lives).
	EndCause string
	// Parent is the session this one was forked from ("" if none).
	Parent string
}

// Info returns a snapshot of the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	var cause string
	if c := s.EndCause(); c != nil {
		cause = c.Error()
	}
	return Info{
		EndCause: cause,
		ID:       s.id, Name: s.cfg.Name, Shell: s.cfg.Shell, WorkingDir: s.cwd,
		State: s.state, Created: s.created, LastUsed: s.lastUsed,
		CommandsRun: s.commands, PID: s.pid, Timeout: s.cfg.Timeout,
		Rows: s.cfg.Rows, Cols: s.cfg.Cols, ExitCode: s.exitCode,
		Parent: s.cfg.Parent,
	}
}
