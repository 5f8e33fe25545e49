package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Every session ends with a recorded cause (a context.WithCancelCause
// whose first cancel wins): the first thing that decides the session is
// over names why, and whatever follows (the kill, the shell's exit, Close)
// keeps that cause. session.info shows it as end_cause; it is logged once,
// when the shell has been reaped.

// Causes a session can end with. Each is wrapped with detail.
var (
	// ErrDestroyed: session.destroy (or a gateway reaper) ended it.
	ErrDestroyed = errors.New("destroyed")
	// ErrShutdown: the daemon shut down.
	ErrShutdown = errors.New("daemon shut down")
	// ErrShellExited: the shell ended by itself (`exit`, a fatal error).
	ErrShellExited = errors.New("shell exited")
	// ErrEscalation: a command outlived its timeout's SIGINT and SIGKILL.
	ErrEscalation = errors.New("timeout escalation")
	// ErrUnresponsive: the shell no longer answers (ignores interrupts,
	// stopped itself, stopped reading commands, runs none).
	ErrUnresponsive = errors.New("shell stopped answering")
)

// ExitedError is the cause of a session whose shell exited by itself.
type ExitedError struct{ Status int }

func (e ExitedError) Error() string { return fmt.Sprintf("shell exited with status %d", e.Status) }
func (e ExitedError) Unwrap() error { return ErrShellExited }

// cancelGrace is how long a shell that was itself interrupted (for a
// cancel or a timeout) may take to answer before the session is ended:
// a shell that ignores SIGINT, is stopped, or lost its prompt to line
// editing cannot be reached any other way.
const cancelGrace = 5 * time.Second

// Ended closes when the session has ended (EndCause then says why).
func (s *Session) Ended() <-chan struct{} { return s.ended.Done() }

// EndCause is why the session ended, nil while it lives.
func (s *Session) EndCause() error {
	if s.ended.Err() == nil {
		return nil
	}
	return context.Cause(s.ended)
}

// endWith records cause and ends the shell and everything it started.
// Only the first cause is kept. It does not wait for the reaper.
func (s *Session) endWith(cause error) {
	s.setCause(cause)
	s.log.Warn().Err(cause).Msg("ending the session")
	s.kill()
}

// setCause records cause unless one is already recorded.
func (s *Session) setCause(cause error) { s.endSession(cause) }

// logEnd logs the session's end once.
func (s *Session) logEnd() {
	s.logEndOnce.Do(func() {
		s.log.Info().Str("cause", s.EndCause().Error()).Msg("session ended")
	})
}

// stopped is called by the reaper when the shell was stopped (`kill -STOP
// $$`, `suspend`): nothing would continue it, so the session ends.
func (s *Session) stopped(sig unix.Signal) {
	go func() {
		<-s.launched // the reaper may see the stop before launch returns
		s.endWith(fmt.Errorf("%w: the shell was stopped by %s (kill -STOP $$ or suspend) and was ended", ErrUnresponsive, unix.SignalName(sig)))
	}()
}

// watchInterrupt ends the session if job, whose shell was just sent
// SIGINT, has not ended within cancelGrace. Run by the follower; the
// caller gives it each line once.
func (s *Session) watchInterrupt(job *Line) {
	s.follow(job, cancelGrace, func() time.Duration {
		select {
		case <-job.done:
		default:
			s.endWith(fmt.Errorf("%w: the shell did not answer an interrupt within %s and was ended", ErrUnresponsive, cancelGrace))
		}
		return 0
	})
}

// minNoFile is the fewest open files a shell needs to run a command
// line: bash keeps the fds it saves around redirections at 10 and above.
const minNoFile = 64

// checkLimits runs after each command: a command that lowered the
// shell's own open-file limit (`ulimit -n 5`) has left it unable to set up
// the next line's redirections. The launch limit is put back if the
// daemon may; otherwise it returns the cause to end the session with,
// rather than answer every later command with an empty failure or hang.
// Called with mu held (one prlimit when all is well).
func (s *Session) checkLimits() error {
	var lim unix.Rlimit
	if err := unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, nil, &lim); err != nil || lim.Cur >= minNoFile || lim.Cur >= s.noFile.Cur {
		return nil
	}
	want := s.noFile
	if err := unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, &want, nil); err == nil {
		s.log.Info().Uint64("was", lim.Cur).Msg("a command lowered the shell's open-file limit; restored")
		return nil
	}
	return fmt.Errorf("%w: a command lowered the shell's open-file limit to %d (ulimit -n), too few to run commands; ended", ErrUnresponsive, lim.Cur)
}

// dropAfter is how long a line whose start record has not come may
// follow a prompt record for an earlier line (see checkDropped).
const dropAfter = 300 * time.Millisecond

// checkDropped is called when a prompt record arrives for an earlier line
// while job's line has not started: the shell read the line but did not
// run it. A stray re-prompt (the shell interrupted between lines) is
// followed by the line's start record at once; if none has come
// dropAfter later, the shell reads commands without running them (`set
// -n` in dash) and the session ends. Run by the follower; complete gives
// it each line once.
func (s *Session) checkDropped(job *Line) {
	s.follow(job, dropAfter, func() time.Duration {
		s.mu.Lock()
		dropped := s.job == job && !job.started
		s.mu.Unlock()
		if dropped {
			s.endWith(fmt.Errorf("%w: the shell reads command lines without running them (set -n?) and was ended", ErrUnresponsive))
		}
		return 0
	})
}
