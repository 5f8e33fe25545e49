package session

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// settle makes sure the shell is reading commands again after it was
// sent SIGINT: an interrupt that reaches a shell just as it finishes a
// line makes it drop the next line it reads, and bash interrupted while
// it undoes a line's redirections can leave fd 3 or 4 closed. A line that
// reopens those two if need be (the terminal, and the stderr pipe from the
// spare copy the shell was given as fd 5; reopening it through
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
		line := []byte(s.dialect.seqVar(s.nonce) + strconv.FormatInt(j.seq, 10) +
			"; { command : <&3; } 2>/dev/null || exec 3<>/dev/tty; { command : >&4; } 2>/dev/null || exec 4>&5\n")
		s.mu.Unlock()
		s.cmdW.Write(line)
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
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runs(job) {
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
func (s *Session) recheck(job *Line, sent int, sig unix.Signal) {
	job.after(30*time.Millisecond, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.runs(job) {
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

// after runs f after d unless the job has completed by then: the timer
// is the job's, stopped when it completes. Called with Session.mu held.
func (j *Line) after(d time.Duration, f func()) {
	j.later = append(j.later, time.AfterFunc(d, f))
}

// shellSettle is how long after a line's start record the shell may be
// interrupted: in the first moments it is still setting up the line's
// redirections, and bash, interrupted there, leaves them half undone.
const shellSettle = 30 * time.Millisecond

// interruptSoon interrupts the shell running job's line, now or, early in
// the line, once shellSettle has passed (if the command still runs then).
// Called with mu held.
func (s *Session) interruptSoon(job *Line) bool {
	wait := shellSettle - time.Since(job.startedAt)
	if wait <= 0 {
		return s.interruptShell(job)
	}
	job.after(wait, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.interruptCommand(job) {
			s.interruptShell(job)
		}
	})
	return true
}

// interruptShell sends SIGINT to the shell while it executes job's line.
// It declines when the line's prompt record has been written: the line is
// over and the shell about to wait for the next. Called with mu held,
// which it lets go while it waits for the control pipe to drain.
func (s *Session) interruptShell(job *Line) bool {
	for i := 0; ; i++ {
		if s.lastRecord.Load() >= job.seq {
			return false
		}
		if n, err := s.pendingControl(); err == nil && n == 0 {
			break
		}
		// Bytes are waiting on the control pipe: let the reader take
		// them (it reads without mu) and look again, without holding mu
		// while waiting.
		if i == 100 {
			return false
		}
		s.mu.Unlock()
		time.Sleep(time.Millisecond)
		s.mu.Lock()
		if !s.runs(job) {
			return false
		}
	}
	if err := unix.Kill(s.pid, unix.SIGINT); err != nil {
		return false
	}
	s.resync = true
	s.watchInterrupt(job)
	s.chaseForeground(job)
	s.log.Debug().Msg("interrupted the shell")
	return true
}

// chaseWindow is how long after interrupting the shell its line's next
// command is watched for becoming the terminal's foreground group.
const chaseWindow = time.Second

// chaseForeground covers an interrupt that reached the shell just after it
// forked the line's next command, before the child made itself the
// terminal's foreground group: the shell, waiting for that child, holds
// the interrupt until the child ends, and the child never gets it (a
// cancel of `echo started; sleep 30` at that moment waited for the
// watchdog, which ended the session). So for chaseWindow the foreground
// is looked at every 10 ms while the line runs; once it is a command's
// group, that group gets SIGINT too. Called with mu held.
func (s *Session) chaseForeground(job *Line) {
	until := time.Now().Add(chaseWindow)
	var t *time.Timer
	t = time.AfterFunc(10*time.Millisecond, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if !s.interruptCommand(job) && time.Now().Before(until) {
			t.Reset(10 * time.Millisecond)
		}
	})
	job.later = append(job.later, t)
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
		if pgrp := s.commandGroup(); pgrp > 0 {
			unix.Kill(-pgrp, unix.SIGINT)
		} else {
			s.interruptSoon(j)
		}
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
// Called with mu held.
func (s *Session) interruptCommand(job *Line) bool {
	if !s.runs(job) {
		return true
	}
	if pgrp := s.commandGroup(); pgrp > 0 {
		unix.Kill(-pgrp, unix.SIGINT)
		return true
	}
	return false
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
