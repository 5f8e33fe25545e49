package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMCPInspector drives `trl mcp` with an external MCP client: the npm
// MCP inspector's CLI, pinned by test/mcp/package.json and its lockfile
// (installed by `make mcp-inspector`, or here with `npm ci` when missing;
// skipped with the reason when npm cannot install it).
func TestMCPInspector(t *testing.T) {
	if testing.Short() {
		t.Skip("installs the MCP inspector from npm")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is not installed: the MCP inspector test needs Node (.ci/run expects it on the machine)")
	}
	dir, err := filepath.Abs("../../test/mcp")
	require.NoError(t, err)
	bin := filepath.Join(dir, "node_modules", ".bin", "mcp-inspector")
	if _, err := os.Stat(bin); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Skipf("npm could not install the MCP inspector in test/mcp (`make mcp-inspector` installs it; offline?): %v: %s", err, out)
		}
	}
	sock := filepath.Join(t.TempDir(), "none.sock")
	inspect := func(args ...string) string {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append([]string{"--cli", trlBin, "mcp", "--socket", sock}, args...)...)
		out, err := cmd.Output()
		require.NoError(t, err, "mcp-inspector %v: %s", args, out)
		return string(out)
	}
	list := inspect("--method", "tools/list")
	for _, tool := range []string{`"run"`, `"send_input"`, `"wait"`, `"read_output"`, `"screen"`, `"cancel"`, `"session_create"`, `"session_fork"`, `"session_list"`, `"session_info"`, `"session_destroy"`, `"read_background"`, `"resize"`,
		`"read_file"`, `"write_file"`, `"edit_file"`, `"list_dir"`} {
		assert.Contains(t, list, tool)
	}
	out := inspect("--method", "tools/call", "--tool-name", "run", "--tool-arg", "command=echo from-inspector")
	assert.Contains(t, out, `from-inspector\nexit 0`)
	assert.Contains(t, out, `"structuredContent"`)

	// Bridged to a daemon: a session the model names is created on first
	// use and outlives the inspector's trl mcp process.
	d := startDaemon(t)
	sock = d.socket
	out = inspect("--method", "tools/call", "--tool-name", "run", "--tool-arg", "session=inspected", "--tool-arg", "command=export KEPT=yes; echo first")
	assert.Contains(t, out, `first\n[session created on first use]\nexit 0`)
	out = inspect("--method", "tools/call", "--tool-name", "run", "--tool-arg", "session=inspected", "--tool-arg", "command=echo kept=$KEPT")
	assert.Contains(t, out, `kept=yes\nexit 0`)
	// The file tools through the bridge.
	f := filepath.Join(t.TempDir(), "inspected.txt")
	inspect("--method", "tools/call", "--tool-name", "write_file", "--tool-arg", "session=inspected", "--tool-arg", "path="+f, "--tool-arg", "content=from the inspector")
	out = inspect("--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "session=inspected", "--tool-arg", "path="+f)
	assert.Contains(t, out, `     1\tfrom the inspector\n[`+f+`: line 1 of 1; the whole file]`)
}
