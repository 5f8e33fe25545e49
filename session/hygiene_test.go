package session

import (
	"bytes"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// splitSink keeps stdout and stderr apart.
type splitSink struct {
	mu       sync.Mutex
	out, err bytes.Buffer
}

func (k *splitSink) Output(s Stream, p []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s == Stderr {
		k.err.Write(p)
	} else {
		k.out.Write(p)
	}
}

func (k *splitSink) get() (string, string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.out.String(), k.err.String()
}

// run2 runs cmd and returns its stdout, stderr and status.
func run2(t *testing.T, s *Session, cmd string) (string, string, Status) {
	t.Helper()
	k := &splitSink{}
	j, err := s.Start(Command{Text: cmd}, k)
	require.NoError(t, err)
	select {
	case <-j.Done():
	case <-time.After(30 * time.Second):
		t.Fatalf("%q did not finish", cmd)
	}
	out, errOut := k.get()
	return out, errOut, j.Status()
}

// TestTerminalModesRestored: whatever a command does to the terminal's
// modes or size, the next command's output is as trl's own settings make
// it (issue 10 item 1).
func TestTerminalModesRestored(t *testing.T) {
	const probe = `printf 'a\tb\nc\rd\n'; stty size`
	const want = "a\tb\nc\rd\n24 80\n"
	damage := []string{
		"stty onlcr",
		"stty sane",
		"stty olcuc",
		"stty tab3",
		"stty ocrnl",
		"stty onlret onocr",
		"stty cols 20",
		"stty rows 5 cols 33",
		"reset",
		"tput init",
		"tset",
		"stty raw -echo",
	}
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			for _, d := range damage {
				run2(t, s, d+" >/dev/null 2>&1")
				out, _, st := run2(t, s, probe)
				assert.Equal(t, want, out, "after %q", d)
				assert.Equal(t, 0, st.ExitCode, "after %q", d)
			}
			// A pager killed mid-page (as a timeout kills it) leaves
			// the terminal raw; the next command does not see that.
			k := &splitSink{}
			j, err := s.Start(Command{Text: "less /etc/passwd"}, k)
			require.NoError(t, err)
			time.Sleep(300 * time.Millisecond)
			_, err = s.Signal(j, unix.SIGKILL)
			require.NoError(t, err)
			select {
			case <-j.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("less was not killed")
			}
			out, _, _ := run2(t, s, probe)
			assert.Equal(t, want, out, "after less was killed")
		})
	}
}

// TestStdioRepointedPerCommand: a command that re-points or closes its
// stdout, stderr or stdin with exec does so for itself only (issue 10
// item 2).
func TestStdioRepointedPerCommand(t *testing.T) {
	damage := []string{
		"exec >/dev/null",
		"exec 1>&2",
		"exec 1>&-",
		"exec 2>/dev/null",
		"exec 2>&1",
		"exec 2>&-",
		"exec </dev/null",
		"exec 0<&-",
		"exec >/dev/null 2>&1",
	}
	for _, shell := range lookShells(t) {
		t.Run(shell, func(t *testing.T) {
			t.Parallel()
			m := newManager(t)
			s, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			for _, d := range damage {
				run2(t, s, d)
				out, errOut, st := run2(t, s, "echo out; echo err >&2; test -t 0 && echo tty")
				assert.Equal(t, "out\ntty\n", out, "stdout after %q", d)
				assert.Equal(t, "err\n", errOut, "stderr after %q", d)
				assert.Equal(t, 0, st.ExitCode, "after %q", d)
			}
		})
	}
}
