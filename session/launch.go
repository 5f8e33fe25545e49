package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/trl-project/trl/internal/pollpty"
	"github.com/trl-project/trl/internal/termwait"
)

// launchSession starts the shell and returns without waiting for it:
// the caller may do its own work while the shell starts, then calls
// awaitStart (or Close). The session owns the lease from here, on every
// path.
func launchSession(id string, cfg Config, opts Options, log zerolog.Logger, l *lease) (*Session, error) {
	s := &Session{
		id:       id,
		cfg:      cfg,
		dialect:  dialectFor(cfg.Shell),
		nonce:    NewID("", 8),
		created:  time.Now().UTC(),
		log:      log.With().Str("session", id).Logger(),
		state:    StateIdle,
		cwd:      cfg.WorkingDir,
		ready:    make(chan struct{}),
		exited:   make(chan struct{}),
		closed:   make(chan struct{}),
		killed:   make(chan struct{}),
		ctlEnded: make(chan struct{}),

		launched: make(chan struct{}),
		lease:    l,
		limits:   cfg.Limits,
	}
	s.stray = newRecordParser(s.nonce)
	s.ended, s.endSession = context.WithCancelCause(context.Background())
	s.sendsDone = sync.NewCond(&s.mu)
	s.lastUsed = s.created
	s.newScreen()
	for _, v := range cfg.Secrets {
		s.named = append(s.named, secretParts([]byte(v))...)
	}
	s.remember(cfg.Masks)
	if err := s.launch(opts.BaseEnv, opts.Subreaper); err != nil {
		s.releaseLease()
		return nil, err
	}
	if s.enterErr != nil {
		s.Close()
		return nil, errorf(ErrInvalid, "limits cannot be set: %v", s.enterErr)
	}
	return s, nil
}

// awaitStart waits for the first prompt record of a shell launchSession
// started; on failure it closes the session.
func (s *Session) awaitStart(opts Options) error {
	startTimeout := opts.startTimeout()
	t := time.NewTimer(startTimeout)
	defer t.Stop()
	probe := time.NewTicker(silentProbe)
	defer probe.Stop()
	silent := 0
	for {
		select {
		case <-s.ready:
			return nil
		case <-s.exited:
			code := s.exitStatus()
			s.Close()
			return errorf(ErrNotShell, "%s exited during start-up with status %d; is it a POSIX shell (sh, dash, bash, zsh)?", s.cfg.Shell, code)
		case <-t.C:
			s.Close()
			if knownShell(s.cfg.Shell) {
				// A shell we know that did not come up in time: the machine
				// is overloaded or out of something, not the caller's fault.
				return errorf(ErrStart, "%s printed no prompt record within %s; the machine may be overloaded: retry, or raise the start-up timeout", s.cfg.Shell, startTimeout)
			}
			return errorf(ErrNotShell, "%s printed no prompt record within %s: it does not behave as an interactive POSIX shell (sh, dash, bash, zsh) started with no rc files; non-shells such as python3 are refused", s.cfg.Shell, startTimeout)
		case <-probe.C:
			if !s.readsSilently() {
				silent = 0
				continue
			}
			if silent++; silent < silentProbes {
				continue
			}
			select {
			case <-s.ready:
				return nil
			default:
			}
			s.Close()
			return errorf(ErrNotShell, "%s read its set-up line and waits for more input without printing a prompt record: it does not behave as an interactive POSIX shell (sh, dash, bash, zsh) started with no rc files; non-shells such as python3 are refused", s.cfg.Shell)
		}
	}
}

// A program that reads the set-up line and then waits to read more,
// having printed no prompt record, is no shell: a shell prints its prompt
// (the record) before it reads its next line. Start-up looks for that
// every silentProbe and refuses once silentProbes looks in a row saw it,
// rather than after the whole start-up timeout (python3 took 10 s to be
// refused). A program that waits some other way (epoll, as node does) is
// still refused only at the timeout.
const (
	silentProbe  = 100 * time.Millisecond
	silentProbes = 3
)

// readsSilently reports whether the shell has read all it was sent,
// has written nothing the control reader has not yet taken, and is
// blocked reading its command pipe (fd 0). False when any of it cannot
// be told.
func (s *Session) readsSilently() bool {
	return queued(s.cmdW, unix.TIOCOUTQ) == 0 && queued(s.ctlR, unix.TIOCINQ) == 0 && termwait.ReadsFD(s.pid, 0)
}

