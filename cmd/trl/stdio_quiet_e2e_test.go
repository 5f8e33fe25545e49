package main

import (
	"bufio"
	"encoding/json"
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
			// It says the command had started: a retry is not safe
			// without a look (it said "retry against a running daemon").
			assert.Regexp(t, `^\{"id":5,"ok":false,"error":\{"code":"SHUTTING_DOWN","message":"the daemon is shutting down; command x-[0-9a-f]+ was ended before its answer and may have run in part; check its effects before you run it again against a running daemon"\}\}\n$`, out.String())
		})
	}
}

// TestStdioStreamAnsweredByExecID: a streamed command that waits for input
// on trl stdio gets the exec.input that names it, read while the stream
// runs (it waited behind the stream for ever, and trl stdio never exited
// at the end of its input); at end of input trl stdio exits 0.
func TestStdioStreamAnsweredByExecID(t *testing.T) {
	cmd := exec.Command(trlBin, "stdio", "--log-level", "error")
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	outR, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer cmd.Process.Kill()
	_, err = io.WriteString(in, `{"id":1,"method":"exec.stream","params":{"command":"printf 'name? '; read x; echo hi $x"}}`+"\n")
	require.NoError(t, err)
	lines := bufio.NewScanner(outR)
	var out []string
	answered, exit, reply := false, false, false
	deadline := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
	defer deadline.Stop()
	for lines.Scan() {
		line := lines.Text()
		out = append(out, line)
		var m struct {
			Method string
			Params struct {
				StreamID string `json:"stream_id"` // the command's exec_id
			}
		}
		require.NoError(t, json.Unmarshal([]byte(line), &m), line)
		if m.Method == "exec.waiting" && !answered {
			answered = true
			_, err = io.WriteString(in, `{"id":2,"method":"exec.input","params":{"exec_id":"`+m.Params.StreamID+`","input":"bob\n"}}`+"\n")
			require.NoError(t, err)
		}
		exit = exit || m.Method == "exec.exit"
		reply = reply || strings.HasPrefix(line, `{"id":2,`)
		if exit && reply {
			break
		}
	}
	require.True(t, answered, "no exec.waiting: %q", out)
	require.True(t, exit && reply, "no exit or no answer to the input: %q", out)
	all := strings.Join(out, "\n")
	assert.Contains(t, all, `"id":2,"ok":true`, "the input was answered")
	assert.Contains(t, all, `hi bob`)
	require.NoError(t, in.Close())
	select {
	case err := <-exited:
		require.NoError(t, err, "trl stdio exits 0 at end of input")
	case <-time.After(20 * time.Second):
		t.Fatalf("trl stdio did not exit at end of input; it wrote %q", out)
	}
}

// stdioSession is a trl stdio the test writes requests to and reads
// every line of, killed after 20 s at the latest.
type stdioSession struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines *bufio.Scanner
	out   []string
}

func startStdio(t *testing.T) *stdioSession {
	t.Helper()
	cmd := exec.Command(trlBin, "stdio", "--log-level", "error")
	cmd.Dir = t.TempDir()
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	outR, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	deadline := time.AfterFunc(20*time.Second, func() { cmd.Process.Kill() })
	t.Cleanup(func() { deadline.Stop(); cmd.Process.Kill() })
	return &stdioSession{t: t, cmd: cmd, in: in, lines: bufio.NewScanner(outR)}
}

func (s *stdioSession) send(line string) {
	s.t.Helper()
	_, err := io.WriteString(s.in, line+"\n")
	require.NoError(s.t, err)
}

// untilWaiting reads up to the first exec.waiting and returns its
// stream's id.
func (s *stdioSession) untilWaiting() string {
	s.t.Helper()
	for s.lines.Scan() {
		s.out = append(s.out, s.lines.Text())
		var m struct {
			Method string
			Params struct {
				StreamID string `json:"stream_id"`
			}
		}
		require.NoError(s.t, json.Unmarshal(s.lines.Bytes(), &m))
		if m.Method == "exec.waiting" {
			return m.Params.StreamID
		}
	}
	s.t.Fatalf("no exec.waiting: %q", s.out)
	return ""
}

// end closes stdin, reads to the end and waits for trl stdio to exit;
// it returns every line read.
func (s *stdioSession) end() string {
	s.t.Helper()
	require.NoError(s.t, s.in.Close())
	for s.lines.Scan() {
		s.out = append(s.out, s.lines.Text())
	}
	require.NoError(s.t, s.cmd.Wait(), "trl stdio ends by itself: %q", s.out)
	return strings.Join(s.out, "\n")
}

// TestStdioInputEndsWhileACommandWaits: stdin ends while a streamed
// command waits for input. Nothing can answer it any more: the command
// is interrupted, and the request read after it is answered before trl
// stdio exits (it hung for ever).
func TestStdioInputEndsWhileACommandWaits(t *testing.T) {
	s := startStdio(t)
	s.send(`{"id":1,"method":"exec.stream","params":{"command":"printf 'Name? '; read n; echo hi $n"}}`)
	s.untilWaiting()
	s.send(`{"id":2,"method":"system.ping"}`)
	all := s.end()
	assert.Contains(t, all, `"exec.exit"`, "the command ended")
	assert.Contains(t, all, `"canceled":true`, "interrupted, as a cancel would")
	assert.Contains(t, all, `{"id":2,"ok":true`, "the ping read before the end is answered")
}

// TestStdioInputTypedThenEnded: input typed just before stdin ends is the
// answer, though the program may not have read it when the end comes: the
// command is not interrupted (it was, about half the time).
func TestStdioInputTypedThenEnded(t *testing.T) {
	for i := range 4 {
		s := startStdio(t)
		s.send(`{"id":1,"method":"exec.stream","params":{"command":"printf 'Name? '; read n; sleep 0.3; echo hi $n"}}`)
		id := s.untilWaiting()
		s.send(`{"id":2,"method":"exec.input","params":{"exec_id":"` + id + `","input":"bob\n"}}`)
		all := s.end()
		assert.Contains(t, all, "hi bob", "run %d", i)
		assert.NotContains(t, all, `"canceled":true`, "run %d", i)
	}
}

// TestStdioInputThatWaitsThenEnds: an exec.input that types and then
// waits for the command's exit, sent just before stdin ends, while the
// command goes on to wait for more: trl stdio ends (it deadlocked when
// the end of input waited for that exec.input to return).
func TestStdioInputThatWaitsThenEnds(t *testing.T) {
	s := startStdio(t)
	s.send(`{"id":1,"method":"exec.stream","params":{"command":"read a; echo got $a; read b"}}`)
	id := s.untilWaiting()
	s.send(`{"id":2,"method":"exec.input","params":{"exec_id":"` + id + `","input":"one\n","until":[],"yield_ms":0}}`)
	all := s.end()
	assert.Contains(t, all, "got one")
	assert.Contains(t, all, `{"id":2,"ok":true`, "the input is answered")
}
