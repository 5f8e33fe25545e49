package session

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// lockFree reports whether l can be taken within a second (and lets it go
// again): a lock the caller's own goroutine holds stays held all that
// second, while one another goroutine holds for its own work is let go
// at once.
func lockFree(l sync.Locker, try func() bool) bool {
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if try() {
			l.Unlock()
			return true
		}
	}
	return false
}

// lockLog records what a hook saw happen and, of those, what happened
// with one of the session's locks held (lockFree).
type lockLog struct {
	mu         sync.Mutex
	seen, held []string
}

// note records what, checking mu and ioMu of s at this moment.
func (l *lockLog) note(s *Session, what string) {
	muFree := lockFree(&s.mu, s.mu.TryLock)
	ioFree := lockFree(&s.ioMu, s.ioMu.TryLock)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = append(l.seen, what)
	if !muFree {
		l.held = append(l.held, what+" with mu held")
	}
	if !ioFree {
		l.held = append(l.held, what+" with ioMu held")
	}
}

// get returns copies of what was seen and what was held.
func (l *lockLog) get() (seen, held []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...), append([]string(nil), l.held...)
}

// TestNoLockHeldWhileSignalling: every signal a session sends for a line
// — to a command's process group, to the shell running a builtin, an
// interrupt asked for before the shell began the line (sent when it
// does, or once the shell has settled), SIGWINCH on a resize — is sent
// with neither of the session's locks held. At the moment of each send a
// hook tries, for up to a second, to take mu and ioMu: a lock held by the
// sender itself stays held all that second, while one another goroutine
// holds for its own work is let go at once. And the session's follower
// goroutine, which sends the delayed ones, ends with the line.
func TestNoLockHeldWhileSignalling(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			s, err := newManager(t).Create(Config{Shell: shell})
			require.NoError(t, err)
			var log lockLog
			hook := func(pid int, sig unix.Signal) { log.note(s, fmt.Sprintf("%s to %d", unix.SignalName(sig), pid)) }
			s.sigHook.Store(&hook)
			count := func() int { sent, _ := log.get(); return len(sent) }
			// Once the line is over, the follower drops what it held for
			// it (a recheck, a chase, the 5 s watchdog) and returns.
			wait := func(j *Line, what string) {
				t.Helper()
				select {
				case <-j.Done():
				case <-time.After(20 * time.Second):
					t.Fatalf("%s was not interrupted", what)
				}
				require.Eventually(t, func() bool {
					s.fu.mu.Lock()
					defer s.fu.mu.Unlock()
					return s.fu.running == nil
				}, 2*time.Second, 5*time.Millisecond, "the follower returned after %s ended", what)
			}

			// A command holding the terminal: a resize sends it SIGWINCH,
			// a cancel SIGINT to its group.
			j, err := s.Start(Command{Text: "sleep 30"}, &splitSink{})
			require.NoError(t, err)
			require.Eventually(t, func() bool { return s.commandGroup() > 0 }, 10*time.Second, 5*time.Millisecond, "sleep holds the terminal")
			n := count()
			require.NoError(t, s.Resize(30, 100))
			assert.Greater(t, count(), n, "the resize sent SIGWINCH")
			n = count()
			_, err = s.Signal(j, unix.SIGINT)
			require.NoError(t, err)
			wait(j, "sleep")
			assert.Greater(t, count(), n, "the cancel sent SIGINT")

			// A builtin loop: the shell itself is interrupted.
			j, err = s.Start(Command{Text: "while :; do :; done"}, &splitSink{})
			require.NoError(t, err)
			time.Sleep(100 * time.Millisecond)
			n = count()
			_, err = s.Signal(j, unix.SIGINT)
			require.NoError(t, err)
			wait(j, "a started loop")
			assert.Greater(t, count(), n, "the cancel interrupted the shell")

			// Interrupted at once: before the shell has begun the line,
			// or within its first moments.
			j, err = s.Start(Command{Text: "while :; do :; done"}, &splitSink{})
			require.NoError(t, err)
			n = count()
			_, err = s.Signal(j, unix.SIGINT)
			require.NoError(t, err)
			wait(j, "a loop cancelled at once")
			assert.Greater(t, count(), n, "the early cancel interrupted the shell")

			out, _ := runIn(t, s, "echo usable")
			assert.Equal(t, "usable\n", out)
			sent, held := log.get()
			assert.Empty(t, held, "signals sent: %v", sent)
		})
	}
}

// TestCancelAsTheCommandStarts: a signal that reaches a command's group
// while its leader is still the shell's copy, between fork and exec, is
// not lost: bash's copy handled SIGINT itself and then ran `sleep 30`,
// which slept on although the cancel had been sent. Cancelled as soon
// as the terminal names its group, every try ends.
func TestCancelAsTheCommandStarts(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			s, err := newManager(t).Create(Config{Shell: shell})
			require.NoError(t, err)
			for i := range 40 {
				j, err := s.Start(Command{Text: "sleep 30"}, &splitSink{})
				require.NoError(t, err)
				require.Eventually(t, func() bool { return s.commandGroup() > 0 }, 10*time.Second, 50*time.Microsecond, "sleep holds the terminal")
				_, err = s.Signal(j, unix.SIGINT)
				require.NoError(t, err)
				select {
				case <-j.Done():
				case <-time.After(10 * time.Second):
					t.Fatalf("try %d: the cancel sent as sleep started did not end it", i)
				}
			}
		})
	}
}
