package session

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/trl-project/trl/internal/rawio"
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

// ErrEndedAfterCommand marks the cause of a session ended just after a
// command that ended by itself but left the shell unable to run another
// (checkLimits): that command's status is its own.
var ErrEndedAfterCommand = errors.New("ended after the command")

// afterCommand is such a cause; its text is the cause's own.
type afterCommand struct{ error }

func (e afterCommand) Unwrap() error        { return e.error }
func (e afterCommand) Is(target error) bool { return target == ErrEndedAfterCommand }

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

// Reaped closes when the shell has been reaped and what it wrote before
// has been delivered; after Ended, unless the shell cannot be reaped.
func (s *Session) Reaped() <-chan struct{} { return s.exited }

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

// lineFDs is how many descriptors (0-4) the shell must be able to put
// back after a command line; a limit below it leaves it without some
// (see checkLimits).
const lineFDs = 5

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
	if err := rawio.GetRlimit(s.pid, unix.RLIMIT_NOFILE, &lim); err != nil || lim.Cur >= minNoFile || lim.Cur >= s.noFile.Cur {
		return nil
	}
	if lim.Cur < lineFDs {
		// The shell could not put back the terminal and the stderr pipe
		// (fds 3 and 4: zsh, dash) or, for bash, its own 0-2 (the record
		// then comes on the stderr pipe, strayRecord): every later
		// command would fail, silently. Restoring the limit cannot give
		// them back.
		return lostDescriptors(lim.Cur)
	}
	want := s.noFile
	if err := unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, &want, nil); err == nil {
		s.log.Info().Uint64("was", lim.Cur).Msg("a command lowered the shell's open-file limit; restored")
		return nil
	}
	return fmt.Errorf("%w: a command lowered the shell's open-file limit to %d (ulimit -n), too few to run commands; ended", ErrUnresponsive, lim.Cur)
}

// lostDescriptors is the cause of a session whose shell could not put
// back the descriptors its command line moved, its limit being limit.
func lostDescriptors(limit uint64) error {
	return fmt.Errorf("%w: a command lowered the shell's open-file limit to %d (ulimit -n), below the %d descriptors the shell must put back after each command; it lost them and was ended", ErrUnresponsive, limit, lineFDs)
}

// strayRecord looks for the shell's own prompt record in p, bytes from
// the stderr pipe. The shell prints it there when it could not put back
// its own descriptors after a line (bash after `ulimit -n 3`, which then
// reads its commands from the terminal): the session cannot run another
// command and is ended, and what p holds from the record on is not the
// command's and is dropped. Only a record as the shell expands it counts
// (numbers for the sequence and status; a listing of the shell's
// variables shows PS1 unexpanded), and only while the shell's open-file
// limit says it lost them: a command may print its own prompt expanded
// (`echo "${PS1@P}" >&2`), which is its output like any other. Called
// with ioMu held.
func (s *Session) strayRecord(p []byte) []byte {
	recs, at := s.stray.scan(p)
	if len(recs) == 0 {
		return p
	}
	var lim unix.Rlimit
	if err := unix.Prlimit(s.pid, unix.RLIMIT_NOFILE, nil, &lim); err != nil || lim.Cur >= lineFDs {
		return p
	}
	s.endWith(lostDescriptors(lim.Cur))
	if at >= 0 {
		return p[:at]
	}
	return p
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
			s.endWith(fmt.Errorf("%w: the shell reads command lines without running them (set -n, or a DEBUG trap that skips commands under extdebug?) and was ended", ErrUnresponsive))
		}
		return 0
	})
}
