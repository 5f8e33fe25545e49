package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// askPolicy asks a person before rm.
const askPolicy = `
rules:
  - name: removals
    match: {program: rm}
    action: ask
    reason: deletes files
`

// TestAskWithNoApproverDeniedAtOnce: where no one can approve (trl stdio;
// trl serve without --http, or with --http but neither TRL_APPROVER_TOKEN
// nor --console-approve) a command the policy asks about is denied at
// once, saying why, and the start warns, naming the ask rules. Each such
// command waited the whole --approval-timeout (5 minutes), then was
// denied, and nothing was said at start.
func TestAskWithNoApproverDeniedAtOnce(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "ask.yaml")
	require.NoError(t, os.WriteFile(file, []byte(askPolicy), 0o600))
	mark := filepath.Join(dir, "marker")
	require.NoError(t, os.WriteFile(mark, []byte("x"), 0o600))
	rm := "rm -f " + mark

	t.Run("stdio", func(t *testing.T) {
		cmd := exec.Command(trlBin, "stdio", "--policy", file)
		cmd.Stdin = strings.NewReader(`{"id":1,"method":"exec.run","params":{"command":"` + rm + `"}}` + "\n")
		var stderr lockedBuffer
		cmd.Stderr = &stderr
		start := time.Now()
		out, err := cmd.Output()
		require.NoError(t, err, "%s", stderr.String())
		assert.Less(t, time.Since(start), 30*time.Second)
		assert.Contains(t, string(out), `"code":"COMMAND_DENIED"`)
		assert.Contains(t, string(out), "no one can approve it here: trl stdio has no approver")
		assert.Contains(t, stderr.String(), `"ask_rules":["removals"]`)
		assert.Contains(t, stderr.String(), "no one can approve commands here")
	})
	for _, c := range []struct {
		name string
		why  string
		http bool
	}{
		{"serve", "this daemon serves no HTTP", false},
		{"serve --http", "this daemon has no approver", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("TRL_APPROVER_TOKEN", "")
			var d *daemon
			if c.http {
				d = startHTTPDaemon(t, "--policy", file).daemon
			} else {
				d = startDaemon(t, "--policy", file)
			}
			assert.Contains(t, d.stderr.String(), `"ask_rules":["removals"]`)
			r := dial(t, d.socket).call("exec.run", map[string]any{"command": rm})
			assert.Equal(t, "COMMAND_DENIED", errorCode(r), "%v", r)
			e, _ := r["error"].(map[string]any)
			assert.Contains(t, e["message"], c.why)
		})
	}
	_, err := os.Stat(mark)
	assert.NoError(t, err, "nothing ran")
}
