package runtime

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

func runOut(t *testing.T, rt *Runtime, sid, cmd string) string {
	t.Helper()
	r := mustCall(t, rt, protocol.MethodExecRun, map[string]any{"session_id": sid, "command": cmd})
	require.Equal(t, float64(0), r["exit_code"], "%q: %v", cmd, r)
	out, _ := r["stdout"].(string)
	return out
}

func needBash(t *testing.T) string {
	p, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash is not installed")
	}
	return p
}

// TestSessionStateForkOnTheWire: session.state, session.fork and
// session.create {state} through the method table: the fork reads back
// the source's state, names its parent in session.info, runs commands
// that see the state, and leaves the source as it was; a busy source
// answers SESSION_BUSY; the state carried as JSON to a second Runtime
// (another daemon) makes an equal session; a state naming trl's prompt is
// INVALID_PARAMS.
func TestSessionStateForkOnTheWire(t *testing.T) {
	bash := needBash(t)
	rt := newRuntime(t, Options{})
	src := mustCall(t, rt, protocol.MethodSessionCreate, map[string]any{"shell": bash, "name": "src"})
	sid := src["session_id"].(string)
	dir := t.TempDir()
	runOut(t, rt, sid, fmt.Sprintf(`cd %q; x=$'two\nlines'; declare -A h=([k]='v w'); f() { echo "f:$x"; }; alias hi='echo hi'; set -o pipefail; umask 077`, dir))

	st := mustCall(t, rt, protocol.MethodSessionState, map[string]any{"session_id": "src"})
	assert.Equal(t, "bash", st["shell"])
	assert.Equal(t, dir, st["cwd"])
	assert.Equal(t, "0077", st["umask"])

	fork := mustCall(t, rt, protocol.MethodSessionFork, map[string]any{"session_id": sid, "name": "child"})
	fid := fork["session_id"].(string)
	assert.Equal(t, sid, fork["parent"])
	in := mustCall(t, rt, protocol.MethodSessionInfo, map[string]any{"session_id": "child"})
	assert.Equal(t, sid, in["parent"])
	assert.Equal(t, "f:two\nlines\nv w\nhi\n"+dir+"\n", runOut(t, rt, fid, `f; echo "${h[k]}"; hi; pwd`))
	fst := mustCall(t, rt, protocol.MethodSessionState, map[string]any{"session_id": fid})
	assert.Equal(t, st, fst)

	runOut(t, rt, fid, `x=changed; cd /`)
	assert.Equal(t, st, mustCall(t, rt, protocol.MethodSessionState, map[string]any{"session_id": sid}))

	// A fork's shell must be of the source's kind.
	_, perr := callJSON(t, rt, protocol.MethodSessionFork, map[string]any{"session_id": sid, "shell": "/bin/sh"})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
	assert.Contains(t, perr.Message, "bash")

	// Busy.
	ch := callAsync(rt, protocol.MethodExecRun, map[string]any{"session_id": sid, "command": "sleep 1"})
	require.Eventually(t, func() bool {
		in := mustCall(t, rt, protocol.MethodSessionInfo, map[string]any{"session_id": sid})
		return in["state"] == "busy"
	}, 10e9, 10e6)
	_, perr = callJSON(t, rt, protocol.MethodSessionState, map[string]any{"session_id": sid})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeSessionBusy, perr.Code)
	_, perr = callJSON(t, rt, protocol.MethodSessionFork, map[string]any{"session_id": sid})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeSessionBusy, perr.Code)
	require.NoError(t, (<-ch).err)

	// Carried to another daemon, as JSON.
	other := newRuntime(t, Options{})
	carried := mustCall(t, other, protocol.MethodSessionCreate, map[string]any{"state": st})
	assert.Equal(t, bash, carried["shell"])
	cid := carried["session_id"].(string)
	assert.Equal(t, st, mustCall(t, other, protocol.MethodSessionState, map[string]any{"session_id": cid}))
	assert.Equal(t, "f:two\nlines\n", runOut(t, other, cid, `f`))

	// working_dir and env given to create override the state's.
	over := mustCall(t, other, protocol.MethodSessionCreate, map[string]any{"state": st, "working_dir": "/", "env": map[string]string{"x": "from env"}})
	assert.Equal(t, "/\nfrom env\n", runOut(t, other, over["session_id"].(string), `pwd; printenv x`))

	// Refused states.
	bad := map[string]any{}
	b, _ := json.Marshal(st)
	require.NoError(t, json.Unmarshal(b, &bad))
	bad["env"].(map[string]any)["PS1"] = "$ "
	_, perr = callJSON(t, other, protocol.MethodSessionCreate, map[string]any{"state": bad})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
	assert.Contains(t, perr.Message, "PS1")
	_, perr = callJSON(t, other, protocol.MethodSessionCreate, map[string]any{"state": st, "shell": "/bin/sh"})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
	_, perr = callJSON(t, other, protocol.MethodSessionCreate, map[string]any{"state": map[string]any{"shell": "bash", "bogus": 1}})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
}

