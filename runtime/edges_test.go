package runtime

import (
	"context"
	"encoding/base64"
	"fmt"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/protocol"
)

// Issue 10 item 9: protocol and validation edges.
func TestValidationEdges(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh", "timeout_s": 1})["session_id"].(string)

	// A blank command is a no-op with status 0; a missing one is refused.
	for _, blank := range []string{"", "   ", " \n\n "} {
		r := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": blank})
		assert.EqualValues(t, 0, r["exit_code"], "%q", blank)
		assert.Equal(t, "", r["stdout"])
	}
	_, perr := callJSON(t, rt, "exec.run", map[string]any{"session_id": id})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)

	// timeout_s -1 turns the session's default (1 s) off for one call.
	r := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "sleep 1.5; echo done", "timeout_s": -1})
	assert.Equal(t, false, r["timed_out"])
	assert.Equal(t, "done\n", r["stdout"])
	r = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "sleep 1.5; echo done"})
	assert.Equal(t, true, r["timed_out"], "the default still holds without it")
	_, perr = callJSON(t, rt, "exec.run", map[string]any{"session_id": id, "command": "true", "timeout_s": -2})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)

	// An explicit empty session_id is refused, not run in default.
	_, perr = callJSON(t, rt, "exec.run", map[string]any{"session_id": "", "command": "true"})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
	assert.Contains(t, perr.Message, "session_id is empty")

	// TRL_* names are trl's own.
	_, perr = callJSON(t, rt, "exec.run", map[string]any{"session_id": id, "command": "true", "env": map[string]string{"TRL_SESSION_ID": "x"}})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
	_, perr = callJSON(t, rt, "session.create", map[string]any{"env": map[string]string{"TRL_AUTH_TOKEN": "x"}})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)

	// So is the shell's prompt, for a command as for a session: dash
	// refused the line ("PS1: is read only"), bash ignored it and showed
	// trl's prompt record to `echo $PS1`.
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		sid := mustCall(t, rt, "session.create", map[string]any{"shell": shell})["session_id"].(string)
		_, perr = callJSON(t, rt, "exec.run", map[string]any{"session_id": sid, "command": "echo $PS1", "env": map[string]string{"PS1": "x"}})
		require.NotNil(t, perr, shell)
		assert.Equal(t, protocol.CodeInvalidParams, perr.Code, shell)
		assert.Contains(t, perr.Message, "env PS1=... program", shell)
	}
}

func TestReadAdvancesAndRefusesPastTheEnd(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	for _, method := range []string{"exec.stream", "exec.run"} {
		st := mustCall(t, rt, method, map[string]any{"session_id": id, "command": "printf '漢字'"})
		xid := st["exec_id"].(string)
		mustCall(t, rt, "exec.wait", map[string]any{"exec_id": xid, "timeout_ms": 10000, "until": []string{}})
		var got string
		offset := 0.0
		for range 10 {
			r := mustCall(t, rt, "exec.read", map[string]any{"exec_id": xid, "offset": offset, "limit": 1})
			require.Positive(t, r["length"], "%s: a limit under one character still advances", method)
			got += r["data"].(string)
			offset = r["offset"].(float64) + r["length"].(float64)
			if offset >= 6 {
				break
			}
		}
		assert.Equal(t, "漢字", got, method)
		_, perr := callJSON(t, rt, "exec.read", map[string]any{"exec_id": xid, "offset": 100})
		require.NotNil(t, perr, method)
		assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
		assert.Contains(t, perr.Message, "past the end")
	}
}

