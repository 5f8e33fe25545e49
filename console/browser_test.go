package console

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// screenRows is session.screen's text: the rows a person sees.
func (h *harness) screenRows(t *testing.T, sid string) []string {
	t.Helper()
	scr := h.call(t, "session.screen", map[string]any{"session_id": sid, "format": "text"})
	var rows []string
	for _, l := range scr["lines"].([]any) {
		rows = append(rows, l.(string))
	}
	return rows
}

// sameScreen waits until the xterm.js terminal in the page shows, row for
// row, what session.screen reports, and fails with both when it never
// does.
func sameScreen(t *testing.T, h *harness, b *browser, sid, what string) {
	t.Helper()
	sameRows(t, h, b, sid, termRowsJS, what)
}

// sameRows waits until the rows read by the expression rows equal
// session.screen's.
func sameRows(t *testing.T, h *harness, b *browser, sid, rows, what string) {
	t.Helper()
	var want, got []string
	deadline := time.Now().Add(30 * time.Second)
	for {
		want = h.screenRows(t, sid)
		got = nil
		err := b.eval(rows, &got)
		if err == nil && strings.Join(got, "\n") == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the browser's terminal is not the session's screen (err %v)\n%s", what, err, sideBySide(want, got))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func sideBySide(want, got []string) string {
	var b strings.Builder
	for i := range max(len(want), len(got)) {
		var w, g string
		if i < len(want) {
			w = want[i]
		}
		if i < len(got) {
			g = got[i]
		}
		mark := " "
		if w != g {
			mark = "≠"
		}
		b.WriteString(mark + " screen: " + strings.ReplaceAll(w, " ", "·") + "\n  shown:  " + strings.ReplaceAll(g, " ", "·") + "\n")
	}
	return b.String()
}

// openSessionPage logs a fresh browser page into the console and opens
// the session's live view: connected, or told that the session has
// ended (a viewer of an ended session is closed once it has its screen).
func openSessionPage(t *testing.T, h *harness, b *browser, sid string) {
	t.Helper()
	b.navigate(h.con.LoginURL(h.srv.URL) + "&next=%23session/" + sid)
	b.waitTrue(`typeof viewer !== "undefined" && !!viewer && (viewer.ws.readyState === 1 || viewer.ended)`, "the live view")
}

// TestBrowserShowsTheScreen: the live terminal in a real Chromium shows,
// row for row, what session.screen shows, whatever the session's
// terminal modes: plain lines through a terminal whose ONLCR is off, a
// \r progress bar, CJK and emoji, top, and vi (and the prompt after vi,
// for a viewer that joined while vi ran).
func TestBrowserShowsTheScreen(t *testing.T) {
	h := newHarness(t, false, "")
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/bash", "name": "screen-check",
		"env": map[string]string{"TERM": "xterm-256color", "LANG": "C.UTF-8"}})["session_id"].(string)
	openSessionPage(t, h, b, sid)

	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `printf 'first line\nsecond line\nthird line\n'`})
	sameScreen(t, h, b, sid, "plain lines")

	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `for i in 1 2 3 4 5; do printf '\rprogress %d/5 [%-5s]' $i "$(printf '%*s' $i '' | tr ' ' '#')"; sleep 0.05; done; echo; echo done`})
	sameScreen(t, h, b, sid, "a \\r progress bar")

	// Columns count: a cursor move after wide characters lands where the
	// screen model says, and a row of 45 emoji (90 columns) wraps.
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `printf '漢字とかな: 🚀 rocket, 🎉 party, e\xcc\x81 end\n漢字🚀\033[9G|col 9\n'; printf '🚀%.0s' {1..45}; echo`})
	sameScreen(t, h, b, sid, "CJK and emoji")

	if _, err := exec.LookPath("top"); err != nil {
		t.Log("top is not installed: its part is skipped")
	} else {
		st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "top -d 5", "yield_ms": 1500})
		require.Equal(t, "waiting_input", st["state"], "top runs: %v", st)
		sameScreen(t, h, b, sid, "top")
		h.call(t, "exec.input", map[string]any{"session_id": sid, "input": "q", "until": []string{}})
		sameScreen(t, h, b, sid, "after top")
	}

	if _, err := exec.LookPath("vi"); err != nil {
		t.Log("vi is not installed: its part is skipped")
		return
	}
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("agents edit files in vi\nsecond __name__ line\n"), 0o644))
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "vi " + file})
	require.Equal(t, "waiting_input", st["state"], "vi runs: %v", st)
	sameScreen(t, h, b, sid, "vi")
	// A viewer joining while vi runs is painted vi over the main screen.
	openSessionPage(t, h, b, sid)
	sameScreen(t, h, b, sid, "vi, painted for a new viewer")
	h.call(t, "exec.input", map[string]any{"session_id": sid, "input": []any{map[string]any{"key": "Escape"}, ":q!", map[string]any{"key": "Enter"}}, "until": []string{}})
	sameScreen(t, h, b, sid, "the prompt after vi")
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `echo after vi`})
	sameScreen(t, h, b, sid, "a line after vi")
}