// queued is how many bytes wait on f, as ioctl req counts them: TIOCINQ
// (FIONREAD, SIOCINQ), those sent to f not yet read (a pipe or socket);
// TIOCOUTQ (SIOCOUTQ), those socket f sent that its peer has not read.
// -1 when that cannot be read.
func queued(f *os.File, req uint) int {
	rc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	if err := rc.Control(func(fd uintptr) {
		if v, err := unix.IoctlGetInt(int(fd), req); err == nil {
			n = v
		}
	}); err != nil {
		return -1
	}
	return n
}

// knownShell reports whether path (after symlinks) is a shell trl knows
// to start within its start-up timeout on a machine that is not starved.
func knownShell(path string) bool {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	switch filepath.Base(path) {
	case "sh", "dash", "bash", "zsh", "ash", "ksh", "mksh", "busybox":
		return true
	}
	return false
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
	ptm, pts, err := pollpty.Open()
	if err != nil {
		return err
	}
	if s.modes, err = configureTerminal(pts, s.cfg.Rows, s.cfg.Cols); err != nil {
		ptm.Close()
		pts.Close()
		return err
	}
	cmdW, cmdR, err := shellChannel()
	if err != nil {
		ptm.Close()
		pts.Close()
		return err
	}
	toClose = append(toClose, cmdR)
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		ptm.Close()
		pts.Close()
		cmdW.Close()
		return err
	}
	toClose = append(toClose, ctlW)
	errR, errW, err := os.Pipe()
	if err != nil {
		ptm.Close()
		pts.Close()
		cmdW.Close()
		ctlR.Close()
		return err
	}
	toClose = append(toClose, errW)
	// From here on, Close releases what we hold. The daemon keeps its own
	// copy of the slave side (see restoreTerminal).
	s.ptm, s.pts, s.cmdW, s.ctlR, s.errR = ptm, pts, cmdW, ctlR, errR
	s.cmdRaw, _ = cmdW.SyscallConn() // nil: writeLine writes the ordinary way
	fail := func(e error) error {
		s.closeFiles()
		return e
	}
	if s.ptmRaw, err = ptm.SyscallConn(); err != nil {
		return fail(err)
	}
	if s.ptsRaw, err = pts.SyscallConn(); err != nil {
		return fail(err)
	}
	if s.errRaw, err = errR.SyscallConn(); err != nil {
		return fail(err)
	}
	if s.tmpDir, err = os.MkdirTemp("", tmpPrefix(s.id)); err != nil {
		return fail(fmt.Errorf("make session temp dir: %w", err))
	}
	env := s.cfg.Env
	if len(s.cfg.Secrets) > 0 {
		env = make(map[string]string, len(s.cfg.Env)+len(s.cfg.Secrets))
		for k, v := range s.cfg.Env {
			env[k] = v
		}
		for k, v := range s.cfg.Secrets {
			env[k] = v
		}
	}
	if l := s.lease; l != nil {
		if err := s.isolateFiles(pts); err != nil {
			os.RemoveAll(s.tmpDir)
			return fail(errorf(ErrStart, "the shell did not start: prepare the isolated session: %v", err))
		}
		if _, ok := env["HOME"]; !ok {
			prev := env
			env = make(map[string]string, len(prev)+1)
			for k, v := range prev {
				env[k] = v
			}
			env["HOME"] = l.home
		}
	}

	if s.dialect.source {
		// Under isolation isolateFiles made it, readable by the session's
		// uid; otherwise it is made here, the daemon's own.
		if s.cmdF, err = os.OpenFile(s.cmdFile(), os.O_CREATE|os.O_WRONLY, 0o600); err != nil {
			os.RemoveAll(s.tmpDir)
			return fail(fmt.Errorf("make the command file: %w", err))
		}
	}

	argv := append([]string{s.cfg.Shell}, s.dialect.args...)
	attr := &os.ProcAttr{
		Dir: s.cfg.WorkingDir,
		Env: shellEnv(baseEnv, env, s.id),
		// The shell's own stdout is the control pipe, like its stderr:
		// every command line re-points stdout at the terminal (fd 3), so
		// what the shell itself prints between commands — a DEBUG trap
		// firing for trl's own commands, xtrace sent to fd 1 — reaches no
		// command's output (the record parser logs it as noise), and the
		// line's start record needs no redirection of its own.
		// fd 5, for bash and zsh, is a spare copy of the stderr pipe
		// (see settle and dialect.spareStderr).
		Files: []*os.File{cmdR, ctlW, ctlW, pts, errW},
		// Pdeathsig: if the daemon dies, so does the shell (its jobs
		// then get the terminal's hang-up).
		Sys: &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 3, Pdeathsig: syscall.SIGKILL},
	}
	if s.dialect.spareStderr {
		attr.Files = append(attr.Files, errW)
	}
	if s.dialect.name == "bash" {
		// An interactive bash loads its history file as it starts, before
		// the init line unsets HISTFILE: every session of a daemon that
		// is not isolated began with the daemon user's ~/.bash_history
		// (an operator's commands, secrets typed among them), which a
		// command could list with `history`. Commands never see this
		// HISTFILE: the init line unsets it.
		attr.Env = append(attr.Env, "HISTFILE=/dev/null")
	}
	s.startEnv = attr.Env
	if s.lease != nil {
		attr.Sys.Credential = s.lease.credential()
	}
	s.cg = newCgroup(s.id)
	if err := s.setLimits(); err != nil {
		os.RemoveAll(s.tmpDir)
		s.removeGroups()
		return fail(err)
	}
	if s.cg != nil {
		attr.Sys.UseCgroupFD = true
		attr.Sys.CgroupFD = int(s.cg.fd.Fd())
	}
	startShell := func() (*os.Process, error) {
		proc, err := os.StartProcess(s.cfg.Shell, argv, attr)
		if err != nil && s.cg != nil && s.lim == nil {
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
	run := func() (err error) {
		if subreaper {
			s.status, err = theReaper.spawn(s.stopped, func() (int, error) {
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
		return err
	}
	if l := s.lease; l != nil {
		// Its own /tmp, /var/tmp, /dev/shm and IPC (namespace.go).
		err = inNamespaces([]string{s.tmpDir, l.home, s.cfg.WorkingDir}, func() error {
			if err := s.root.openHere(); err != nil {
				return err
			}
			return run()
		}, s.exited)
		if err != nil {
			s.root.drop()
		}
	} else {
		err = run()
	}
	if err != nil {
		os.RemoveAll(s.tmpDir)
		s.removeGroups()
		return fail(errorf(ErrStart, "the shell did not start: start %s: %v", s.cfg.Shell, err))
	}
	s.proc, s.pid, s.argv = proc, proc.Pid, argv
	// The shell has its copies: ours of its ends go now, so that a shell
	// that exits fails the set-up line's write (EPIPE) rather than leaving
	// it blocked on our own copy of its end.
	for _, f := range toClose {
		f.Close()
	}
	toClose = nil
	s.shellExe, _ = os.Readlink("/proc/" + strconv.Itoa(proc.Pid) + "/exe")
	unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, nil, &s.noFile)

	s.tree = newTree(proc.Pid, s.id, s.cg)
	s.log = s.log.With().Int("pid", proc.Pid).Logger()
	close(s.launched)

	s.readers.Add(3)
	go s.reap()
	go s.readControl()
	go s.pump(s.ptmRaw, Stdout)
	go s.pump(s.errRaw, Stderr)

	if s.v1 != nil {
		// Before its first line: the shell has started nothing yet.
		if s.enterErr = s.v1.enter(s.pid); s.enterErr != nil {
			return nil // start closes the session and says why
		}
	}
	// The set-up line holds session.create's env, which can be larger
	// than the command channel's buffer: a program that does not read it
	// would hold the write, and with it the create and the daemon's
	// shutdown, for ever. So it is written aside, holding the channel
	// (cmdMu) until done so that a line sent while the shell starts
	// (startWithState's) follows it; a shell that reads it ends the
	// write, and awaitStart's timeout closes the session, which fails it
	// (closeFiles).
	initLine := []byte(exportLater(s.cfg.Env) + s.dialect.init(s.nonce) + "\n")
	s.cmdMu.Lock()
	go func() {
		defer s.cmdMu.Unlock()
		if _, err := cmdW.Write(initLine); err != nil {
			s.log.Debug().Err(err).Msg("write init line")
		}
	}()
	return nil
}

// shellChannel makes the command channel the shell reads its lines from
// (its fd 0): a connected pair of stream sockets rather than a pipe. A
// pipe can be opened again through /proc/<shell pid>/fd/N by any process
// of the session's uid, so a command could write lines of its own into
// the shell's input, which the shell ran as its next line, unchecked by
// the policy; the kernel does not open a socket through /proc (ENXIO).
// The control channel (the shell's fds 1 and 2) stays a pipe: a socket
// there too costs about 5 µs more per command (BENCHMARKS.md), and what a
// command can write to it is records about its own session's commands,
// which it could mislead about in other ways. Each end is shut down for
// the direction it does not use.
//
// The daemon's end stays blocking, out of Go's poller: the poller watches
// every fd it holds for writability too, and each line the shell read
// from a socket told it so (the kernel wakes a socket's waiters for
// write space whenever its peer reads), waking a daemon thread for
// nothing on every command, just as the shell began to run it. A write
// blocks only while a line longer than the socket's buffer (about 208
// KiB; a command's text is inlined in its line, quoted, so a line can
// reach several times --max-message-bytes) waits for a shell that is not
// reading, e.g. one busy in a trap at its prompt. Closing the session
// shuts the channel down first (closeFiles), which fails such a write at
// once whoever else holds the shell's end; a Close alone would not.
func shellChannel() (daemon, shell *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("make a channel to the shell: %w", err)
	}
	unix.Shutdown(fds[0], unix.SHUT_RD)
	unix.Shutdown(fds[1], unix.SHUT_WR)
	return os.NewFile(uintptr(fds[0]), "trl-channel"), os.NewFile(uintptr(fds[1]), "shell-channel"), nil
}

// Variables that change how the shell itself starts or runs are kept out
// of its start-up environment, whether the daemon's environment or
// session.create's env holds them (see README, Hardening):
//
//   - shellState would change the shell under trl's protocol: TMOUT logs
//     an idle bash out (a hardened host's TMOUT would end every gateway
//     session), SHELLOPTS/BASHOPTS switch on xtrace, vi mode or posix
//     mode, the prompt variables are trl's. From the daemon they are
//     dropped; in session.create's env they are refused. A command may
//     still set them for itself (`export TMOUT=60` in a command, or
//     per-call env), at its own risk.
//   - startupOnly name files a shell reads at start-up (ENV makes dash
//     read an rc file whose aliases could hijack `ls`). From the daemon
//     they are dropped; from session.create's env they are exported only
//     once the shell has started, so commands and their child shells see
//     them but trl's shell does not read them.
var (
	shellState = map[string]bool{
		"TMOUT": true, "SHELLOPTS": true, "BASHOPTS": true, "PROMPT_COMMAND": true,
		"PS0": true, "PS1": true, "PS2": true, "PS4": true, "PROMPT": true, "PROMPT2": true,
		"PROMPT4": true, "RPROMPT": true, "RPROMPT2": true, "RPS1": true, "RPS2": true,
		"POSIXLY_CORRECT": true, "BASH_XTRACEFD": true, "HISTFILE": true, "IGNOREEOF": true,
		// _ is the last argument of the shell's last command; the
		// daemon's own (the program that started it) would make an
		// interactive dash export every command's last argument.
		"_": true,
	}
	startupOnly = map[string]bool{"ENV": true, "BASH_ENV": true, "ZDOTDIR": true}
)

// exportLater is the part of the init line that exports the caller's
// start-up-only variables once the shell runs.
func exportLater(extra map[string]string) string {
	var b strings.Builder
	for _, kv := range sortedEnv(extra) {
		if startupOnly[kv[0]] {
			b.WriteString("export " + kv[0] + "=" + quote(kv[1]) + "; ")
		}
	}
	return b.String()
}

// shellEnv is base, then the defaults SPEC §4 names unless the caller set
// them, then the caller's variables, then trl's own marker; without the
// variables named above.
func shellEnv(base []string, extra map[string]string, id string) []string {
	env := make([]string, 0, len(base)+len(extra)+5)
	set := map[string]bool{}
	for k := range extra {
		set[k] = true
	}
	for _, kv := range base {
		k, _, _ := cutEnv(kv)
		if set[k] || shellState[k] || startupOnly[k] {
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
		if !startupOnly[kv[0]] && !shellState[kv[0]] {
			env = append(env, kv[0]+"="+kv[1])
		}
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
	s.reaped.Store(true)
	s.mu.Unlock()
	s.setCause(ExitedError{Status: code})
	s.logEnd()
	// What the shell wrote to the control pipe as it exited is read
	// before the line completes (exitTailNote). A process it left
	// holding the pipe delays that by exitTailWait at most.
	select {
	case <-s.ctlEnded:
	case <-time.After(exitTailWait):
	}
	s.complete(-1, Status{ExitCode: code, Exited: true})
	s.root.drop() // the namespace ends with its last process
	close(s.exited)
}

// exitTailWait is how long reap waits for the control pipe's end.
const exitTailWait = 100 * time.Millisecond

func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
