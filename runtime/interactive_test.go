package runtime

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/protocol"
)

// shellsForInteractive are the shells the SPEC §8 bars are shown on.
func shellsForInteractive(t *testing.T) []string {
	shells := []string{"/bin/sh", "/bin/bash"}
	if p, err := exec.LookPath("zsh"); err == nil {
		shells = append(shells, p)
	} else {
		t.Log("zsh not installed: the interactive bars run on sh and bash only")
	}
	return shells
}

func need(t *testing.T, tool string) {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		t.Skipf("%s is not installed: this test drives the real program (.ci/run installs it)", tool)
	}
}

// waiting asserts that a status says the command waits for input of kind.
func waiting(t *testing.T, st map[string]any, kind string) {
	t.Helper()
	require.Equal(t, "waiting_input", st["state"], "status: %v", st)
	require.Equal(t, "input", st["reason"])
	in, ok := st["input"].(map[string]any)
	require.True(t, ok, "input: %v", st["input"])
	assert.Equal(t, kind, in["kind"], "input: %v", in)
	assert.Equal(t, "kernel", in["confidence"])
	assert.Nil(t, st["exit_code"])
}

func exited(t *testing.T, st map[string]any, code int) {
	t.Helper()
	require.Equal(t, "exited", st["state"], "status: %v", st)
	require.Equal(t, float64(code), st["exit_code"], "status: %v", st)
}

func TestWaitingForInputAnswered(t *testing.T) {
	t.Parallel()
	for _, sh := range shellsForInteractive(t) {
		t.Run(filepath.Base(sh), func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, Options{})
			id := mustCall(t, rt, "session.create", map[string]any{"shell": sh})["session_id"].(string)

			start := time.Now()
			st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "read x; echo got $x"})
			waiting(t, st, "line")
			assert.Less(t, time.Since(start), 3*time.Second)
			xid := st["exec_id"].(string)
			require.True(t, strings.HasPrefix(xid, "x-"), xid)

			// A busy session says what holds it.
			_, perr := callJSON(t, rt, "exec.run", map[string]any{"session_id": id, "command": "true"})
			require.NotNil(t, perr)
			assert.Equal(t, protocol.CodeSessionBusy, perr.Code)
			assert.Contains(t, perr.Message, xid)
			info := mustCall(t, rt, "session.info", map[string]any{"session_id": id})
			assert.Equal(t, xid, info["command"].(map[string]any)["exec_id"])

			st = mustCall(t, rt, "exec.input", map[string]any{"exec_id": xid, "input": []any{"hello", map[string]any{"key": "Enter"}}})
			exited(t, st, 0)
			assert.Equal(t, "hello\ngot hello\n", st["stdout"], "the typed line is echoed, as a terminal shows it")

			// read -p prompts on stderr; the prompt is the screen's row.
			cmd := `read -p 'Continue? [Y/n] ' a; echo "answer=$a"`
			if strings.HasSuffix(sh, "zsh") {
				cmd = `read 'a?Continue? [Y/n] '; echo "answer=$a"`
			} else if sh == "/bin/sh" {
				cmd = `printf 'Continue? [Y/n] ' >&2; read a; echo "answer=$a"`
			}
			st = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": cmd})
			waiting(t, st, "line")
			assert.Equal(t, "Continue? [Y/n] ", st["input"].(map[string]any)["prompt"])
			st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": []any{"y", map[string]any{"key": "Enter"}}, "require_waiting": true})
			exited(t, st, 0)
			assert.Contains(t, st["stdout"], "answer=y\n")

			// Input to an ended command is refused.
			_, perr = callJSON(t, rt, "exec.input", map[string]any{"exec_id": xid, "input": "late"})
			require.NotNil(t, perr)
			assert.Equal(t, protocol.CodeInvalidState, perr.Code)
		})
	}
}

func TestWaitingInPipelineAndNested(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `echo start | (read first; read second </dev/tty; echo "$first/$second") | cat`})
	waiting(t, st, "line")
	st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "two\r"})
	exited(t, st, 0)
	assert.Contains(t, st["stdout"], "start/two\n")

	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `bash -c 'sh -c "read v; echo inner=\$v"'`})
	waiting(t, st, "line")
	st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "7\r"})
	exited(t, st, 0)
	assert.Contains(t, st["stdout"], "inner=7\n")
}

