package session

import (
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// lookShells lists /bin/sh and, when installed, bash and zsh. LookPath
// only searches PATH; it starts nothing.
func lookShells(t *testing.T) []string {
	out := []string{"/bin/sh"}
	for _, name := range []string{"bash", "zsh"} {
		if p, err := exec.LookPath(name); err == nil {
			out = append(out, p)
		} else {
			t.Logf("%s is not installed: skipped", name)
		}
	}
	return out
}

// TestInterruptNeverHitsAnotherCommand: an interrupt that races with a
// command's end — sent as it finishes, or before the shell has even read
// its line — affects that command only: the next one runs exactly once
// and is reported as itself.
func TestInterruptNeverHitsAnotherCommand(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			for i := 0; i < 60; i++ {
				first := "true"
				if i%2 == 1 {
					first = "sleep 0.05; echo A"
				}
				k := &sink{}
				j, err := s.Start(Command{Text: first}, k)
				require.NoError(t, err)
				s.Signal(j, unix.SIGINT)
				<-j.Done()
				// The interrupted command's output is its own: all of it
				// or none, and nothing of the next one.
				assert.Contains(t, []string{"", "A\n"}, k.out.String(), "round %d", i)

				next := fmt.Sprintf("echo B%d", i)
				out, st := runIn(t, s, next)
				require.Equal(t, fmt.Sprintf("B%d\n", i), out, "round %d: the next command's output", i)
				require.Equal(t, 0, st.ExitCode, "round %d: the next command's status", i)
			}
		})
	}
}

// TestInterruptBeforeStart: an interrupt asked for before the shell starts
// the line is delivered once it does, and ends the command.
func TestInterruptBeforeStart(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			k := &sink{}
			j, err := s.Start(Command{Text: "while :; do :; done"}, k)
			require.NoError(t, err)
			_, err = s.Signal(j, unix.SIGINT)
			require.NoError(t, err)
			select {
			case <-j.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the interrupt was lost")
			}
			assert.NotZero(t, j.Status().ExitCode)
			out, _ := runIn(t, s, "echo after")
			assert.Equal(t, "after\n", out)
		})
	}
}

// TestPromptCannotBeChanged: PS1 is the completion signal; a command that
// sets it (as rc files do) gets an error instead of hanging the session.
func TestPromptCannotBeChanged(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			out, st := runIn(t, s, "PS1='$ '; echo set")
			assert.NotZero(t, st.ExitCode, "setting PS1 fails")
			assert.Contains(t, out, "PS1", "the shell says PS1 is read-only")
			assert.NotContains(t, out, "set\n", "the line stops at the failed assignment")
			out, _ = runIn(t, s, "echo still")
			assert.Equal(t, "still\n", out)
		})
	}
	if _, err := exec.LookPath("bash"); err == nil {
		m := newManager(t)
		s, err := m.Create(Config{Shell: "bash"})
		require.NoError(t, err)
		runIn(t, s, ". /etc/skel/.bashrc 2>/dev/null; . ~/.bashrc 2>/dev/null; true")
		out, _ := runIn(t, s, "echo rc-ok")
		assert.Equal(t, "rc-ok\n", out)
	}
}

// TestConcurrentStartsAndExits: shells that exit at once while others
// start (the reaper's races) all get their status promptly.
func TestConcurrentStartsAndExits(t *testing.T) {
	m := newManager(t)
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < 40; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			shell := "/bin/sh"
			if i%2 == 0 {
				shell = "/bin/true" // exits at once: no prompt
			}
			s, err := m.Create(Config{Shell: shell})
			if shell == "/bin/true" {
				assert.ErrorIs(t, err, ErrNotShell)
				return
			}
			if assert.NoError(t, err) {
				m.Destroy(s.ID(), true)
			}
		}()
	}
	wg.Wait()
	assert.Less(t, time.Since(start), 8*time.Second, "a shell's exit status was lost")
}

// TestUserPrintfDoesNotBreakTheProtocol: the start record uses the
// builtin even when the user defines a printf of their own.
func TestUserPrintfDoesNotBreakTheProtocol(t *testing.T) {
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			runIn(t, s, "printf() { :; }; alias printf=true 2>/dev/null; true")
			j, err := s.Start(Command{Text: "while :; do :; done"}, &sink{})
			require.NoError(t, err)
			time.Sleep(100 * time.Millisecond)
			_, err = s.Signal(j, unix.SIGINT)
			require.NoError(t, err)
			select {
			case <-j.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the loop was not interrupted")
			}
			out, _ := runIn(t, s, "echo ok")
			assert.Equal(t, "ok\n", out)
		})
	}
}
