package console

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestAsciinemaPlaysAsTheScreen: `asciinema play` of a recording, shown in
// tmux (the reference emulator) at the session's size, draws what
// session.screen shows: no staircase, the progress bar collapsed, wide
// characters in place. It needs asciinema and tmux (.ci/run installs
// both) and skips, saying so, without them.
func TestAsciinemaPlaysAsTheScreen(t *testing.T) {
	for _, tool := range []string{"asciinema", "tmux"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed (.ci/run installs it): %v", tool, err)
		}
	}
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec := startRecorder(t, h, dir)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/bash",
		"env": map[string]string{"TERM": "xterm-256color", "LANG": "C.UTF-8"}})["session_id"].(string)
	rec.waitFor(t, sid)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `printf 'first line\nsecond line\nthird line\n'`})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `for i in 1 2 3; do printf '\rprogress %d/3' $i; sleep 0.05; done; echo`})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `printf '漢字 wide\n'`})
	want := h.screenRows(t, sid)
	rec.stop()
	cast := filepath.Join(dir, sid+".cast")
	_, err := os.Stat(cast)
	require.NoError(t, err)

	sock := filepath.Join(t.TempDir(), "tmux.sock")
	tmux := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("tmux", append([]string{"-S", sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
		require.NoError(t, err, "tmux %v: %s", args, out)
		return string(out)
	}
	t.Cleanup(func() { _ = exec.Command("tmux", "-S", sock, "kill-server").Run() })
	tmux("new-session", "-d", "-x", "80", "-y", "24", "-e", "LANG=C.UTF-8",
		"asciinema play -i 0.05 "+cast+"; printf '\\033[?25l'; sleep 600")
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for {
		got = strings.Split(strings.TrimRight(tmux("capture-pane", "-p"), "\n"), "\n")
		for i := range got {
			got[i] = strings.TrimRight(got[i], " ")
		}
		if strings.Join(trimBlank(got), "\n") == strings.Join(trimBlank(want), "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("asciinema play in tmux is not the session's screen\n%s", sideBySide(trimBlank(want), trimBlank(got)))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// trimBlank drops trailing blank rows.
func trimBlank(rows []string) []string {
	n := len(rows)
	for n > 0 && strings.TrimSpace(rows[n-1]) == "" {
		n--
	}
	return rows[:n]
}
