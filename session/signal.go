package session

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Who signals a line, and when.
//
// exec.Job's supervisor decides which signals a command gets: what a
// cancel asks for, SIGINT at its deadline, SIGKILL a grace later, then
// the end of the session (exec/job.go). Signal, below, delivers one of
// them. Which process it must reach is the shell's business, and so are
// the few moments later at which a delivery is looked at again, because
// a shell hands its terminal from one process group to the next without
// telling anyone:
//
//   - recheck: a signal that reached a group just as it ended (the
//     terminal still named the line's last command) goes again, once,
//     recheckAfter later, to whatever group then holds the terminal;
//   - an interrupt asked for before the shell began the line is sent when
//     its start record arrives, and the shell is not interrupted within
//     shellSettle of that (interruptSoon);
//   - chase: after the shell itself was interrupted, its line's next
//     command is looked for every chaseEvery, for chaseWindow
//     (chaseForeground);
//   - and the shell's own health: a shell that does not answer an
//     interrupt within cancelGrace, or reads lines without running them,
//     ends the session (watchInterrupt, checkDropped in end.go).
//
// All of that delayed work is scheduled on the session's one follower
// goroutine (followup.go), never on timers of its own; it acts only for
// the line it was made for, and is dropped when that line ends. It stays
// in the session rather than in the supervisor because what to do and
// when depends on what only the session sees (the terminal's foreground
// group, the shell's start and prompt records, the control pipe), and
// because Session.Signal is complete by itself: whoever calls it (the
// supervisor, the session's own tests) gets the signal delivered without
// running a schedule of the session's.
//
// No lock is held while a signal is sent. What to send is decided under
// mu (the line still runs, the shell has not finished it); mu is let go;
// the signal goes. What holding mu across the send used to guarantee —
// that a signal decided for one line never reaches the next — is kept by
// counting the sends under way (s.sending): a new line is not written to
// the shell (Start, runOwn) while one is.

