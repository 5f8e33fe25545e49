package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestMCPRefusesRuntimeFlagsItWouldDrop: `trl mcp --policy FILE` (or
// --isolate, --max-sessions, any flag of the in-process runtime) with a
// daemon on its socket refuses to start, naming the flags: it bridged
// to the daemon and ignored them, so a policy in an agent's MCP config
// guarded nothing. Without such flags it bridges as before.
func TestMCPRefusesRuntimeFlagsItWouldDrop(t *testing.T) {
	d := startDaemon(t)
	file := filepath.Join(t.TempDir(), "policy.yaml")
	assert.NoError(t, os.WriteFile(file, []byte(e2ePolicy), 0o600))
	out, errs, code := runTrl(t, "mcp", "--socket", d.socket, "--policy", file, "--max-sessions", "3")
	assert.Equal(t, 2, code, "%s", errs)
	assert.Empty(t, out)
	assert.Contains(t, errs, "--max-sessions, --policy would not apply")
	assert.Contains(t, errs, "in-process")
	assert.Contains(t, errs, "--socket PATH")

	// --log-level and the socket's flags are trl mcp's own: it bridges
	// (and ends at the end of its input).
	_, errs, code = runTrl(t, "mcp", "--socket", d.socket, "--log-level", "info")
	assert.Equal(t, 0, code, "%s", errs)
	assert.Contains(t, errs, "bridging")

	// With no daemon on the socket the flags apply in-process.
	_, errs, code = runTrl(t, "mcp", "--socket", filepath.Join(t.TempDir(), "none.sock"), "--policy", file)
	assert.Equal(t, 0, code, "%s", errs)
	assert.Contains(t, errs, "command policy loaded")
}
