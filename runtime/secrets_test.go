package runtime

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// TestSecretsStayMaskedInStateForkAndFiles: a session's secrets do not
// come back in clear through session.state, a fork, fs.read or fs.edit.
// session.state leaves the secret variables out (said under not_carried)
// and masks the secrets' bytes anywhere else; a fork keeps masking
// them, the named ones and those typed with exec.input secret; fs.read
// and fs.edit mask what they answer. All of these answered the value in
// clear before, and a fork printed it.
func TestSecretsStayMaskedInStateForkAndFiles(t *testing.T) {
	t.Parallel()
	const secret = "supersecretvalue123"
	rt := newRuntime(t, Options{})
	sid := mustCall(t, rt, protocol.MethodSessionCreate, map[string]any{"shell": needBash(t), "working_dir": t.TempDir(),
		"secrets": map[string]string{"API_KEY": secret}})["session_id"].(string)
	runOut(t, rt, sid, `echo "$API_KEY" > k.txt; kept="pre-$API_KEY"; f() { echo "$API_KEY"; }; alias a="echo $API_KEY"; trap "echo $API_KEY" USR1`)
	st := mustCall(t, rt, protocol.MethodExecRun, map[string]any{"session_id": sid, "command": `read -r typed; echo "typed=$typed"`, "yield_ms": 300})
	require.Equal(t, "waiting_input", st["state"])
	mustCall(t, rt, protocol.MethodExecInput, map[string]any{"session_id": sid, "input": "typedsecret456\n", "secret": true})
	st = mustCall(t, rt, protocol.MethodExecWait, map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	require.Equal(t, "exited", st["state"], "%v", st)
	runOut(t, rt, sid, `again="$typed"`)

	// A directory named after a secret is masked where a cwd is answered.
	st = mustCall(t, rt, protocol.MethodExecRun, map[string]any{"session_id": sid, "command": `mkdir -p "d-$API_KEY" && cd "d-$API_KEY"`})
	assert.NotContains(t, st["cwd"], secret, "exec.run's cwd")
	in := mustCall(t, rt, protocol.MethodSessionInfo, map[string]any{"session_id": sid})
	assert.NotContains(t, in["working_dir"], secret, "session.info's working_dir")
	list := mustCall(t, rt, protocol.MethodExecList, map[string]any{"session_id": sid})
	b, err := json.Marshal(list)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret, "exec.list")
	runOut(t, rt, sid, `cd ..`)

	state := mustCall(t, rt, protocol.MethodSessionState, map[string]any{"session_id": sid})
	b, err = json.Marshal(state)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret, "session.state answers a secret in clear")
	assert.NotContains(t, string(b), "typedsecret456", "session.state answers a typed secret in clear")
	assert.NotContains(t, state["env"], "API_KEY", "a secret variable is left out")
	assert.Contains(t, string(b), `API_KEY`, "and said under not_carried")
	assert.Contains(t, string(b), `pre-***`, "a secret inside another value is masked")

	fork := mustCall(t, rt, protocol.MethodSessionFork, map[string]any{"session_id": sid})["session_id"].(string)
	assert.Equal(t, "***\n***\n***\npre-***\n***\n", runOut(t, rt, fork, `echo "$API_KEY"; f; a; echo "$kept"; echo "$again"`), "the fork masks the source's secrets")
	assert.Equal(t, "19\n", runOut(t, rt, fork, `printf %s "$API_KEY" | wc -c`), "the fork has the value")
	fst := mustCall(t, rt, protocol.MethodSessionState, map[string]any{"session_id": fork})
	b, err = json.Marshal(fst)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret, "the fork's state answers the secret in clear")

	rd := mustCall(t, rt, protocol.MethodFSRead, map[string]any{"session_id": sid, "path": "k.txt"})
	assert.Equal(t, "***\n", rd["data"])
	assert.Equal(t, true, rd["masked"])
	assert.Equal(t, float64(len(secret)+1), rd["length"], "length counts the file's bytes")
	rd = mustCall(t, rt, protocol.MethodFSRead, map[string]any{"session_id": sid, "path": "k.txt", "encoding": "base64"})
	assert.Equal(t, "KioqCg==", rd["data"])
	// A secret cut by a chunk's end or start is masked in both chunks.
	var paged string
	for off := 0; off < len(secret)+1; off += 7 {
		rd = mustCall(t, rt, protocol.MethodFSRead, map[string]any{"session_id": sid, "path": "k.txt", "offset": off, "length": 7})
		assert.Equal(t, float64(min(7, len(secret)+1-off)), rd["length"])
		paged += rd["data"].(string)
	}
	assert.NotContains(t, paged, "secret", "paged reads: %q", paged)
	assert.NotContains(t, paged, "value", "paged reads: %q", paged)
	ed := mustCall(t, rt, protocol.MethodFSEdit, map[string]any{"session_id": sid, "path": "k.txt", "old": "\n", "new": "\nnext\n"})
	b, err = json.Marshal(ed)
	require.NoError(t, err)
	assert.NotContains(t, string(b), secret, "fs.edit answers the secret in clear")
}
