package session

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/rs/zerolog"
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

	proc   *os.Process
	pid    int      // the shell's pid, kept apart: Release clears proc.Pid
	ptm    *os.File // PTY master: stdout of commands
	cmdW   *os.File // write end of the command pipe (shell's fd 0)
	ctlR   *os.File // read end of the control pipe (shell's fd 2)
	errR   *os.File // read end of the stderr pipe (commands' fd 2)
	errW   *os.File // its write end, kept so the shell can reopen it (see settle)
	ptmRaw syscall.RawConn
	errRaw syscall.RawConn
	tmpDir string // private directory for stdin files
	cg     *cgroup
	tree   tree
	// status delivers the shell's wait status when the process-wide
	// reaper owns reaping; nil when reap waits itself.
	status <-chan unix.WaitStatus

	// ioMu orders reads of ptm and errR with the hand-over of their bytes
	// to the current job, so that the drain after a completion record
	// never overtakes bytes a reader goroutine already holds.
	ioMu sync.Mutex
	job  *Job // running job; guarded by ioMu and mu (both held to change)

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

	ready   chan struct{} // closed at the first prompt record
	exited  chan struct{} // closed when the shell has been reaped
	closed  chan struct{} // closed when Close has released everything
	readers sync.WaitGroup
}

// Job is one command running in a session.
type Job struct {
	seq   int64
	sink  Sink
	stdin string // stdin file to remove afterwards
	// started is set when the shell's start record for this line arrives:
	// from then on the line is being executed, so SIGINT to the shell
	// interrupts it rather than a line still being read. pendingINT is an
	// interrupt asked for before that, sent when the record comes. Both
	// are guarded by Session.mu.
	started    bool
	startedAt  time.Time
	pendingINT bool
	done       chan struct{}
	status     Status
}

// Done is closed when the command has ended and all its output has been
// handed to the sink.
func (j *Job) Done() <-chan struct{} { return j.done }

// Status is valid once Done is closed.
func (j *Job) Status() Status { return j.status }

func NewID(prefix string, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	return prefix + hex.EncodeToString(b)
}

// start launches the shell and waits for its first prompt record.
func start(id string, cfg Config, opts Options, log zerolog.Logger) (*Session, error) {
	s := &Session{
		id:      id,
		cfg:     cfg,
		dialect: dialectFor(cfg.Shell),
		nonce:   NewID("", 8),
		created: time.Now().UTC(),
		log:     log.With().Str("session", id).Logger(),
		state:   StateIdle,
		cwd:     cfg.WorkingDir,
		ready:   make(chan struct{}),
		exited:  make(chan struct{}),
		closed:  make(chan struct{}),
	}
	s.lastUsed = s.created
	if err := s.launch(opts.BaseEnv, opts.Subreaper); err != nil {
		return nil, err
	}
	startTimeout := opts.startTimeout()
	select {
	case <-s.ready:
		return s, nil
	case <-s.exited:
		code := s.exitStatusLocked()
		s.Close()
		return nil, fmt.Errorf("%w: %s exited during start-up with status %d; is it a POSIX shell (sh, dash, bash, zsh)?", ErrStart, cfg.Shell, code)
	case <-time.After(startTimeout):
		s.Close()
		return nil, fmt.Errorf("%w: %s printed no prompt within %s; is it a POSIX shell (sh, dash, bash, zsh)?", ErrStart, cfg.Shell, startTimeout)
	}
}