func TestPythonREPLRoundTrips(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "python3 -q"})
	waiting(t, st, "raw")
	assert.Equal(t, ">>> ", st["input"].(map[string]any)["prompt"])
	for _, rt1 := range []struct{ in, want string }{
		{"print(1+1)", "2\n>>> "},
		{"x = 6 * 7", ">>> "},
		{"x", "42\n>>> "},
	} {
		st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": []any{rt1.in, map[string]any{"key": "Enter"}}})
		waiting(t, st, "raw")
		assert.Equal(t, rt1.in+"\n"+rt1.want, st["stdout"])
	}
	st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": []any{map[string]any{"eof": true}}})
	exited(t, st, 0)
}

func TestPasswordPromptAndSecret(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `python3 -c 'import getpass; print("len", len(getpass.getpass()))'`})
	waiting(t, st, "password")
	assert.Equal(t, "Password: ", st["input"].(map[string]any)["prompt"])
	st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "hunter2\r", "secret": true})
	exited(t, st, 0)
	assert.Contains(t, st["stdout"], "len 7")
	assert.NotContains(t, st["stdout"], "hunter2")

	// A secret typed at a prompt that echoes is not echoed either.
	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "read s; echo ${#s}"})
	waiting(t, st, "line")
	st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "sesame\r", "secret": true})
	exited(t, st, 0)
	assert.NotContains(t, st["stdout"], "sesame")
	assert.Contains(t, st["stdout"], "6\n")
}

func TestFullScreenProgramsAreTUI(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(file, []byte("first line\nsecond line\n"), 0o644))
	for _, tc := range []struct {
		tool, cmd string
		quit      []any
	}{
		{"less", "less " + file, []any{"q"}},
		{"vi", "vi " + file, []any{map[string]any{"key": "Escape"}, ":q!", map[string]any{"key": "Enter"}}},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			t.Parallel()
			need(t, tc.tool)
			rt := newRuntime(t, Options{})
			id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh", "env": map[string]string{"TERM": "xterm"}})["session_id"].(string)
			st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": tc.cmd, "render": "text"})
			waiting(t, st, "tui")
			require.Equal(t, true, st["alt_screen"])
			scr := st["screen"].(map[string]any)
			assert.Contains(t, scr["lines"].([]any)[0], "first line")
			st = mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": tc.quit})
			exited(t, st, 0)
			// The session is usable again.
			assert.Equal(t, "ok\n", mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "echo ok"})["stdout"])
		})
	}
}

// TestNeverWaiting is the negative side of the bars: none of these is
// ever said to wait for input.
func TestNeverWaiting(t *testing.T) {
	t.Parallel()
	need(t, "python3")
	for _, tc := range []struct {
		name, cmd string
		stdin     *string
	}{
		{"sleep", "sleep 5", nil},
		{"busy loop", "while :; do :; done", nil},
		{"socket accept", `python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); s.listen(); s.accept()'`, nil},
		{"http server", "python3 -m http.server 0 --bind 127.0.0.1", nil},
		{"line every 2s", "while :; do echo tick; sleep 2; done", nil},
		{"stdin given", "cat; sleep 5", ptr("given text\n")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rt := newRuntime(t, Options{})
			id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
			params := map[string]any{"session_id": id, "command": tc.cmd, "yield_ms": 2500}
			if tc.stdin != nil {
				params["stdin"] = *tc.stdin
			}
			st := mustCall(t, rt, "exec.run", params)
			assert.Equal(t, "running", st["state"], "status: %v", st)
			assert.Equal(t, "yield", st["reason"])
			assert.Nil(t, st["input"])
			c := mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": st["exec_id"]})
			assert.Equal(t, true, c["canceled"])
			st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
			assert.Equal(t, "exited", st["state"])
		})
	}
}

func ptr[T any](v T) *T { return &v }

