package runtime

import (
	"context"
	osexec "os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestShellExitSaid: a command that ends the shell says so in words, and
// in the default session the next command's status says it ran in a new
// shell (issue 24 item 7).
func TestShellExitSaid(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	st := mustCall(t, rt, "exec.run", map[string]any{"command": "cd /tmp && export KEPT=1"})
	exited(t, st, 0)
	assert.Nil(t, st["new_session"], "the first default session replaces nothing")
	first := st["session_id"]

	st = mustCall(t, rt, "exec.run", map[string]any{"command": "exit 4"})
	exited(t, st, 4)
	assert.Equal(t, true, st["session_exited"])
	require.Contains(t, st["note"], "the shell exited with this command (status 4)")
	assert.Contains(t, st["note"], "the next command without a session_id starts a new shell")

	st = mustCall(t, rt, "exec.run", map[string]any{"command": `echo "kept=$KEPT"; pwd`})
	exited(t, st, 0)
	assert.NotEqual(t, first, st["session_id"])
	assert.Equal(t, true, st["new_session"], "status: %v", st)
	assert.Contains(t, st["note"], "new shell")
	assert.Contains(t, st["note"], first)
	assert.Contains(t, st["stdout"], "kept=\n")

	st = mustCall(t, rt, "exec.run", map[string]any{"command": "true"})
	assert.Nil(t, st["new_session"], "said once")
	assert.Nil(t, st["note"])

	// A named session is not replaced: the note says what to do.
	id := mustCall(t, rt, "session.create", map[string]any{"name": "work", "shell": "/bin/bash"})["session_id"].(string)
	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "set -e; false"})
	assert.Equal(t, true, st["session_exited"], "status: %v", st)
	assert.Contains(t, st["note"], "the shell exited with this command (status 1): session "+id+" is gone; create a new session")

	// A status that yielded first carries it too, when the exit comes.
	st = mustCall(t, rt, "exec.run", map[string]any{"command": "sleep 0.3; exit 3", "yield_ms": 50})
	assert.Equal(t, "running", st["state"])
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	exited(t, st, 3)
	assert.Contains(t, st["note"], "the shell exited with this command (status 3)")
}

// TestSessionEndedFromOutsideSaid: a command whose session was destroyed,
// or whose daemon shut down, says that, not that "the shell exited with
// this command" (a walkthrough took a shutdown for the command failing).
func TestSessionEndedFromOutsideSaid(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"name": "doomed"})["session_id"].(string)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "sleep 30", "yield_ms": 100})
	require.Equal(t, "running", st["state"])
	mustCall(t, rt, "session.destroy", map[string]any{"session_id": id, "force": true})
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	assert.Equal(t, true, st["session_exited"])
	assert.Contains(t, st["session_end_cause"], "destroyed")
	assert.Contains(t, st["note"], "session "+id+" was destroyed while this command ran, which ended it (status ")
	assert.NotContains(t, st["note"], "the shell exited")

	rt2 := New(Options{Logger: zerolog.Nop()})
	st = mustCall(t, rt2, "exec.run", map[string]any{"command": "sleep 30", "yield_ms": 100})
	require.Equal(t, "running", st["state"])
	waited := make(chan map[string]any, 1)
	go func() {
		out, perr := callJSON(t, rt2, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 20000})
		if perr != nil {
			out = map[string]any{"error": string(perr.Code)}
		}
		waited <- out
	}()
	time.Sleep(200 * time.Millisecond) // the wait is in flight
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt2.Shutdown(ctx))
	st = <-waited
	assert.Equal(t, "daemon shut down", st["session_end_cause"], "%v", st)
	assert.Contains(t, st["note"], "the daemon shut down while this command ran: it ended it (status ")
}

// TestCommandThatLeavesTheShellUnusableSaid: a command that ends by
// itself but leaves its shell unable to run another (`ulimit -n 3`: too
// few descriptors to put back after a line) answers with its own status
// and says that the session was ended after it, and why. The answer in
// dash and zsh used to be a plain success; only the next call learned
// that the session had gone.
func TestCommandThatLeavesTheShellUnusableSaid(t *testing.T) {
	t.Parallel()
	for _, sh := range shellsForInteractive(t) {
		t.Run(filepath.Base(sh), func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, Options{})
			id := mustCall(t, rt, "session.create", map[string]any{"name": "low", "shell": sh})["session_id"].(string)
			st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "ulimit -n 3"})
			require.Equal(t, "exited", st["state"], "status: %v", st)
			assert.Equal(t, true, st["session_exited"], "status: %v", st)
			assert.Contains(t, st["session_end_cause"], "ulimit -n")
			require.Contains(t, st["note"], "session "+id)
			assert.Contains(t, st["note"], "ulimit -n")
			assert.Contains(t, st["note"], "create a new session")
			if st["exit_code"] == float64(0) {
				// It ended by itself: the note does not claim the end of
				// the session ended it.
				assert.Contains(t, st["note"], "this command ended (status 0), and session "+id+" was ended after it: ")
				assert.NotContains(t, st["note"], "which ended it")
			}
			_, perr := callJSON(t, rt, "exec.run", map[string]any{"session_id": id, "command": "true"})
			require.NotNil(t, perr)
			assert.Equal(t, "SESSION_EXITED", string(perr.Code))
		})
	}
}

// TestCommandTheShellSkippedSaid: after zsh's `builtin() { :; }` the
// shell goes through trl's lines without running them; the next command
// answers that it did not run (126) and that the session was ended, with
// the cause. It answered exit 0 with no output, and so did every later
// command, none of them run.
func TestCommandTheShellSkippedSaid(t *testing.T) {
	t.Parallel()
	zsh, err := osexec.LookPath("zsh")
	if err != nil {
		t.Skip("zsh is not installed: .ci/run installs it")
	}
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"name": "skipped", "shell": zsh})["session_id"].(string)
	exited(t, mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "builtin() { :; }"}), 0)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "echo ran"})
	exited(t, st, 126)
	assert.Equal(t, true, st["session_exited"], "status: %v", st)
	assert.Contains(t, st["session_end_cause"], "function named builtin")
	assert.Contains(t, st["note"], "session "+id+" was ended")
	assert.Empty(t, st["stdout"])
}