// launch creates the PTY and pipes, starts the shell and the goroutines
// that read from it. On error everything it made is released.
func (s *Session) launch(baseEnv []string, subreaper bool) (err error) {
	var toClose []*os.File
	defer func() {
		for _, f := range toClose {
			f.Close()
		}
	}()
	ptm, pts, err := openPTY()
	if err != nil {
		return err
	}
	toClose = append(toClose, pts)
	if err := configureTerminal(pts, s.cfg.Rows, s.cfg.Cols); err != nil {
		ptm.Close()
		return err
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		ptm.Close()
		return err
	}
	toClose = append(toClose, cmdR)
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		ptm.Close()
		cmdW.Close()
		return err
	}
	toClose = append(toClose, ctlW)
	errR, errW, err := os.Pipe()
	if err != nil {
		ptm.Close()
		cmdW.Close()
		ctlR.Close()
		return err
	}
	// From here on, Close releases what we hold.
	s.ptm, s.cmdW, s.ctlR, s.errR, s.errW = ptm, cmdW, ctlR, errR, errW
	fail := func(e error) error {
		s.closeFiles()
		return e
	}
	if s.ptmRaw, err = ptm.SyscallConn(); err != nil {
		return fail(err)
	}
	if s.errRaw, err = errR.SyscallConn(); err != nil {
		return fail(err)
	}
	if s.tmpDir, err = os.MkdirTemp("", "trl-"+s.id+"-"); err != nil {
		return fail(fmt.Errorf("make session temp dir: %w", err))
	}

	argv := append([]string{s.cfg.Shell}, s.dialect.args...)
	attr := &os.ProcAttr{
		Dir:   s.cfg.WorkingDir,
		Env:   shellEnv(baseEnv, s.cfg.Env, s.id),
		Files: []*os.File{cmdR, pts, ctlW, pts, errW},
		// Pdeathsig: if the daemon dies, so does the shell (its jobs
		// then get the terminal's hang-up).
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 1, Pdeathsig: syscall.SIGKILL},
	}
	s.cg = newCgroup(s.id)
	if s.cg != nil {
		attr.Sys.UseCgroupFD = true
		attr.Sys.CgroupFD = int(s.cg.fd.Fd())
	}
	startShell := func() (*os.Process, error) {
		proc, err := os.StartProcess(s.cfg.Shell, argv, attr)
		if err != nil && s.cg != nil {
			// clone3 into a cgroup can be refused (seccomp, old
			// kernel): start without, and rely on /proc scans.
			s.cg.remove()
			s.cg = nil
			attr.Sys.UseCgroupFD, attr.Sys.CgroupFD = false, 0
			proc, err = os.StartProcess(s.cfg.Shell, argv, attr)
		}
		return proc, err
	}
	var proc *os.Process
	if subreaper {
		s.status, err = theReaper.spawn(func() (int, error) {
			p, err := startShell()
			if err != nil {
				return 0, err
			}
			proc = p
			return p.Pid, nil
		})
	} else {
		proc, err = startShell()
	}
	if err != nil {
		os.RemoveAll(s.tmpDir)
		return fail(fmt.Errorf("%w: start %s: %v", ErrStart, s.cfg.Shell, err))
	}
	s.proc, s.pid = proc, proc.Pid
	s.tree = newTree(proc.Pid, s.id, s.cg)
	s.log = s.log.With().Int("pid", proc.Pid).Logger()

	s.readers.Add(3)
	go s.reap()
	go s.readControl()
	go s.pump(s.ptmRaw, Stdout)
	go s.pump(s.errRaw, Stderr)

	if _, err := cmdW.Write([]byte(s.dialect.init(s.nonce) + "\n")); err != nil {
		s.log.Debug().Err(err).Msg("write init line")
	}
	return nil
}

