package main

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStdioNormalExitLogsNoWarning: `trl stdio` answering a command and
// ending at the end of its input logs nothing at warn level or above.
// Before, every normal end logged `read from the shell failed: use of
// closed file`: the output pump took the fd closed by Close for a fault.
func TestStdioNormalExitLogsNoWarning(t *testing.T) {
	cmd := exec.Command(trlBin, "stdio", "--log-level", "debug")
	cmd.Stdin = strings.NewReader(`{"id":1,"method":"exec.run","params":{"command":"echo hi; echo there >&2"}}` + "\n" +
		`{"id":2,"method":"session.create","params":{"name":"second"}}` + "\n" +
		`{"id":3,"method":"exec.run","params":{"session_id":"second","command":"sleep 30 &"}}` + "\n")
	cmd.Dir = t.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "trl stdio: %s", stderr.String())
	require.Contains(t, string(out), `"stdout":"hi\n"`)
	require.Equal(t, 3, strings.Count(string(out), `"ok":true`), "%s", out)
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		for _, level := range []string{`"level":"warn"`, `"level":"error"`, `"level":"fatal"`, `"level":"panic"`} {
			require.NotContains(t, line, level, "a normal stdio run logged:\n%s", stderr.String())
		}
	}
	require.Contains(t, stderr.String(), "session ended", "the sessions' end is logged at info: the check saw the whole shutdown")
}
