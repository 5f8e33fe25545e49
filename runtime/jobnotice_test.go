package runtime

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestJobNoticeIsIdleOutput: bash's "[1]+  Done" about a background job
// is not a later command's stderr; it is the session's idle output
// (session.output), as a background job's own output is (issue 24 item 9).
func TestJobNoticeIsIdleOutput(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
	mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "sleep 0.2 &"})
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "sleep 0.6; echo hi; echo warn >&2"})
	exited(t, st, 0)
	assert.Equal(t, "hi\n", st["stdout"])
	assert.Equal(t, "warn\n", st["stderr"], "the notice is not this command's")
	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "false & sleep 0.4; echo '[7]+  a line of its own' >&2"})
	assert.Equal(t, "[7]+  a line of its own\n", st["stderr"], "a command's own line is kept")
	out := mustCall(t, rt, "session.output", map[string]any{"session_id": id})
	assert.Regexp(t, `\[1\]\+  Done +sleep 0\.2\n`, out["data"])
	assert.Regexp(t, `\[1\]\+  Exit 1 +false\n`, out["data"])
}