// openPTY opens a PTY pair whose master is non-blocking and so served by
// the runtime's poller: reads park a goroutine, not a thread, and Close
// unblocks them. creack/pty hands out a blocking master, so the fd is
// duplicated, made non-blocking, and wrapped anew.
func openPTY() (ptm, pts *os.File, err error) {
	m, pts, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	defer m.Close()
	rc, err := m.SyscallConn()
	if err != nil {
		pts.Close()
		return nil, nil, err
	}
	dup := -1
	var dupErr error
	rc.Control(func(fd uintptr) {
		dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if dupErr == nil {
		dupErr = unix.SetNonblock(dup, true)
	}
	if dupErr != nil {
		if dup >= 0 {
			unix.Close(dup)
		}
		pts.Close()
		return nil, nil, fmt.Errorf("open pty: %w", dupErr)
	}
	return os.NewFile(uintptr(dup), "/dev/ptmx"), pts, nil
}

// configureTerminal turns off echo (nothing is typed into this terminal;
// commands arrive on a pipe) and ONLCR (so "\n" stays "\n"), and sets the
// window size.
func configureTerminal(pts *os.File, rows, cols int) error {
	rc, err := pts.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		t, e := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if e != nil {
			ioErr = e
			return
		}
		t.Lflag &^= unix.ECHO | unix.ECHOE | unix.ECHOK | unix.ECHONL | unix.ECHOCTL
		t.Oflag &^= unix.ONLCR
		if e := unix.IoctlSetTermios(int(fd), unix.TCSETS, t); e != nil {
			ioErr = e
			return
		}
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return fmt.Errorf("configure pty: %w", err)
	}
	return nil
}

// shellEnv is base, then the defaults SPEC §4 names unless the caller set
// them, then the caller's variables, then trl's own marker.
func shellEnv(base []string, extra map[string]string, id string) []string {
	env := make([]string, 0, len(base)+len(extra)+5)
	set := map[string]bool{}
	for k := range extra {
		set[k] = true
	}
	for _, kv := range base {
		k, _, _ := cutEnv(kv)
		if set[k] {
			continue
		}
		switch k {
		case "PAGER", "GIT_PAGER", "TERM", "TRL_SESSION_ID":
			continue
		}
		env = append(env, kv)
	}
	for k, v := range map[string]string{"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "xterm-256color"} {
		if !set[k] {
			env = append(env, k+"="+v)
		}
	}
	for _, kv := range sortedEnv(extra) {
		env = append(env, kv[0]+"="+kv[1])
	}
	return append(env, "TRL_SESSION_ID="+id)
}

func cutEnv(kv string) (k, v string, ok bool) {
	for i := 0; i < len(kv); i++ {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}

// reap owns waiting for the shell. When it ends, any running job ends with
// the shell's status.
func (s *Session) reap() {
	code := -1
	if s.status != nil {
		ws := <-s.status
		code = ws.ExitStatus()
		if ws.Signaled() {
			code = 128 + int(ws.Signal())
		}
		s.proc.Release()
	} else if state, err := s.proc.Wait(); err == nil {
		code = exitCode(state)
	}
	// From now on the shell's pid may be reused: the tree stops using it.
	s.tree.shellGone()
	s.mu.Lock()
	s.exitCode = &code
	s.state = StateExited
	s.mu.Unlock()
	s.log.Debug().Int("exit_code", code).Msg("shell exited")
	s.complete(-1, Status{ExitCode: code, Exited: true})
	close(s.exited)
}

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// readControl owns the control pipe: it turns prompt records into
// completions.
func (s *Session) readControl() {
	defer s.readers.Done()
	rp := recordParser{prefix: []byte(recordPrefix(s.nonce))}
	buf := make([]byte, 512) // records are short; this is held while idle
	first := true
	for {
		n, err := s.ctlR.Read(buf)
		if n > 0 {
			recs, noise := rp.feed(buf[:n])
			// Publish the end records of this batch before acting on any
			// of it, so that a start record handled first does not send
			// an interrupt to a line already over.
			for _, r := range recs {
				if !r.start && !first && r.seq > s.lastRecord.Load() {
					s.lastRecord.Store(r.seq)
				}
			}
			s.log.Trace().Bytes("ctl", buf[:n]).Msg("control")
			if len(noise) > 0 {
				s.log.Debug().Bytes("noise", noise).Msg("shell said")
			}
			for _, r := range recs {
				switch {
				case r.start:
					s.started(r.seq)
				case first:
					first = false
					close(s.ready)
					s.mu.Lock()
					s.cwd = r.cwd
					s.mu.Unlock()
				default:
					s.complete(r.seq, Status{ExitCode: r.status, Cwd: r.cwd})
				}
			}
		}
		if err != nil {
			return
		}
	}
}

// pump owns reading one output fd. Each read happens under ioMu together
// with the hand-over to the running job, so bytes reach the sink in kernel
// order even when a drain runs concurrently.
func (s *Session) pump(rc syscall.RawConn, stream Stream) {
	defer s.readers.Done()
	var rerr error
	for {
		err := rc.Read(func(fd uintptr) bool {
			s.ioMu.Lock()
			defer s.ioMu.Unlock()
			// An idle session holds no read buffer: one is borrowed only
			// while the fd has data.
			bp := readBufs.Get().(*[]byte)
			defer readBufs.Put(bp)
			buf := *bp
			n, e := unix.Read(int(fd), buf)
			if e == unix.EAGAIN || e == unix.EINTR {
				return false
			}
			if n > 0 {
				// Take what else is already there, without waiting, so a
				// fast writer costs one hand-over per buffer rather than
				// per 4 KiB terminal read.
				for n < len(buf) {
					m, e := unix.Read(int(fd), buf[n:])
					if m <= 0 || e != nil {
						break
					}
					n += m
				}
				s.deliver(stream, buf[:n])
				return true
			}
			rerr = e
			if rerr == nil {
				rerr = io.EOF
			}
			return true
		})
		if err != nil || rerr != nil {
			// EIO from the master after the last slave holder exits is a
			// hang-up, not an error.
			return
		}
	}
}

// readBufs are the buffers output is read into; sinks copy what they keep.
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, 32*1024)
	return &b
}}