func TestUntilMatchQuietAndWait(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	a := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	b := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)

	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": a, "command": "echo booting; sleep 0.3; echo READY; sleep 30", "until": []string{"match:READY"}})
	assert.Equal(t, "running", st["state"])
	assert.Equal(t, "match", st["reason"])
	assert.Equal(t, "booting\nREADY\n", st["stdout"])
	server := st["exec_id"].(string)

	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": b, "command": "echo one; sleep 5", "until": []string{"quiet:300"}})
	assert.Equal(t, "quiet", st["reason"])
	assert.Equal(t, "one\n", st["stdout"])
	quiet := st["exec_id"].(string)

	// Both show in exec.list.
	list := mustCall(t, rt, "exec.list", nil)["commands"].([]any)
	ids := map[string]bool{}
	for _, c := range list {
		ids[c.(map[string]any)["exec_id"].(string)] = true
	}
	assert.True(t, ids[server] && ids[quiet], "exec.list: %v", list)

	// exec.wait any learns of the first exit quickly.
	canceled := make(chan (<-chan asyncResult), 1)
	time.AfterFunc(200*time.Millisecond, func() {
		canceled <- callAsync(rt, "exec.cancel", map[string]any{"exec_id": quiet, "signal": "TERM"})
	})
	defer func() { assert.NoError(t, (<-<-canceled).err) }()
	start := time.Now()
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": "any", "until": []string{}, "timeout_ms": 20000})
	assert.Equal(t, quiet, st["exec_id"])
	assert.Equal(t, "exited", st["state"])
	assert.Less(t, time.Since(start), 5*time.Second)

	// A wait that sees nothing yields at its timeout; output since the
	// last status is empty.
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": server, "timeout_ms": 200, "until": []string{}})
	assert.Equal(t, "yield", st["reason"])
	assert.Equal(t, "", st["stdout"])
	assert.EqualValues(t, len("booting\nREADY\n"), st["stdout_offset"])

	// exec.read by exec_id reaches an exec.run command's output.
	r := mustCall(t, rt, "exec.read", map[string]any{"exec_id": server})
	assert.Equal(t, "booting\nREADY\n", r["data"])

	// timeout_s stays the hard limit across yields.
	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": b, "command": "sleep 30", "timeout_s": 1, "yield_ms": 100})
	assert.Equal(t, "yield", st["reason"])
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 20000})
	assert.Equal(t, "exited", st["state"])
	assert.Equal(t, "timeout", st["reason"])
	assert.Equal(t, true, st["timed_out"])

	// An empty until waits for the exit, as exec.run did before.
	st = mustCall(t, rt, "exec.run", map[string]any{"session_id": b, "command": "read x || echo eof", "until": []string{}, "timeout_s": 1})
	assert.Equal(t, "exited", st["state"])
	assert.Equal(t, true, st["timed_out"])
}

func TestInputErrors(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "sleep 30", "yield_ms": 50})
	for _, tc := range []struct {
		params map[string]any
		code   protocol.Code
	}{
		{map[string]any{"session_id": id, "input": "x", "require_waiting": true}, protocol.CodeInvalidState},
		{map[string]any{"session_id": id, "input": []any{map[string]any{"key": "Hyper"}}}, protocol.CodeInvalidParams},
		{map[string]any{"session_id": id, "input": []any{map[string]any{"key": "Enter", "eof": true}}}, protocol.CodeInvalidParams},
		{map[string]any{"session_id": id}, protocol.CodeInvalidParams},
		{map[string]any{"exec_id": "x-nope", "input": "x"}, protocol.CodeStreamNotFound},
		{map[string]any{"session_id": id, "input": "x", "until": []string{"soon"}}, protocol.CodeInvalidParams},
	} {
		_, perr := callJSON(t, rt, "exec.input", tc.params)
		require.NotNil(t, perr, "%v", tc.params)
		assert.Equal(t, tc.code, perr.Code, "%v: %v", tc.params, perr)
	}
	mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": st["exec_id"]})
}