// settle makes sure the shell is reading commands again after it was
// sent SIGINT: an interrupt that reaches a shell just as it finishes a
// line makes it drop the next line it reads, and bash interrupted while
// it undoes a line's redirections can leave fd 3 or 4 closed. A line that
// reopens those two if need be (the terminal, and the stderr pipe from the
// spare copy bash and zsh are given as fd 5; reopening it through
// /proc/<daemon>/fd fails under hidepid) is sent, and sent again under a new sequence
// number until its prompt record comes back; only then does the real
// command follow. Called with mu held; it releases mu while it waits,
// holding the session busy.
func (s *Session) settle() error {
	for attempt := 0; attempt < 10; attempt++ {
		s.seq++
		j := &Line{seq: s.seq, sink: discard{}, done: make(chan struct{}), started: true}
		s.ioMu.Lock()
		s.job = j
		s.ioMu.Unlock()
		s.state = StateBusy
		line := []byte(s.dialect.seqVar(s.nonce, strconv.FormatInt(j.seq, 10)) + "; { command : <&3; } 2>/dev/null || exec 3<>/dev/tty")
		if s.dialect.spareStderr {
			line = append(line, "; { command : >&4; } 2>/dev/null || exec 4>&5"...)
		}
		if s.dialect.forget != nil {
			line = append(line, s.dialect.forget(s.nonce)...)
		}
		line = append(line, '\n')
		s.mu.Unlock()
		if err := s.writeLine(line); err != nil {
			s.log.Debug().Err(err).Msg("write settle line")
			s.channelBroken(err)
		}
		select {
		case <-j.Done():
			s.mu.Lock()
			if s.state == StateExited || s.closing {
				return s.exitedErr()
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
			return s.exitedErr()
		}
		s.log.Debug().Int64("seq", j.seq).Msg("shell dropped a line after an interrupt; sending another")
	}
	// The shell no longer answers: end it, so that the session says
	// exited rather than staying busy for ever.
	s.mu.Unlock()
	s.endWith(fmt.Errorf("%w: the shell stopped reading commands after an interrupt (settle gave up) and was ended", ErrUnresponsive))
	s.mu.Lock()
	return s.exitedErr()
}

// discard is the sink of lines trl sends for itself.
type discard struct{}

func (discard) Output(Stream, []byte) {}

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
func (s *Session) Signal(job *Line, sig unix.Signal) (unix.Signal, error) {
	pgrp, ferr := s.foreground() // an ioctl: read before mu is taken
	s.mu.Lock()
	switch {
	case !s.runs(job):
		s.mu.Unlock()
		return 0, ErrNoForeground
	case ferr != nil:
		s.mu.Unlock()
		return 0, ferr
	case pgrp > 0 && pgrp != s.pid:
		s.sending++
		s.mu.Unlock()
		err := s.sendSignal(-pgrp, sig)
		s.sent()
		if err != nil && err != unix.ESRCH {
			return 0, err
		}
		s.log.Debug().Int("pgrp", pgrp).Str("signal", unix.SignalName(sig)).Msg("signaled")
		// Read after the send: if the group's leader still runs the
		// shell's program now, the signal reached it before it became
		// its command (see recheck).
		s.recheck(job, pgrp, sig, s.runsShellImage(pgrp))
		return sig, nil
	case !job.started:
		job.pendingINT = true
		s.mu.Unlock()
		return unix.SIGINT, nil
	}
	s.mu.Unlock()
	if !s.interruptSoon(job) {
		return 0, ErrNoForeground
	}
	return unix.SIGINT, nil
}

// recheckAfter is how long after a signal to a group the terminal is
// looked at again (see recheck).
const recheckAfter = 30 * time.Millisecond

// recheck covers two ways a signal to the foreground group can miss the
// command:
//
//   - it reached the group just as it ended (between two commands of a
//     line the terminal still names the last one): a moment later, if the
//     command still runs under another foreground group, the signal is
//     delivered again, once;
//   - it reached the group's leader between the shell's fork and its exec
//     of the command (preExec: the leader still ran the shell's program
//     after the send). The shell's copy may handle the signal itself and
//     then exec the command, which never sees it (bash does: a cancel
//     issued as `sleep 30` starts left it sleeping). Once the leader runs
//     another program, the signal is delivered again, once; a leader
//     that stays the shell (a subshell, a script of the same shell) is
//     left after a few looks.
func (s *Session) recheck(job *Line, sent int, sig unix.Signal, preExec bool) {
	looks := 0
	s.follow(job, recheckAfter, func() time.Duration {
		pgrp, err := s.foreground()
		switch {
		case err != nil:
		case pgrp == sent:
			if !preExec {
				break
			}
			if s.runsShellImage(sent) {
				if looks++; looks < 4 {
					return recheckAfter
				}
				break
			}
			s.signalLine(job, -pgrp, sig)
		case pgrp > 0 && pgrp != s.pid:
			s.signalLine(job, -pgrp, sig)
		default:
			s.interruptSoon(job)
		}
		return 0
	})
}

// runsShellImage reports whether pid runs the same program as the
// session's shell: a child the shell forked that has not yet exec'd its
// command.
func (s *Session) runsShellImage(pid int) bool {
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && exe == s.shellExe
}

// Replaced reports whether the session's shell process now runs another
// program image, command line or start-up environment than trl started
// it with (a command ran `exec bash`, or `exec /bin/sh -i`, whose
// environment is the shell's exports, never exactly trl's): what reads
// the terminal at the shell's pid is then no `read` builtin of trl's
// shell but a shell at its own prompt. When /proc cannot be read it
// reports true: the reader is then checked as a shell.
func (s *Session) Replaced() bool {
	base := "/proc/" + strconv.Itoa(s.pid) + "/"
	cmdline, err := os.ReadFile(base + "cmdline")
	if err != nil {
		return true
	}
	environ, err := os.ReadFile(base + "environ")
	if err != nil {
		return true
	}
	return !s.runsShellImage(s.pid) || string(cmdline) != strings.Join(s.argv, "\x00")+"\x00" ||
		string(environ) != strings.Join(s.startEnv, "\x00")+"\x00"
}

// shellSettle is how long after a line's start record the shell may be
// interrupted: in the first moments it is still setting up the line's
// redirections, and bash, interrupted there, leaves them half undone.
const shellSettle = 30 * time.Millisecond

// interruptSoon interrupts the shell running job's line, now or, early in
// the line, once shellSettle has passed (if the command still runs then).
// It reports false when job no longer runs or the shell could not be
// interrupted now.
func (s *Session) interruptSoon(job *Line) bool {
	s.mu.Lock()
	if !s.runs(job) {
		s.mu.Unlock()
		return false
	}
	wait := shellSettle - time.Since(job.startedAt)
	s.mu.Unlock()
	if wait <= 0 {
		return s.interruptShell(job)
	}
	s.follow(job, wait, func() time.Duration {
		if !s.interruptCommand(job) {
			s.interruptShell(job)
		}
		return 0
	})
	return true
}

// interruptShell sends SIGINT to the shell while it executes job's line.
// It declines when the line's prompt record has been written: the line is
// over and the shell about to wait for the next. It waits, holding no
// lock, for the control pipe to drain first.
func (s *Session) interruptShell(job *Line) bool {
	for i := 0; ; i++ {
		if s.lastRecord.Load() >= job.seq {
			return false
		}
		if n, err := s.pendingControl(); err == nil && n == 0 {
			break
		}
		// Bytes are waiting on the control pipe: let the reader take
		// them and look again.
		if i == 100 {
			return false
		}
		time.Sleep(time.Millisecond)
		s.mu.Lock()
		runs := s.runs(job)
		s.mu.Unlock()
		if !runs {
			return false
		}
	}
	s.mu.Lock()
	if !s.runs(job) || s.lastRecord.Load() >= job.seq {
		s.mu.Unlock()
		return false
	}
	s.sending++
	s.mu.Unlock()
	err := s.sendSignal(s.pid, unix.SIGINT)
	s.mu.Lock()
	watch := err == nil && !job.watched
	if err == nil {
		// Set as the send is counted done: the next line, which waits
		// for that, finds the shell to be settled first.
		s.resync = true
		job.watched = true
	}
	s.sentLocked()
	s.mu.Unlock()
	if err != nil {
		return false
	}
	if watch {
		s.watchInterrupt(job)
	}
	s.chaseForeground(job)
	s.log.Debug().Msg("interrupted the shell")
	return true
}

// chaseWindow is how long after interrupting the shell its line's next
// command is watched for becoming the terminal's foreground group, every
// chaseEvery.
const (
	chaseWindow = time.Second
	chaseEvery  = 10 * time.Millisecond
)

// chaseForeground covers an interrupt that reached the shell just after it
// forked the line's next command, before the child made itself the
// terminal's foreground group: the shell, waiting for that child, holds
// the interrupt until the child ends, and the child never gets it (a
// cancel of `echo started; sleep 30` at that moment waited for the
// watchdog, which ended the session). So for chaseWindow the foreground
// is looked at every chaseEvery while the line runs; once it is a
// command's group, that group gets SIGINT too.
func (s *Session) chaseForeground(job *Line) {
	until := time.Now().Add(chaseWindow)
	s.follow(job, chaseEvery, func() time.Duration {
		if s.interruptCommand(job) || !time.Now().Before(until) {
			return 0
		}
		return chaseEvery
	})
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

// started records that the shell began executing line seq; an interrupt
// asked for before is handed to the follower, which sends it (the reader
// that calls this sends no signal).
func (s *Session) started(seq int64) {
	s.mu.Lock()
	j := s.job
	if j == nil || j.seq != seq || j.started {
		s.mu.Unlock()
		return
	}
	j.started = true
	j.startedAt = time.Now()
	pending := j.pendingINT
	j.pendingINT = false
	s.mu.Unlock()
	if pending {
		s.follow(j, 0, func() time.Duration {
			if !s.interruptCommand(j) {
				s.interruptSoon(j)
			}
			return 0
		})
	}
}

// runs reports whether job is the line the shell runs now and the session
// is not closing: only then may a signal be sent on its behalf. Called
// with mu held.
func (s *Session) runs(job *Line) bool {
	return job != nil && s.job == job && !s.closing && s.state != StateExited
}

// commandGroup is the terminal's foreground group when a command holds it,
// 0 when the shell does (a builtin runs, or it is between commands) or
// the terminal cannot say.
func (s *Session) commandGroup() int {
	if pgrp, err := s.foreground(); err == nil && pgrp > 0 && pgrp != s.pid {
		return pgrp
	}
	return 0
}

// interruptCommand sends SIGINT to the command that holds the terminal for
// job. It reports whether that settles it: the job no longer runs, or its
// command got the signal; false means the shell holds the terminal.
func (s *Session) interruptCommand(job *Line) bool {
	if pgrp := s.commandGroup(); pgrp > 0 {
		s.signalLine(job, -pgrp, unix.SIGINT)
		return true
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !s.runs(job)
}

// signalLine sends sig to pid (negative: a process group) for job if job
// still runs: checked under mu, sent once mu is let go. It reports
// whether it was sent, and the error of sending it.
func (s *Session) signalLine(job *Line, pid int, sig unix.Signal) (bool, error) {
	s.mu.Lock()
	if !s.runs(job) {
		s.mu.Unlock()
		return false, nil
	}
	s.sending++
	s.mu.Unlock()
	err := s.sendSignal(pid, sig)
	s.sent()
	return true, err
}

// sent counts a send under way (s.sending, raised under mu when the send
// was decided) as done, and wakes a line waiting to be written once none
// is under way.
func (s *Session) sent() {
	s.mu.Lock()
	s.sentLocked()
	s.mu.Unlock()
}

// sentLocked is sent, called with mu held.
func (s *Session) sentLocked() {
	s.sending--
	if s.sending == 0 {
		s.sendsDone.Broadcast()
	}
}

// awaitSends waits until no signal decided for an earlier line is still
// on its way, so that none can reach the line about to be written.
// Called with mu held, which it lets go while it waits.
func (s *Session) awaitSends() {
	for s.sending > 0 {
		s.sendsDone.Wait()
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

// sendSignal sends sig to pid (negative: a process group): every signal
// the session sends for a line, and SIGWINCH, goes through here, with no
// lock held.
func (s *Session) sendSignal(pid int, sig unix.Signal) error {
	if h := s.sigHook.Load(); h != nil {
		(*h)(pid, sig)
	}
	return unix.Kill(pid, sig)
}
