package session

import (
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
)

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
	s.newScreen()
	if err := s.launch(opts.BaseEnv, opts.Subreaper); err != nil {
		return nil, err
	}
	startTimeout := opts.startTimeout()
	select {
	case <-s.ready:
		return s, nil
	case <-s.exited:
		code := s.exitStatus()
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
		// Commands arrive through a pipe, so echo never shows them; it
		// shows what exec.input types, as a terminal does, and tells a
		// line prompt from a password prompt (SPEC §8). ECHOCTL is off so
		// that a typed control key does not print as ^X.
		t.Lflag |= unix.ECHO | unix.ECHOE | unix.ECHOK
		t.Lflag &^= unix.ECHONL | unix.ECHOCTL
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
