package console

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConsoleScreenshots drives the console in Chromium through a small
// scene (three agents: one idle after a build, one waiting for an answer,
// one editing in vi) and saves the screenshots the documentation shows,
// into TRL_CONSOLE_SHOTS when set (docs/ holds the last ones), into a
// temporary directory otherwise. Each shot is taken once the page shows
// what it is meant to (the terminal equal to session.screen).
func TestConsoleScreenshots(t *testing.T) {
	if _, err := exec.LookPath("vi"); err != nil {
		t.Skip("vi is not installed: the console's screenshots show it")
	}
	shots := os.Getenv("TRL_CONSOLE_SHOTS")
	if shots == "" {
		shots = t.TempDir()
	}
	h := newHarness(t, false, "")
	b := newBrowser(t)
	env := map[string]string{"TERM": "xterm-256color", "LANG": "C.UTF-8"}
	agent := h.call(t, "session.create", map[string]any{"shell": "/bin/bash", "name": "agent-1", "env": env})["session_id"].(string)
	deployer := h.call(t, "session.create", map[string]any{"shell": "/bin/bash", "name": "deployer", "env": env})["session_id"].(string)
	editor := h.call(t, "session.create", map[string]any{"shell": "/bin/bash", "name": "editor", "env": env})["session_id"].(string)

	// The live view of agent-1 while it works: its commands are marked.
	openSessionPage(t, h, b, agent)
	h.call(t, "exec.run", map[string]any{"session_id": agent, "command": `printf '\033[1mcompiling\033[0m 3 packages\n'; for p in core api web; do printf '  %-6s \033[32mok\033[0m\n' $p; done`})
	h.call(t, "exec.run", map[string]any{"session_id": agent, "command": `for i in 1 2 3 4 5 6 7 8 9 10; do printf '\rtests [%-10s] %d/10' "$(printf '%*s' $i '' | tr ' ' '#')" $i; sleep 0.03; done; echo`})
	h.call(t, "exec.run", map[string]any{"session_id": agent, "command": `echo "checking __name__ == '__main__' guards"; grep -c main /dev/null; echo 'lint: 2 warnings' >&2; false`})
	h.call(t, "exec.run", map[string]any{"session_id": agent, "command": `echo 'résumé 漢字 🚀 done'`})
	b.waitTrue(`document.querySelectorAll("#live-commands .live-cmd:not(.running)").length === 4`, "four commands listed")
	sameScreen(t, h, b, agent, "agent-1")
	b.screenshot(filepath.Join(shots, "console-terminal.png"))

	require.NoError(t, b.eval(`document.getElementById("tab-transcript").click()`, nil))
	b.waitTrue(`document.querySelectorAll("#transcript .cmd").length === 4`, "the transcript")
	b.screenshot(filepath.Join(shots, "console-transcript.png"))

	// vi in the editor session.
	file := filepath.Join(t.TempDir(), "app.py")
	require.NoError(t, os.WriteFile(file, []byte("def main():\n    print(\"agents edit files in vi\")\n\n\nif __name__ == \"__main__\":\n    main()\n"), 0o644))
	openSessionPage(t, h, b, editor)
	st := h.call(t, "exec.run", map[string]any{"session_id": editor, "command": "vi " + file})
	require.Equal(t, "waiting_input", st["state"])
	sameScreen(t, h, b, editor, "vi")
	b.screenshot(filepath.Join(shots, "console-vi.png"))

	// The sessions page, with the deployer stuck at its question and vi waiting for keys.
	st = h.call(t, "exec.run", map[string]any{"session_id": deployer, "command": "printf 'Deploy build 42 to production? [y/N] '; read answer"})
	require.Equal(t, "waiting_input", st["state"])
	b.navigate(h.con.LoginURL(h.srv.URL))
	b.waitTrue(`document.querySelectorAll("#waiting .waiting-cmd").length === 2 && document.querySelectorAll("#sessions tbody tr").length === 3`, "the sessions page")
	b.screenshot(filepath.Join(shots, "console-sessions.png"))

	h.call(t, "exec.input", map[string]any{"session_id": editor, "input": []any{map[string]any{"key": "Escape"}, ":q!", map[string]any{"key": "Enter"}}, "until": []string{}})
	h.call(t, "exec.input", map[string]any{"session_id": deployer, "input": "n\r", "until": []string{}})
	for _, f := range []string{"console-sessions.png", "console-terminal.png", "console-vi.png", "console-transcript.png"} {
		info, err := os.Stat(filepath.Join(shots, f))
		require.NoError(t, err)
		require.Greater(t, info.Size(), int64(5000), f)
	}
}