// deliver hands bytes to the running job, or drops them when none runs
// (output of a background job between commands). Called with ioMu held.
func (s *Session) deliver(stream Stream, p []byte) {
	if s.job != nil {
		s.job.sink.Output(stream, p)
		return
	}
	s.log.Debug().Str("stream", stream.String()).Int("bytes", len(p)).Msg("output with no command running dropped")
}

// drain reads fd until it would block. Called with ioMu held.
func (s *Session) drain(rc syscall.RawConn, stream Stream) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Read(int(fd), buf)
			if n > 0 {
				s.deliver(stream, buf[:n])
				continue
			}
			if err == unix.EINTR {
				continue
			}
			return
		}
	})
}

// complete ends the job whose command line had sequence number seq (-1:
// whichever runs, because the shell ended).
func (s *Session) complete(seq int64, st Status) {
	s.mu.Lock()
	s.ioMu.Lock()
	j := s.job
	if j == nil || (seq >= 0 && seq != j.seq) {
		// A prompt printed again for a line already answered (a shell
		// re-prompts when interrupted while idle) or for none at all.
		s.ioMu.Unlock()
		s.mu.Unlock()
		if seq >= 0 {
			s.log.Debug().Int64("seq", seq).Msg("prompt record with no matching command ignored")
		}
		return
	}
	s.drain(s.ptmRaw, Stdout)
	s.drain(s.errRaw, Stderr)
	s.job = nil
	s.ioMu.Unlock()
	if st.Exited {
		st.Cwd = s.cwd
	} else {
		s.cwd = st.Cwd
		if s.state == StateBusy {
			s.state = StateIdle
		}
	}
	s.lastUsed = time.Now().UTC()
	s.mu.Unlock()
	if j.stdin != "" {
		os.Remove(j.stdin)
	}
	j.status = st
	close(j.done)
}

