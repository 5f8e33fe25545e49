package gateway

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// needTool skips a test whose real program is missing.
func needTool(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s is not installed: this test drives the real program", tool)
	}
}

// TestWaitingProgramIgnoringSIGINTIsStopped: less ignores SIGINT; after
// COMMAND_WAITING_INPUT the gateway escalates (INT, then TERM, then KILL)
// so the session takes the next call within a second, not at the first
// call's timeout (issue 24 item 17).
func TestWaitingProgramIgnoringSIGINTIsStopped(t *testing.T) {
	needTool(t, "less")
	h := newHarness(t, Options{})
	file := filepath.Join(t.TempDir(), "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("first\nsecond\n"), 0o644))
	res := h.run(newCall("TERM=xterm less "+file).with("call.args.timeoutMs", 20000))
	code, _ := errorOf(res)
	require.Equal(t, CodeCommandWaitingInput, code, "%v", res)
	start := time.Now()
	next := h.run(newCall("echo next").with("call.args.timeoutMs", 20000))
	require.Equal(t, true, next["ok"], "%v", next)
	require.Equal(t, "next\n", next["output"])
	require.Less(t, time.Since(start), 3*time.Second, "the session was free within about a second")
}

// TestEditorOnRequestStdinIsWaiting: an editor started by the command
// (EDITOR=vi git commit) reads the request's stdin, not the terminal, and
// never ends; the gateway reports it waiting for input instead of running
// to the call's timeout (issue 24 item 17).
func TestEditorOnRequestStdinIsWaiting(t *testing.T) {
	needTool(t, "git")
	needTool(t, "vi")
	h := newHarness(t, Options{})
	repo := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "a@example.org"}, {"config", "user.name", "A"}} {
		require.NoError(t, exec.Command("git", append([]string{"-C", repo}, args...)...).Run())
	}
	require.NoError(t, os.WriteFile(filepath.Join(repo, "f"), []byte("x\n"), 0o644))
	require.NoError(t, exec.Command("git", "-C", repo, "add", "f").Run())
	start := time.Now()
	res := h.run(newCall("cd "+repo+" && TERM=xterm EDITOR=vi git commit").with("call.args.timeoutMs", 30000))
	code, msg := errorOf(res)
	require.Equal(t, CodeCommandWaitingInput, code, "%v", res)
	require.Contains(t, msg, "full-screen")
	require.Less(t, time.Since(start), 15*time.Second, "answered long before the 30 s timeout")
	next := h.run(newCall("echo next").with("call.args.timeoutMs", 20000))
	require.Equal(t, true, next["ok"], "%v", next)
}