// TestBrowserTranscript opens a session's transcript in Chromium: each
// command shows its command line, exit code, duration in human units,
// working directory, start time, its stdout, and its stderr in a colour
// of its own.
func TestBrowserTranscript(t *testing.T) {
	h := newHarness(t, false, "")
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh", "name": "transcribed"})["session_id"].(string)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo built-ok; echo warn-on-stderr >&2"})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "cd /tmp; echo failing >&2; exit 2"})
	openSessionPage(t, h, b, sid)
	require.NoError(t, b.eval(`document.getElementById("tab-transcript").click()`, nil))
	b.waitTrue(`document.querySelectorAll("#transcript .cmd").length === 2`, "two commands in the transcript")
	var cmds []struct {
		Head, Stdout, Stderr  string
		StdoutColor, ErrColor string
	}
	require.NoError(t, b.eval(`[...document.querySelectorAll("#transcript .cmd")].map((d) => {
		const o = d.querySelector("pre.stdout"), e = d.querySelector("pre.stderr");
		return { Head: d.querySelector(".cmd-head").innerText,
			Stdout: o ? o.innerText : "", Stderr: e ? e.innerText : "",
			StdoutColor: o ? getComputedStyle(o).color : "", ErrColor: e ? getComputedStyle(e).color : "" };
	})`, &cmds))
	require.Len(t, cmds, 2)
	t.Logf("transcript heads: %q / %q", cmds[0].Head, cmds[1].Head)
	assert.Contains(t, cmds[0].Head, "$ echo built-ok; echo warn-on-stderr >&2")
	assert.Contains(t, cmds[0].Head, "exit 0")
	assert.Regexp(t, `\d+ ms|\d+\.\d s`, cmds[0].Head)
	assert.Contains(t, cmds[0].Head, "started ")
	assert.Equal(t, "built-ok", strings.TrimSpace(cmds[0].Stdout))
	assert.Equal(t, "warn-on-stderr", strings.TrimSpace(cmds[0].Stderr))
	assert.NotEqual(t, cmds[0].StdoutColor, cmds[0].ErrColor, "stderr has its own colour")
	assert.Contains(t, cmds[1].Head, "exit 2")
	assert.Contains(t, cmds[1].Head, "cwd /tmp")
	assert.Equal(t, "failing", strings.TrimSpace(cmds[1].Stderr))
}

// TestBrowserMarksCommands: the live view marks where each command's
// output starts (a decoration over the row, in order with the bytes) and
// lists the command line with its exit, while xterm.js's text stays the
// session's screen row for row.
func TestBrowserMarksCommands(t *testing.T) {
	h := newHarness(t, false, "")
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	openSessionPage(t, h, b, sid)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo one-output; echo two-output"})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo failing-output; exit 3"})
	b.waitTrue(`document.querySelectorAll("#live-commands .live-cmd:not(.running)").length === 2`, "two ended commands listed")
	var cmds []struct{ Text, Line string }
	require.NoError(t, b.eval(`[...document.querySelectorAll("#live-commands .live-cmd")].map((li) => ({
		Text: li.innerText,
		Line: li.marker ? viewer.term.buffer.active.getLine(li.marker.line).translateToString(true) : "" }))`, &cmds))
	require.Len(t, cmds, 2)
	assert.Contains(t, cmds[0].Text, "$ echo one-output; echo two-output")
	assert.Contains(t, cmds[0].Text, "exit 0")
	assert.Equal(t, "one-output", cmds[0].Line, "the mark is on the row where the command's output starts")
	assert.Contains(t, cmds[1].Text, "exit 3")
	assert.Equal(t, "failing-output", cmds[1].Line)
	b.waitTrue(`document.querySelectorAll(".xterm .cmd-mark").length === 2 && document.querySelectorAll(".xterm .cmd-mark.cmd-bad").length === 1`, "two marks drawn, the failed one red")
	sameScreen(t, h, b, sid, "marks do not change the terminal's text")
}