// exec.stream's stream_id is its exec_id: exec.wait, exec.read and
// exec.attach take it; exec.attach refuses an exec.run command's id.
func TestStreamIDIsExecID(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	st := mustCall(t, rt, "exec.stream", map[string]any{"session_id": id, "command": "echo streamed; read x; echo after=$x"})
	require.Equal(t, st["stream_id"], st["exec_id"])
	xid := st["exec_id"].(string)
	w := mustCall(t, rt, "exec.wait", map[string]any{"exec_id": xid, "timeout_ms": 10000})
	waiting(t, w, "line")
	assert.Equal(t, "streamed\n", w["stdout"])
	w = mustCall(t, rt, "exec.input", map[string]any{"exec_id": xid, "input": "z\r"})
	exited(t, w, 0)
	assert.Contains(t, w["stdout"], "after=z\n")
	r := mustCall(t, rt, "exec.read", map[string]any{"exec_id": xid})
	assert.Contains(t, r["data"], "streamed\n")
	a := mustCall(t, rt, "exec.attach", map[string]any{"exec_id": xid})
	assert.Equal(t, xid, a["stream_id"])

	run := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "true"})
	_, perr := callJSON(t, rt, "exec.attach", map[string]any{"exec_id": run["exec_id"]})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
}

// exec.wait on several ids answers the first that ends.
func TestWaitSeveral(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	var ids []any
	for _, cmd := range []string{"sleep 30", "sleep 0.3; echo second-done"} {
		sid := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
		st := mustCall(t, rt, "exec.run", map[string]any{"session_id": sid, "command": cmd, "yield_ms": 10})
		ids = append(ids, st["exec_id"])
	}
	start := time.Now()
	st := mustCall(t, rt, "exec.wait", map[string]any{"exec_ids": ids, "timeout_ms": 20000, "until": []string{}})
	assert.Equal(t, ids[1], st["exec_id"])
	assert.Equal(t, "exited", st["state"])
	assert.Contains(t, st["stdout"], "second-done")
	assert.Less(t, time.Since(start), 5*time.Second)
	_, perr := callJSON(t, rt, "exec.wait", map[string]any{"exec_id": ids[0], "exec_ids": ids})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
	assert.Contains(t, perr.Message, "not both")
	// Neither given: the message says what is missing, not "not both".
	for _, params := range []map[string]any{{}, {"exec_ids": []string{}}} {
		_, perr = callJSON(t, rt, "exec.wait", params)
		require.NotNil(t, perr)
		assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
		assert.Contains(t, perr.Message, "exec_id is missing")
		assert.NotContains(t, perr.Message, "not both")
	}
	mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": ids[0]})
}

// One audit event per input: actor, exec, byte count and keys; the text
// unless secret.
func TestInputAudited(t *testing.T) {
	t.Parallel()
	var buf syncBuffer
	audit := zerolog.New(&buf)
	rt := newRuntime(t, Options{Audit: &audit})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "read a; read b"})
	waiting(t, st, "line")
	mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": []any{"plain-text", map[string]any{"key": "Enter"}}})
	mustCall(t, rt, "exec.input", map[string]any{"session_id": id, "input": "hush-hush\r", "secret": true})
	var events []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev))
		if ev["event"] == "input" {
			events = append(events, ev)
		}
	}
	require.Len(t, events, 2)
	assert.Equal(t, "plain-text", events[0]["text"])
	assert.Equal(t, []any{"Enter"}, events[0]["keys"])
	assert.EqualValues(t, len("plain-text\r"), events[0]["bytes"])
	assert.Equal(t, st["exec_id"], events[0]["exec_id"])
	assert.Equal(t, true, events[1]["secret"])
	assert.Nil(t, events[1]["text"])
	assert.NotContains(t, buf.String(), "hush-hush")
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestRunningStatusSaysWhereItStarted: a status of a command still running
// has no directory "after" it yet; its cwd is the one it started in, not
// "" (which MCP showed as an empty cwd).
func TestRunningStatusSaysWhereItStarted(t *testing.T) {
	t.Parallel()
	rt := newRuntime(t, Options{})
	id := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "cd /usr"})
	st := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "cd /; sleep 30", "yield_ms": 200})
	require.Equal(t, "running", st["state"], "status: %v", st)
	assert.Equal(t, "/usr", st["cwd"])
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 100})
	assert.Equal(t, "/usr", st["cwd"])
	mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": st["exec_id"]})
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	assert.Equal(t, "exited", st["state"])
	assert.Equal(t, "/", st["cwd"], "after it: where the shell is")
}
