package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/screen"
)

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s is not installed (.ci/run installs it)", name)
	}
}

// typeKeys writes to the terminal as a person typing would.
func typeKeys(t *testing.T, s *Session, keys string) {
	t.Helper()
	_, err := s.ptm.Write([]byte(keys))
	require.NoError(t, err)
}

// waitScreen polls the session's screen until ok accepts it.
func waitScreen(t *testing.T, s *Session, what string, ok func(screen.Snapshot) bool) screen.Snapshot {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		snap := s.Screen().Snapshot(screen.SnapshotOptions{})
		if ok(snap) {
			return snap
		}
		if time.Now().After(deadline) {
			t.Fatalf("screen never showed %s:\n%s", what, strings.Join(snap.Lines, "\n"))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func screenHas(sub string) func(screen.Snapshot) bool {
	return func(s screen.Snapshot) bool { return strings.Contains(strings.Join(s.Lines, "\n"), sub) }
}

func waitJob(t *testing.T, j *Line) {
	t.Helper()
	select {
	case <-j.Done():
	case <-time.After(15 * time.Second):
		t.Fatal("command did not end")
	}
}

func TestScreenOfVi(t *testing.T) {
	needTool(t, "vim")
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("first line\nsecond line\n"), 0o600))
	runIn(t, s, "echo before vi")
	j, err := s.Start(Command{Text: "vim -u NONE -i NONE -N -n " + file}, &sink{})
	require.NoError(t, err)
	snap := waitScreen(t, s, "vim with the file", screenHas("second line"))
	require.True(t, snap.AltScreen, "vim uses the alternate screen")
	require.True(t, s.Screen().Modes().AppCursor, "vim asks for application cursor keys")
	require.Equal(t, 24, len(snap.Lines))
	typeKeys(t, s, "ggOhello from the screen\x1b")
	snap = waitScreen(t, s, "the typed line", screenHas("hello from the screen"))
	require.Equal(t, "hello from the screen", snap.Lines[0])
	require.Equal(t, "first line", snap.Lines[1])
	require.Equal(t, "~", snap.Lines[3], "vim marks lines past the end")
	typeKeys(t, s, ":q!\r")
	waitJob(t, j)
	snap = waitScreen(t, s, "the main screen again", func(s screen.Snapshot) bool { return !s.AltScreen })
	require.False(t, s.Screen().Modes().AppCursor, "vim restored normal cursor keys")
	require.Equal(t, "before vi", snap.Lines[0])
}

func TestScreenOfLess(t *testing.T) {
	needTool(t, "less")
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh", Rows: 10, Cols: 40})
	require.NoError(t, err)
	j, err := s.Start(Command{Text: "seq 1 100 | less"}, &sink{})
	require.NoError(t, err)
	snap := waitScreen(t, s, "the first page", screenHas("9\n:"))
	require.Equal(t, "1", snap.Lines[0])
	typeKeys(t, s, " ")
	snap = waitScreen(t, s, "the second page", screenHas("18"))
	require.Equal(t, "10", snap.Lines[0])
	typeKeys(t, s, "q")
	waitJob(t, j)
}

// TestResizeChangesTopWidth: after session.resize, top redraws at the new
// width (it got SIGWINCH) and the screen has the new size.
func TestResizeChangesTopWidth(t *testing.T) {
	needTool(t, "top")
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	j, err := s.Start(Command{Text: "top -d 1"}, &sink{})
	require.NoError(t, err)
	waitScreen(t, s, "top", screenHas("PID"))
	widest := func(sn screen.Snapshot) int {
		w := 0
		for _, l := range sn.Lines {
			w = max(w, len([]rune(l)))
		}
		return w
	}
	require.NoError(t, s.Resize(30, 132))
	snap := waitScreen(t, s, "top at 132 columns", func(sn screen.Snapshot) bool { return widest(sn) > 80 })
	require.Equal(t, 30, snap.Rows)
	require.Equal(t, 132, snap.Cols)
	require.Equal(t, 30, s.Info().Rows)
	require.Equal(t, 132, s.Info().Cols)
	typeKeys(t, s, "q")
	waitJob(t, j)
	require.Error(t, s.Resize(0, 10))
}

// TestBackgroundOutputKept: output a background job writes while no
// command runs reaches the screen and the idle log.
func TestBackgroundOutputKept(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	runIn(t, s, "(sleep 0.3; echo background-hello; echo on-stderr >&2) &")
	deadline := time.Now().Add(10 * time.Second)
	for {
		c := s.Output(0, 1<<20)
		if strings.Contains(string(c.Data), "background-hello") && strings.Contains(string(c.Data), "on-stderr") {
			require.Equal(t, int64(0), c.Offset)
			require.Equal(t, int64(len(c.Data)), c.Next)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("idle log: %q", c.Data)
		}
		time.Sleep(50 * time.Millisecond)
	}
	waitScreen(t, s, "the background output", screenHas("background-hello"))
	// A read past the end is empty, not an error.
	c := s.Output(1<<40, 10)
	require.Empty(t, c.Data)
}

// TestQueryAnswered: a program that asks for the cursor position gets an
// answer from the screen, on the terminal.
func TestQueryAnswered(t *testing.T) {
	needTool(t, "bash")
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	out, _ := runIn(t, s, `bash -c 'printf "abc\033[6n"; IFS= read -r -s -d R -t 5 x; echo; echo "pos=${x#*[}"'`)
	require.Contains(t, out, "pos=1;4")
}

// TestLeftoverAltScreenClosed: a TUI killed in the alternate screen does
// not leave the next command's output hidden there.
func TestLeftoverAltScreenClosed(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	runIn(t, s, `printf '\033[?1049h\033[Hin the tui'`)
	require.True(t, s.Screen().AltScreen())
	runIn(t, s, "echo after")
	snap := s.Screen().Snapshot(screen.SnapshotOptions{})
	require.False(t, snap.AltScreen)
	require.Contains(t, strings.Join(snap.Lines, "\n"), "after")
}

func TestSubscribe(t *testing.T) {
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	got := &sink{}
	cancel := s.Subscribe(func(st Stream, p []byte) { got.Output(st, p) })
	runIn(t, s, "echo seen; echo err >&2")
	cancel()
	runIn(t, s, "echo unseen")
	got.mu.Lock()
	defer got.mu.Unlock()
	require.Contains(t, got.out.String(), "seen\n")
	require.Contains(t, got.out.String(), "err\n")
	require.NotContains(t, got.out.String(), "unseen")
}

// TestPromptOnStderrInCursorLine: read -p writes its prompt to stderr; the
// screen has it at the cursor, where §8's waiting prompt is read from.
func TestPromptOnStderrInCursorLine(t *testing.T) {
	needTool(t, "bash")
	m := newManager(t)
	s, err := m.Create(Config{Shell: "/bin/sh"})
	require.NoError(t, err)
	k := &sink{}
	j, err := s.Start(Command{Text: `bash -c 'read -p "Continue? [Y/n] " x; echo "got $x"'`}, k)
	require.NoError(t, err)
	deadline := time.Now().Add(10 * time.Second)
	for s.Screen().CursorLine() != "Continue? [Y/n] " {
		if time.Now().After(deadline) {
			t.Fatalf("cursor line %q", s.Screen().CursorLine())
		}
		time.Sleep(20 * time.Millisecond)
	}
	typeKeys(t, s, "y\n")
	waitJob(t, j)
	require.Contains(t, k.out.String(), "got y")
}