// TestBrowserDrawsUnderscores: "__name__" shows its underscores. At
// xterm.js's default line height the DOM renderer clipped each row at
// the font's height and the underscores, drawn below it, vanished ("  name
// "). The buffer holds them either way, so the test looks at the pixels
// of the two cells that hold "__": something lighter than the black
// background must be drawn there.
func TestBrowserDrawsUnderscores(t *testing.T) {
	h := newHarness(t, false, "")
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	openSessionPage(t, h, b, sid)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo __name__"})
	sameScreen(t, h, b, sid, "__name__")
	var box struct{ X, Y, W, H float64 }
	require.NoError(t, b.eval(`(() => {
		const t = viewer.term, b = t.buffer.active;
		let row = -1;
		for (let i = 0; i < t.rows; i++) if (b.getLine(b.baseY + i).translateToString(true) === "__name__") row = i;
		const r = document.querySelectorAll(".xterm-rows > div")[row].getBoundingClientRect();
		const cell = document.querySelector(".xterm-screen").getBoundingClientRect().width / t.cols;
		return { X: r.left, Y: r.top, W: 2 * cell, H: r.height };
	})()`, &box))
	png := b.clip(box.X, box.Y, box.W, box.H)
	lit := 0
	bounds := png.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, bl, _ := png.At(x, y).RGBA()
			if (r+g+bl)/3 > 0x6000 {
				lit++
			}
		}
	}
	assert.Greater(t, lit, 4, "the cells of \"__\" (%.0fx%.0f px at %.0f,%.0f) show nothing: the underscores are clipped", box.W, box.H, box.X, box.Y)
}

// TestBrowserAfterAKilledTUI: vi killed by its timeout never leaves the
// alternate screen; the session's screen model leaves it before the next
// command, and so does the page.
func TestBrowserAfterAKilledTUI(t *testing.T) {
	if _, err := exec.LookPath("vi"); err != nil {
		t.Skip("vi is not installed")
	}
	h := newHarness(t, false, "")
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/bash", "env": map[string]string{"TERM": "xterm-256color"}})["session_id"].(string)
	openSessionPage(t, h, b, sid)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo before vi"})
	file := filepath.Join(t.TempDir(), "killed.txt")
	require.NoError(t, os.WriteFile(file, []byte("vi is killed here\n"), 0o644))
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "vi " + file, "timeout_s": 2, "until": []string{}})
	require.Equal(t, "exited", st["state"], "%v", st)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo after the killed vi"})
	sameScreen(t, h, b, sid, "after a killed vi")
}

// TestBrowserSaysTheSessionEnded: when the session a person watches ends,
// the page says so with the cause, not "Disconnected.", and keeps the
// shell's last output on the terminal.
func TestBrowserSaysTheSessionEnded(t *testing.T) {
	h := newHarness(t, false, "")
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	openSessionPage(t, h, b, sid)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo last-words; exit 3"})
	b.waitTrue(`document.getElementById("hint").textContent.includes("session ended: shell exited with status 3")`, "the page says the session ended")
	b.waitTrue(`viewer.ws.readyState === 3`, "the viewer closed")
	var hint string
	require.NoError(t, b.eval(`document.getElementById("hint").textContent`, &hint))
	assert.NotContains(t, hint, "Disconnected")
	var rows []string
	require.NoError(t, b.eval(termRowsJS, &rows))
	assert.Contains(t, strings.Join(rows, "\n"), "last-words")
}