// Start sends c to the shell. The job's Done channel closes when it ends.
func (s *Session) Start(c Command, sink Sink) (*Job, error) {
	s.mu.Lock()
	switch {
	case s.state == StateExited || s.closing:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s's shell has exited; create a new session", ErrExited, s.id)
	case s.job != nil:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w: session %s is running a command; wait for it, cancel it with exec.cancel, or use another session", ErrBusy, s.id)
	}
	if s.resync {
		s.resync = false
		if err := s.settle(); err != nil {
			s.mu.Unlock()
			return nil, err
		}
	}
	if s.dialect.source {
		if err := os.WriteFile(s.cmdFile(), []byte(c.Text), 0o600); err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("write the command for the shell: %w", err)
		}
	}
	s.seq++
	j := &Job{seq: s.seq, sink: sink, done: make(chan struct{})}
	if c.Stdin != nil {
		f, err := os.CreateTemp(s.tmpDir, "stdin-")
		if err == nil {
			_, err = f.WriteString(*c.Stdin)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			s.mu.Unlock()
			return nil, fmt.Errorf("write stdin for the command: %w", err)
		}
		j.stdin = f.Name()
	}
	s.ioMu.Lock()
	s.job = j
	s.ioMu.Unlock()
	s.state = StateBusy
	s.commands++
	s.lastUsed = time.Now().UTC()
	line := s.dialect.commandLine(s.nonce, j.seq, c, s.cmdFile(), j.stdin)
	s.mu.Unlock()

	s.log.Trace().Bytes("line", line).Msg("send")
	if _, err := s.cmdW.Write(line); err != nil {
		// The shell is gone; reap completes the job with its status.
		s.log.Debug().Err(err).Msg("write command")
	}
	return j, nil
}

// settle makes sure the shell is reading commands again after it was
// sent SIGINT: an interrupt that reaches a shell just as it finishes a
// line makes it drop the next line it reads, and bash interrupted while
// it undoes a line's redirections can leave fd 3 or 4 closed. A line that
// reopens those two if need be (the terminal, and the stderr pipe through
// the daemon's own fd) is sent, and sent again under a new sequence
// number until its prompt record comes back; only then does the real
// command follow. Called with mu held; it
// releases mu while it waits, holding the session busy.
func (s *Session) settle() error {
	for attempt := 0; attempt < 10; attempt++ {
		s.seq++
		j := &Job{seq: s.seq, sink: discard{}, done: make(chan struct{}), started: true}
		s.ioMu.Lock()
		s.job = j
		s.ioMu.Unlock()
		s.state = StateBusy
		line := []byte(s.dialect.seqVar + strconv.FormatInt(j.seq, 10) +
			"; { command : <&3; } 2>/dev/null || exec 3<>/dev/tty; { command : >&4; } 2>/dev/null || exec 4>" + s.errPath() + "\n")
		s.mu.Unlock()
		s.cmdW.Write(line)
		select {
		case <-j.Done():
			s.mu.Lock()
			if s.state == StateExited || s.closing {
				return fmt.Errorf("%w: session %s's shell has exited; create a new session", ErrExited, s.id)
			}
			return nil
		case <-time.After(time.Duration(50*(attempt+1)) * time.Millisecond):
		}
		s.mu.Lock()
		if s.job == j {
			s.ioMu.Lock()
			s.job = nil
			s.ioMu.Unlock()
		}
		if s.state == StateExited || s.closing {
			return fmt.Errorf("%w: session %s's shell has exited; create a new session", ErrExited, s.id)
		}
		s.log.Debug().Int64("seq", j.seq).Msg("shell dropped a line after an interrupt; sending another")
	}
	// The shell no longer answers: end it, so that the session says
	// exited rather than staying busy for ever.
	s.mu.Unlock()
	s.killTree()
	s.mu.Lock()
	return fmt.Errorf("%w: session %s's shell stopped reading commands after an interrupt and was ended; create a new session", ErrExited, s.id)
}

// errPath names the stderr pipe's write end as the shell can open it.
func (s *Session) errPath() string {
	return fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), s.errW.Fd())
}

// discard is the sink of lines trl sends for itself.
type discard struct{}

func (discard) Output(Stream, []byte) {}

// Retire refuses new commands from now on, unless one is running and
// force is false, in which case it returns ErrBusy. It lets a destroy
// check and act without a command slipping in between.
func (s *Session) Retire(force bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job != nil && !force {
		return fmt.Errorf("%w: session %s is running a command; pass \"force\": true to destroy it anyway", ErrBusy, s.id)
	}
	s.closing = true
	return nil
}