// TestSessionForkIsolated: under isolation a fork runs under a uid of its
// own, keeps its own HOME, and has the state: the source's working
// directory under the source's home becomes the same place under the
// fork's.
func TestSessionForkIsolated(t *testing.T) {
	bash := needBash(t)
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := uint32(2002000000 + os.Getpid()%50000*16)
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-test-homes-rt-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	rt := newRuntime(t, Options{Sessions: session.Options{Isolation: &session.Isolation{FirstUID: first, LastUID: first + 15, HomeRoot: homes}}})
	src := mustCall(t, rt, protocol.MethodSessionCreate, map[string]any{"shell": bash})
	sid := src["session_id"].(string)
	runOut(t, rt, sid, `mkdir -p sub; cd sub; v='carried value'; export E=1`)
	srcOut := runOut(t, rt, sid, `id -u; echo "$HOME"; pwd`)

	fork := mustCall(t, rt, protocol.MethodSessionFork, map[string]any{"session_id": sid})
	fid := fork["session_id"].(string)
	out := runOut(t, rt, fid, `id -u; echo "$HOME"; pwd; echo "$v $E"`)
	var su, sh, sp, fu, fh, fp, fv string
	fmt.Sscanf(srcOut, "%s\n%s\n%s", &su, &sh, &sp)
	lines := splitLines(out)
	require.Len(t, lines, 4)
	fu, fh, fp, fv = lines[0], lines[1], lines[2], lines[3]
	assert.NotEqual(t, su, fu, "the fork runs under the source's uid")
	assert.NotEqual(t, sh, fh, "the fork has the source's home")
	assert.Equal(t, fh, fp, "the fork's cwd: the source's sub does not exist in the fork's home, so it starts there")
	assert.Equal(t, "carried value 1", fv)
}

func splitLines(s string) []string {
	var out []string
	for _, l := range append([]string{}, splitKeep(s)...) {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

func splitKeep(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// TestStateWithPromptOptions: a state that turns on zsh's KSH_ARRAYS
// (what `emulate sh` does) or one read after `shopt -u promptvars` in
// bash is carried and the session runs commands; a state with
// promptvars off is refused, with the reason. The zsh one used to start a
// session whose first command "ran" until its timeout.
func TestStateWithPromptOptions(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	if zsh, err := exec.LookPath("zsh"); err != nil {
		t.Log("zsh is not installed: its part is skipped")
	} else {
		sid := mustCall(t, rt, protocol.MethodSessionCreate, map[string]any{"shell": zsh})["session_id"].(string)
		runOut(t, rt, sid, "emulate sh")
		assert.Equal(t, "after\n", runOut(t, rt, sid, "echo after"))
		st := mustCall(t, rt, protocol.MethodSessionState, map[string]any{"session_id": sid})
		require.Equal(t, true, st["options"].(map[string]any)["ksharrays"], "the state has ksharrays on")
		carried := mustCall(t, rt, protocol.MethodSessionCreate, map[string]any{"state": st})["session_id"].(string)
		assert.Equal(t, "carried\n", runOut(t, rt, carried, "echo carried"))
	}
	bash := needBash(t)
	sid := mustCall(t, rt, protocol.MethodSessionCreate, map[string]any{"shell": bash})["session_id"].(string)
	runOut(t, rt, sid, "shopt -u promptvars")
	assert.Equal(t, "/\n", runOut(t, rt, sid, "cd / && pwd"))
	st := mustCall(t, rt, protocol.MethodSessionState, map[string]any{"session_id": sid})
	carried := mustCall(t, rt, protocol.MethodSessionCreate, map[string]any{"state": st})["session_id"].(string)
	assert.Equal(t, "carried\n", runOut(t, rt, carried, "echo carried"))
	st["options"].(map[string]any)["promptvars"] = false
	_, perr := callJSON(t, rt, protocol.MethodSessionCreate, map[string]any{"state": st})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
	assert.Contains(t, perr.Message, "promptvars")
}
