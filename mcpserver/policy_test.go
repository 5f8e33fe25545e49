package mcpserver

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
)

// TestRunUnderPolicy: a model sees a denied command as a tool error naming
// the rule's reason, and a command that needs approval as "awaiting
// approval: <reason>"; wait follows it to the person's decision.
func TestRunUnderPolicy(t *testing.T) {
	p, err := policy.Parse([]byte("default: allow\nrules:\n  - match: {program: rm}\n    action: deny\n    reason: no deleting\n  - match: {program: [\"git push\"]}\n    action: ask\n    reason: leaves the machine\n"), "p.yaml")
	require.NoError(t, err)
	approvals := approval.New(approval.Options{Timeout: time.Minute})
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop(), Policy: policy.NewEvaluator(p), Approvals: approvals})
	srv := New(Options{API: rt, Version: "test"})
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	require.NoError(t, err)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, nil).Connect(ctx, ct, nil)
	require.NoError(t, err)
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(sctx)
	})

	text, _, isErr := callTool(t, cs, "run", map[string]any{"command": "rm -rf /tmp/none"})
	assert.True(t, isErr)
	assert.Contains(t, text, "COMMAND_DENIED")
	assert.Contains(t, text, "no deleting")

	text, structured, isErr := callTool(t, cs, "run", map[string]any{"command": "git push 2>/dev/null; echo pushed"})
	require.False(t, isErr, text)
	assert.Contains(t, text, "awaiting approval: leaves the machine")
	assert.Equal(t, protocol.StateAwaitingApproval, structured["state"])
	execID, _ := structured["exec_id"].(string)
	require.NotEmpty(t, execID)

	go func() {
		time.Sleep(200 * time.Millisecond)
		for _, in := range approvals.List() {
			if in.Outcome == nil {
				_ = approvals.Decide(in.ID, approval.Approve, "ok", "a person")
			}
		}
	}()
	text, _, isErr = callTool(t, cs, "wait", map[string]any{"exec_id": execID, "timeout_ms": 20000})
	require.False(t, isErr, text)
	assert.Contains(t, text, "pushed")
	assert.Contains(t, text, "exit 0")
}

// TestSessionFork: session_fork copies a session's state into a new one,
// which a model then runs commands in; the source is left as it was.
func TestSessionFork(t *testing.T) {
	cs, _ := connect(t, nil)
	_, _, isErr := callTool(t, cs, "session_create", map[string]any{"name": "src", "shell": "/bin/bash"})
	require.False(t, isErr)
	_, _, isErr = callTool(t, cs, "run", map[string]any{"session": "src", "command": "cd /usr && export KEEP=kept && greet() { echo hi-$1; }"})
	require.False(t, isErr)
	text, structured, isErr := callTool(t, cs, "session_fork", map[string]any{"session": "src", "name": "trial"})
	require.False(t, isErr, text)
	assert.Contains(t, text, "session trial forked from src")
	assert.Equal(t, "trial", structured["name"])
	text, _, _ = callTool(t, cs, "run", map[string]any{"session": "trial", "command": "pwd; echo $KEEP; greet x; cd /; export KEEP=changed"})
	assert.Contains(t, text, "/usr\nkept\nhi-x\n")
	text, _, _ = callTool(t, cs, "run", map[string]any{"session": "src", "command": "pwd; echo $KEEP"})
	assert.Contains(t, text, "/usr\nkept\n", "the source is untouched")
	text, _, isErr = callTool(t, cs, "session_fork", map[string]any{"session": "nope"})
	assert.True(t, isErr)
	assert.Contains(t, text, "SESSION_NOT_FOUND")
}
