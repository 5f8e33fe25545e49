package runtime

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// prompt is the prompt of a waiting status.
func prompt(t *testing.T, st map[string]any) string {
	t.Helper()
	in, ok := st["input"].(map[string]any)
	require.True(t, ok, "status: %v", st)
	p, _ := in["prompt"].(string)
	return p
}

// TestPromptOnStderrEveryTime: bash's read -p writes its prompt to
// stderr, terminal output before it (the typed answer's echo, the last
// round's echo) goes through the terminal; the prompt is told right every
// round, not only when the two streams happened to arrive in order
// (issue 24 item 1: lost in 6 to 9 of 15 runs).
func TestPromptOnStderrEveryTime(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
	const rounds = 30
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": fmt.Sprintf(`for i in $(seq 1 %d); do read -p "q$i? " a; echo "got $i=$a"; done`, rounds)})
	for i := 1; i <= rounds; i++ {
		waiting(t, st, "line")
		require.Equal(t, fmt.Sprintf("q%d? ", i), prompt(t, st), "round %d: %v", i, st)
		st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": fmt.Sprintf("a%d\r", i)})
		assert.Contains(t, st["stdout"], fmt.Sprintf("got %d=a%d\n", i, i))
	}
	exited(t, st, 0)
	// The screen has them in the order they were written.
	scr := mustCall(t, rt, "session.screen", map[string]any{"session_id": id, "scrollback_lines": 200})
	var lines []string
	for _, l := range scr["lines"].([]any) {
		lines = append(lines, l.(string))
	}
	text := strings.Join(lines, "\n")
	for i := 1; i <= rounds; i++ {
		assert.Contains(t, text, fmt.Sprintf("q%d? a%d\ngot %d=a%d\n", i, i, i, i))
	}
}

// TestPromptIsOnlyTheReadersText: text written before the waiting
// command began (by another command of the line, or by an earlier
// command) is not its prompt (issue 24 item 2).
func TestPromptIsOnlyTheReadersText(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)

	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `printf 'Delete everything? [y/N] '; cat`})
	waiting(t, st, "line")
	assert.Equal(t, "", prompt(t, st), "printf's text is not cat's prompt")
	mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": st["exec_id"]})
	mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})

	// An earlier command's unfinished line is not a prompt either.
	mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `printf 'left over '`})
	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `cat`})
	waiting(t, st, "line")
	assert.Equal(t, "", prompt(t, st))
	mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": st["exec_id"]})
	mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})

	// The reader's own part of the line is its prompt.
	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `printf 'Delete? '; python3 -c 'input("Name: ")'`})
	waiting(t, st, "line")
	assert.Equal(t, "Name: ", prompt(t, st))
	st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "x\r"})
	exited(t, st, 0)
}

// TestLongPromptWhole: a prompt longer than the terminal's width wraps;
// the prompt is all of it, not its last row (issue 24 item 3).
func TestLongPromptWhole(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash", "cols": 80})["session_id"].(string)
	long := "The following packages will be upgraded and the configuration files replaced with the maintainer's versions; continue? [y/N] "
	require.Greater(t, len(long), 120)
	for _, cmd := range []string{"read -p '" + strings.ReplaceAll(long, "'", `'\''`) + "' a", "printf '%s' \"" + long + "\"; read a"} {
		st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": cmd})
		waiting(t, st, "line")
		assert.Equal(t, long, prompt(t, st), cmd)
		st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "y\r"})
		exited(t, st, 0)
	}
}

// TestNotWaitingFalsePositives: a loop that looks for a key between
// pieces of work is running, node is not waiting after `.exit`, and a
// full-screen program has no line prompt (issue 24 item 4).
func TestNotWaitingFalsePositives(t *testing.T) {
	t.Parallel()
	t.Run("select loop", func(t *testing.T) {
		t.Parallel()
		need(t, "python3")
		rt := newRuntime(t, Options{})
		id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
		loop := "import select, sys, time\nwhile True:\n    select.select([sys.stdin], [], [], 0.5)\n    time.sleep(0.3)\n"
		st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "python3 -c '" + loop + "'", "yield_ms": 4000})
		assert.Equal(t, "running", st["state"], "status: %v", st)
		assert.Equal(t, "yield", st["reason"])
		mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": st["exec_id"]})
		mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	})
	t.Run("node exit", func(t *testing.T) {
		t.Parallel()
		need(t, "node")
		for i := 0; i < 3; i++ {
			rt := newRuntime(t, Options{})
			id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
			st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "node"})
			waiting(t, st, "raw")
			assert.Equal(t, "> ", prompt(t, st))
			st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": ".exit\r"})
			exited(t, st, 0)
		}
	})
	t.Run("top", func(t *testing.T) {
		t.Parallel()
		need(t, "top")
		rt := newRuntime(t, Options{})
		id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash", "env": map[string]string{"TERM": "xterm"}})["session_id"].(string)
		st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "top"})
		waiting(t, st, "tui")
		assert.Equal(t, "", prompt(t, st), "a full-screen program has no line prompt")
		assert.NotNil(t, st["screen"])
		st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "q"})
		exited(t, st, 0)
	})
}

// TestRenderTextRedraws: render "text" shows rows redrawn after a cursor
// move up in their last state (issue 24 item 5).
func TestRenderTextRedraws(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "render": "text",
		"command": `printf 'layer1: 0%%\nlayer2: 0%%\n'; printf '\e[2A\e[2Klayer1: 100%%\n\e[2Klayer2: 100%%\n'`})
	exited(t, st, 0)
	assert.Equal(t, "layer1: 100%\nlayer2: 100%\n", st["stdout"])
}