// TestInputToAProgramThatReadsNone: input a program does not read fills
// the terminal's queue; the call then says how much was typed and why,
// as LIMIT_EXCEEDED (it was INTERNAL_ERROR "i/o timeout", which the docs
// call a bug in trl).
func TestInputToAProgramThatReadsNone(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	line := "sleep 30"
	st, err := rt.ExecRun(context.Background(), protocol.ExecParams{Command: &line, YieldMS: ptr(int64(100))})
	require.NoError(t, err)
	_, err = rt.ExecInput(context.Background(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text(strings.Repeat("aaaaaaaaa\n", 100_000))}})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeLimitExceeded, protocol.AsError(err).Code, "%v", err)
	assert.Contains(t, err.Error(), "of 1000000 bytes")
	_, err = rt.ExecCancel(context.Background(), protocol.ExecCancelParams{ExecID: st.ExecID, Signal: "KILL"})
	require.NoError(t, err)
}

// TestRunRightAfterCancel: a command sent just after exec.cancel waits
// for the cancelled one to end and runs (it got SESSION_BUSY while the
// shell had not yet reported the end).
func TestRunRightAfterCancel(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	for _, sig := range []string{"KILL", "INT"} {
		line := "sleep 30"
		st, err := rt.ExecRun(context.Background(), protocol.ExecParams{Command: &line, YieldMS: ptr(int64(100))})
		require.NoError(t, err)
		c, err := rt.ExecCancel(context.Background(), protocol.ExecCancelParams{ExecID: st.ExecID, Signal: protocol.Signal(sig)})
		require.NoError(t, err)
		require.True(t, c.Canceled)
		next := "echo next"
		res, err := rt.ExecRun(context.Background(), protocol.ExecParams{Command: &next})
		require.NoError(t, err, sig)
		assert.Equal(t, "next\n", res.Stdout)
	}
}

// TestProcSelfIsTheShell: /proc/self in fs.* names the session's shell, as
// in its commands, not the daemon (whose environment and memory map it
// read).
func TestProcSelfIsTheShell(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	s, err := rt.SessionCreate(context.Background(), protocol.SessionCreateParams{Shell: "/bin/sh"})
	require.NoError(t, err)
	r, err := rt.FSRead(context.Background(), protocol.FSReadParams{SessionID: s.SessionID, Path: "/proc/self/cmdline", Encoding: "base64"})
	require.NoError(t, err)
	cmdline, err := base64.StdEncoding.DecodeString(r.Data)
	require.NoError(t, err)
	assert.Equal(t, "/bin/sh\x00-i\x00", string(cmdline), "the shell's command line")
	assert.Equal(t, fmt.Sprintf("/proc/%d/cmdline", s.PID), r.Path)
	l, err := rt.FSList(context.Background(), protocol.FSListParams{SessionID: s.SessionID, Path: "/proc/thread-self/fd"})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(l.Entries), 8, "the shell's few fds, not the daemon's")
}

// TestTimeoutSaysWhatStillRuns: a command that timed out while a process
// it started had left its process group says that process still runs,
// and which (it said nothing, and the process ran on until the session
// was destroyed); one that leaves nothing behind says nothing of it.
func TestTimeoutSaysWhatStillRuns(t *testing.T) {
	t.Parallel()
	if _, err := osexec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid:", err)
	}
	rt := newRuntime(t, Options{})
	// The command waits until the stray runs (it writes its pid) before
	// its own long sleep: on a loaded machine (a full make test) a stray
	// started by `setsid sleep 30 &` had sometimes not yet been made when
	// the timeout came.
	ready := filepath.Join(t.TempDir(), "stray")
	line := "setsid sh -c 'echo $$ > " + ready + "; exec sleep 30' & while [ ! -s " + ready + " ]; do sleep 0.05; done; sleep 30"
	timeout := 1.5
	res, err := rt.ExecRun(context.Background(), protocol.ExecParams{Command: &line, TimeoutS: &timeout})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	assert.Contains(t, res.Note, "still run (pid ")
	plain := "sleep 30"
	res, err = rt.ExecRun(context.Background(), protocol.ExecParams{Command: &plain, TimeoutS: &timeout})
	require.NoError(t, err)
	require.True(t, res.TimedOut)
	assert.NotContains(t, res.Note, "still run", "the sleep ended with its group")
}
