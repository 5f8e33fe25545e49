package console

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/screen"
)

// castRows replays a recording's output events through the screen
// emulator as a terminal that has ONLCR on would see them: a line feed
// does not return the carriage (NewlineCR off), as in `asciinema play`.
func castRows(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	require.True(t, sc.Scan())
	var hdr castHeader
	require.NoError(t, json.Unmarshal(sc.Bytes(), &hdr))
	scr := screen.New(screen.Options{Rows: hdr.Height, Cols: hdr.Width})
	for sc.Scan() {
		var ev []any
		if json.Unmarshal(sc.Bytes(), &ev) != nil || len(ev) != 3 {
			continue // a line being written
		}
		switch ev[1] {
		case "o":
			_, _ = scr.Write([]byte(ev[2].(string)))
		case "r":
			var cols, rows int
			_, err := fmt.Sscanf(ev[2].(string), "%dx%d", &cols, &rows)
			require.NoError(t, err, "resize event %q", ev[2])
			scr.Resize(rows, cols)
		}
	}
	return scr.Snapshot(screen.SnapshotOptions{}).Lines
}

// TestRecordingReplaysAsTheScreen: a recording's output events, replayed
// on a terminal with ONLCR (what `asciinema play` does), give the text
// session.screen shows: plain lines, a progress bar, wide characters,
// top, vi, and the prompt after vi.
func TestRecordingReplaysAsTheScreen(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec := startRecorder(t, h, dir)

	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/bash",
		"env": map[string]string{"TERM": "xterm-256color", "LANG": "C.UTF-8"}})["session_id"].(string)
	rec.waitFor(t, sid)
	cast := filepath.Join(dir, sid+".cast")
	same := func(what string) {
		t.Helper()
		var want, got []string
		deadline := time.Now().Add(20 * time.Second)
		for {
			want, got = h.screenRows(t, sid), castRows(t, cast)
			if strings.Join(want, "\n") == strings.Join(got, "\n") {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the recording replayed is not the session's screen\n%s", what, sideBySide(want, got))
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `printf 'first line\nsecond line\nthird line\n'`})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `for i in 1 2 3; do printf '\rprogress %d/3' $i; sleep 0.05; done; echo`})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `printf '漢字🚀\033[9G|col 9\n'`})
	same("plain lines, a progress bar, wide characters")
	if _, err := exec.LookPath("top"); err == nil {
		st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "top -d 5", "yield_ms": 1500})
		require.Equal(t, "waiting_input", st["state"])
		same("top")
		h.call(t, "exec.input", map[string]any{"session_id": sid, "input": "q", "until": []string{}})
	}
	if _, err := exec.LookPath("vi"); err == nil {
		file := filepath.Join(t.TempDir(), "notes.txt")
		require.NoError(t, os.WriteFile(file, []byte("recorded in vi\n"), 0o644))
		st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "vi " + file})
		require.Equal(t, "waiting_input", st["state"])
		same("vi")
		h.call(t, "exec.input", map[string]any{"session_id": sid, "input": []any{map[string]any{"key": "Escape"}, ":q!", map[string]any{"key": "Enter"}}, "until": []string{}})
		same("after vi")
		// vi killed at its timeout never leaves the alternate screen.
		st = h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "vi " + file, "timeout_s": 2, "until": []string{}})
		require.Equal(t, "exited", st["state"])
	}
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `echo the end`})
	same("the end")
}

// TestResizeReachesViewersAndRecordings: session.resize writes no byte,
// yet the page's terminal takes the new size and shows the screen row for
// row, and the recording holds a resize event that replays to the same.
func TestResizeReachesViewersAndRecordings(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec := startRecorder(t, h, dir)
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	rec.waitFor(t, sid)
	openSessionPage(t, h, b, sid)
	long := `printf '%0100d\n' 7`
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": long})
	sameScreen(t, h, b, sid, "80 columns")

	h.call(t, "session.resize", map[string]any{"session_id": sid, "rows": 30, "cols": 120})
	b.waitTrue(`viewer.term.cols === 120 && viewer.term.rows === 30`, "the page's terminal at the new size")
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": long})
	sameScreen(t, h, b, sid, "120 columns")
	cast := filepath.Join(dir, sid+".cast")
	deadline := time.Now().Add(20 * time.Second)
	for {
		want, got := h.screenRows(t, sid), castRows(t, cast)
		if strings.Join(want, "\n") == strings.Join(got, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the recording replayed is not the screen at the new size\n%s", sideBySide(want, got))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestBrowserReplaysRecordings: the console's replay of a recording ends
// on the screen session.screen shows (plain lines, a progress bar, wide
// characters, vi and the prompt after it).
func TestBrowserReplaysRecordings(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec := startRecorder(t, h, dir)
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/bash",
		"env": map[string]string{"TERM": "xterm-256color", "LANG": "C.UTF-8"}})["session_id"].(string)
	rec.waitFor(t, sid)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `printf 'first line\nsecond line\n'; for i in 1 2 3; do printf '\rprogress %d/3' $i; sleep 0.05; done; echo; printf '漢字🚀\033[9G|col 9\n'`})
	if _, err := exec.LookPath("vi"); err == nil {
		file := filepath.Join(t.TempDir(), "notes.txt")
		require.NoError(t, os.WriteFile(file, []byte("replayed in vi\n"), 0o644))
		st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "vi " + file})
		require.Equal(t, "waiting_input", st["state"])
		h.call(t, "exec.input", map[string]any{"session_id": sid, "input": []any{map[string]any{"key": "Escape"}, ":q!", map[string]any{"key": "Enter"}}, "until": []string{}})
	}
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo the end"})
	cast := filepath.Join(dir, sid+".cast")
	require.Eventually(t, func() bool {
		return strings.Join(castRows(t, cast), "\n") == strings.Join(h.screenRows(t, sid), "\n")
	}, 20*time.Second, 50*time.Millisecond, "the recording is written")

	b.navigate(h.con.LoginURL(h.srv.URL) + "&next=%23recordings/" + sid + ".cast")
	b.waitTrue(`typeof player !== "undefined" && !!player && player.done`, "the replay to end")
	sameRows(t, h, b, sid, rowsJS("player && player.term"), "the replay")
}