// cmdFile is where source dialects find the command text.
func (s *Session) cmdFile() string { return s.tmpDir + "/command" }

// ErrNoForeground is returned by Signal when the job is not running.
var ErrNoForeground = errors.New("no command is running")

// Signal sends sig to job's process group, the terminal's foreground
// group, if job is still the one running. When that group is the shell's
// own (a builtin such as a `while` loop runs), the shell gets SIGINT,
// whatever sig was asked: that is what interrupts a builtin, and any other
// signal would end the session rather than the command. The shell is only
// interrupted while it executes job's line — after the line's start record
// and before its prompt record — never while it reads a line or waits for
// the next one, where an interrupt would abandon or disturb another
// command. An interrupt asked for before the start record is sent when it
// arrives. It returns the signal sent (or to be sent).
func (s *Session) Signal(job *Job, sig unix.Signal) (unix.Signal, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.job != job || job == nil || s.closing || s.state == StateExited {
		return 0, ErrNoForeground
	}
	pgrp, err := s.foreground()
	if err != nil {
		return 0, err
	}
	if pgrp > 0 && pgrp != s.pid {
		if err := unix.Kill(-pgrp, sig); err != nil && err != unix.ESRCH {
			return 0, err
		}
		s.log.Debug().Int("pgrp", pgrp).Str("signal", unix.SignalName(sig)).Msg("signaled")
		s.recheck(job, pgrp, sig)
		return sig, nil
	}
	if !job.started {
		job.pendingINT = true
		return unix.SIGINT, nil
	}
	if !s.interruptSoon(job) {
		return 0, ErrNoForeground
	}
	return unix.SIGINT, nil
}

// recheck covers a signal that reached a foreground group just as it
// ended (between two commands of a line, the terminal still names the
// last one): a moment later, if the command still runs under another
// foreground group, the signal is delivered again, once. Called with mu
// held.
func (s *Session) recheck(job *Job, sent int, sig unix.Signal) {
	time.AfterFunc(30*time.Millisecond, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.job != job || s.closing || s.state == StateExited {
			return
		}
		pgrp, err := s.foreground()
		switch {
		case err != nil || pgrp == sent:
		case pgrp > 0 && pgrp != s.pid:
			unix.Kill(-pgrp, sig)
		default:
			s.interruptSoon(job)
		}
	})
}

// shellSettle is how long after a line's start record the shell may be
// interrupted: in the first moments it is still setting up the line's
// redirections, and bash, interrupted there, leaves them half undone.
const shellSettle = 30 * time.Millisecond

// interruptSoon interrupts the shell running job's line, now or, early in
// the line, once shellSettle has passed (if the command still runs then).
// Called with mu held.
func (s *Session) interruptSoon(job *Job) bool {
	wait := shellSettle - time.Since(job.startedAt)
	if wait <= 0 {
		return s.interruptShell(job)
	}
	time.AfterFunc(wait, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.job != job || s.closing || s.state == StateExited {
			return
		}
		if pgrp, err := s.foreground(); err == nil && pgrp > 0 && pgrp != s.pid {
			unix.Kill(-pgrp, unix.SIGINT)
			return
		}
		s.interruptShell(job)
	})
	return true
}

// interruptShell sends SIGINT to the shell while it executes job's line.
// It declines when the line's prompt record has been written: the line is
// over and the shell about to wait for the next. Called with mu held.
func (s *Session) interruptShell(job *Job) bool {
	for i := 0; ; i++ {
		if s.lastRecord.Load() >= job.seq {
			return false
		}
		if n, err := s.pendingControl(); err == nil && n == 0 {
			break
		}
		// Bytes are waiting on the control pipe: let the reader take
		// them (it reads without mu) and look again.
		if i == 100 {
			return false
		}
		time.Sleep(time.Millisecond)
	}
	if err := unix.Kill(s.pid, unix.SIGINT); err != nil {
		return false
	}
	s.resync = true
	s.log.Debug().Msg("interrupted the shell")
	return true
}

