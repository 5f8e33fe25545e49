package main

import (
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
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

// TestStdioSignalAnswersShuttingDown: SIGTERM to `trl stdio` while a
// command runs answers the request SHUTTING_DOWN, as the socket does (it
// answered ok with the command "running", just before killing it), and
// ends trl stdio while its client keeps stdin open, be stdin a pipe or a
// socket (Node and Python's asyncio give their children a socketpair):
// it hung in a read of stdin until the client wrote or closed.
func TestStdioSignalAnswersShuttingDown(t *testing.T) {
	for _, kind := range []string{"pipe", "socket"} {
		t.Run(kind, func(t *testing.T) {
			cmd := exec.Command(trlBin, "stdio", "--log-level", "error")
			cmd.Dir = t.TempDir()
			var in io.WriteCloser
			if kind == "pipe" {
				var err error
				in, err = cmd.StdinPipe()
				require.NoError(t, err)
			} else {
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				require.NoError(t, err)
				ours, theirs := os.NewFile(uintptr(fds[0]), "client"), os.NewFile(uintptr(fds[1]), "stdin")
				defer theirs.Close()
				cmd.Stdin, in = theirs, ours
			}
			defer in.Close()
			var out strings.Builder
			cmd.Stdout = &out
			require.NoError(t, cmd.Start())
			_, err := io.WriteString(in, `{"id":5,"method":"exec.run","params":{"command":"sleep 30"}}`+"\n")
			require.NoError(t, err)
			time.Sleep(500 * time.Millisecond) // the command runs
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			select {
			case err := <-exited:
				require.NoError(t, err)
			case <-time.After(20 * time.Second):
				cmd.Process.Kill()
				<-exited
				t.Fatalf("trl stdio did not end within 20 s of SIGTERM; it wrote %q", out.String())
			}
			assert.Equal(t, `{"id":5,"ok":false,"error":{"code":"SHUTTING_DOWN","message":"the daemon is shutting down; retry against a running daemon"}}`+"\n", out.String())
		})
	}
}