// pendingControl is how many bytes wait unread on the control pipe.
func (s *Session) pendingControl() (int, error) {
	rc, err := s.ctlR.SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ioErr error
	if err := rc.Control(func(fd uintptr) { n, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCINQ) }); err != nil {
		return 0, err
	}
	return n, ioErr
}

// started records that the shell began executing line seq, and sends an
// interrupt that was asked for before.
func (s *Session) started(seq int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.job
	if j == nil || j.seq != seq || j.started {
		return
	}
	j.started = true
	j.startedAt = time.Now()
	if j.pendingINT {
		j.pendingINT = false
		if pgrp, err := s.foreground(); err == nil && pgrp > 0 && pgrp != s.pid {
			unix.Kill(-pgrp, unix.SIGINT)
		} else {
			s.interruptSoon(j)
		}
	}
}

// foreground is the terminal's foreground process group.
func (s *Session) foreground() (int, error) {
	var pgrp int
	var ioErr error
	err := s.ptmRaw.Control(func(fd uintptr) {
		pgrp, ioErr = unix.IoctlGetInt(int(fd), unix.TIOCGPGRP)
	})
	if err == nil {
		err = ioErr
	}
	return pgrp, err
}

// Kill ends the shell and every process it started at once, if job is
// still the one running (nil: whatever runs). The job completes with the
// shell's status.
func (s *Session) Kill(job *Job) {
	// mu is held throughout, so that no new command can start between the
	// check and the kill (killing takes no lock of the session's).
	s.mu.Lock()
	defer s.mu.Unlock()
	if job != nil && s.job != job {
		return
	}
	s.killTree()
}

func (s *Session) killTree() {
	if !s.tree.kill(2 * time.Second) {
		s.log.Error().Msg("processes of the session survived 2 s of SIGKILL")
	}
}

// Close ends the session: every process it started, the PTY and the pipes.
// It returns when all of them are released; calling it again waits for the
// first call.
func (s *Session) Close() {
	s.mu.Lock()
	if s.closeBegun {
		s.mu.Unlock()
		<-s.closed
		return
	}
	s.closeBegun, s.closing = true, true
	s.mu.Unlock()

	if s.proc != nil {
		s.killTree()
		select {
		case <-s.exited:
		case <-time.After(5 * time.Second):
			s.log.Error().Msg("shell not reaped 5 s after SIGKILL")
		}
	}
	s.closeFiles()
	s.readers.Wait()
	if s.tmpDir != "" {
		os.RemoveAll(s.tmpDir)
	}
	if s.cg != nil {
		// Killed processes leave the group once reaped; give the reaper
		// a moment before removing it.
		s.cg.waitEmpty(time.Second)
		if err := s.cg.remove(); err != nil {
			s.log.Warn().Err(err).Msg("remove the session's cgroup")
		}
	}
	close(s.closed)
	s.log.Debug().Msg("session closed")
}

func (s *Session) closeFiles() {
	for _, f := range []*os.File{s.cmdW, s.ptm, s.ctlR, s.errR, s.errW} {
		if f != nil {
			f.Close()
		}
	}
}

// exitStatusLocked returns the shell's exit code once reaped.
func (s *Session) exitStatusLocked() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exitCode == nil {
		return -1
	}
	return *s.exitCode
}

// ID is the session's id.
func (s *Session) ID() string { return s.id }

// Name is the session's name ("" when it has none).
func (s *Session) Name() string { return s.cfg.Name }

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
}

// Info returns a snapshot of the session.
func (s *Session) Info() Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Info{
		ID: s.id, Name: s.cfg.Name, Shell: s.cfg.Shell, WorkingDir: s.cwd,
		State: s.state, Created: s.created, LastUsed: s.lastUsed,
		CommandsRun: s.commands, PID: s.pid, Timeout: s.cfg.Timeout,
		Rows: s.cfg.Rows, Cols: s.cfg.Cols, ExitCode: s.exitCode,
	}
}
