package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/internal/leakcheck"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// harness is a Gateway on a real method table with real shells.
type harness struct {
	t  *testing.T
	rt *runtime.Runtime
	g  *Gateway
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	rt := runtime.New(runtime.Options{})
	h := &harness{t: t, rt: rt, g: New(rt, opts)}
	t.Cleanup(func() {
		h.g.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	return h
}

// post sends body to the gateway and returns the status and decoded body.
func (h *harness) post(body string) (int, map[string]any) {
	h.t.Helper()
	return h.postCtx(context.Background(), body)
}

func (h *harness) postCtx(ctx context.Context, body string) (int, map[string]any) {
	h.t.Helper()
	return h.check(h.serve(ctx, body))
}

// serve posts body and returns the recorded response; it does not touch
// t, so a goroutine may call it.
func (h *harness) serve(ctx context.Context, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/execute", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	rec := httptest.NewRecorder()
	h.g.ServeHTTP(rec, req)
	return rec
}

// check decodes a recorded response, on the test's goroutine.
func (h *harness) check(rec *httptest.ResponseRecorder) (int, map[string]any) {
	h.t.Helper()
	if rec.Body.Len() == 0 {
		return rec.Code, nil
	}
	require.Equal(h.t, "application/json", rec.Header().Get("Content-Type"))
	var m map[string]any
	require.NoError(h.t, json.Unmarshal(rec.Body.Bytes(), &m), "body %q", rec.Body.String())
	return rec.Code, m
}

// call is a request in the seed's shape; with edits it applies changes to
// it: a path "a.b" set to a value, or deleted when the value is del.
type call map[string]any

var del = struct{}{}

func newCall(cmd string) call {
	return call{
		"call":   map[string]any{"name": "bash.exec", "args": map[string]any{"cmd": cmd}},
		"ctx":    map[string]any{"runId": "run_1", "sessionId": "s_1", "runtimeMode": "local"},
		"target": map[string]any{"targetId": "trl-local", "kind": "docker-runner", "tenantId": "t_default", "workspaceId": "w_default"},
	}
}

func (c call) with(path string, v any) call {
	parts := strings.Split(path, ".")
	m := map[string]any(c)
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	if v == del {
		delete(m, parts[len(parts)-1])
	} else {
		m[parts[len(parts)-1]] = v
	}
	return c
}

func (c call) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// result returns the ToolResult of a response, unwrapping the updates form.
func result(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	if r, ok := m["result"].(map[string]any); ok {
		return r
	}
	return m
}

func errorOf(m map[string]any) (code, msg string) {
	e, _ := m["error"].(map[string]any)
	code, _ = e["code"].(string)
	msg, _ = e["message"].(string)
	return code, msg
}

// run posts c and requires a 200 answer, returning its ToolResult.
func (h *harness) run(c call) map[string]any {
	h.t.Helper()
	status, m := h.post(c.String())
	require.Equal(h.t, http.StatusOK, status, "%v", m)
	return result(h.t, m)
}

func TestSeedMockRequest(t *testing.T) {
	h := newHarness(t, Options{})
	body, err := os.ReadFile("../testdata/gateway/seed000_mock_request.json")
	require.NoError(t, err)
	status, m := h.post(string(body))
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"ok": true, "output": "ok"}, m)
}

func TestValidation(t *testing.T) {
	h := newHarness(t, Options{})
	for _, tc := range []struct {
		name  string
		body  string
		field string
	}{
		{"empty body", ``, "empty"},
		{"not json", `not json`, "JSON object"},
		{"array", `[1,2]`, "JSON object"},
		{"truncated", `{"call":`, "not valid JSON"},
		{"call missing", newCall("true").with("call", del).String(), "call"},
		{"call not object", newCall("true").with("call", "x").String(), "call must be an object"},
		{"call.name missing", newCall("true").with("call.name", del).String(), "call.name"},
		{"call.name empty", newCall("true").with("call.name", "").String(), "call.name"},
		{"call.name number", newCall("true").with("call.name", 3).String(), "call.name"},
		{"call.args missing", newCall("true").with("call.args", del).String(), "call.args"},
		{"call.args array", newCall("true").with("call.args", []any{"ls"}).String(), "call.args must be an object"},
		{"call.args string", newCall("true").with("call.args", "ls").String(), "call.args must be an object"},
		{"call.args null", newCall("true").with("call.args", nil).String(), "call.args"},
		{"ctx missing", newCall("true").with("ctx", del).String(), "ctx"},
		{"ctx.runId missing", newCall("true").with("ctx.runId", del).String(), "ctx.runId"},
		{"ctx.sessionId missing", newCall("true").with("ctx.sessionId", del).String(), "ctx.sessionId"},
		{"ctx.sessionId empty", newCall("true").with("ctx.sessionId", "").String(), "ctx.sessionId"},
		{"ctx.runtimeMode missing", newCall("true").with("ctx.runtimeMode", del).String(), "ctx.runtimeMode"},
		{"ctx.toolCallId number", newCall("true").with("ctx.toolCallId", 5).String(), "ctx.toolCallId"},
		{"ctx.timeoutMs string", newCall("true").with("ctx.timeoutMs", "5").String(), "ctx.timeoutMs"},
		{"ctx.timeoutMs negative", newCall("true").with("ctx.timeoutMs", -1).String(), "ctx.timeoutMs"},
		{"target missing", newCall("true").with("target", del).String(), "target"},
		{"target array", newCall("true").with("target", []any{}).String(), "target must be an object"},
		{"target.targetId missing", newCall("true").with("target.targetId", del).String(), "target.targetId"},
		{"target.kind missing", newCall("true").with("target.kind", del).String(), "target.kind"},
		{"target.tenantId missing", newCall("true").with("target.tenantId", del).String(), "target.tenantId"},
		{"target.tenantId object", newCall("true").with("target.tenantId", map[string]any{}).String(), "target.tenantId"},
		{"target.workspaceId number", newCall("true").with("target.workspaceId", 1).String(), "target.workspaceId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, m := h.post(tc.body)
			require.Equal(t, http.StatusBadRequest, status, "%v", m)
			require.Equal(t, false, m["ok"])
			code, msg := errorOf(m)
			require.Equal(t, "INVALID_PARAMS", code)
			require.Contains(t, msg, tc.field)
		})
	}
	// workspaceId is optional; unknown fields are ignored.
	require.Equal(t, true, h.run(newCall("true").with("target.workspaceId", del).with("ctx.extra", 1).with("call.args.note", "x"))["ok"])
	// No command ran for any bad request.
	require.Equal(t, 1, h.g.sessionCount())

	req := httptest.NewRequest(http.MethodGet, "/execute", nil)
	rec := httptest.NewRecorder()
	h.g.ServeHTTP(rec, req)
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
}

func TestToolErrors(t *testing.T) {
	h := newHarness(t, Options{})
	res := h.run(newCall("true").with("call.name", "python.exec"))
	require.Equal(t, false, res["ok"])
	code, msg := errorOf(res)
	require.Equal(t, "TOOL_NOT_FOUND", code)
	require.Contains(t, msg, "bash.exec")

	for _, tc := range []struct {
		args  map[string]any
		field string
	}{
		{map[string]any{}, "call.args.cmd"},
		{map[string]any{"cmd": ""}, "call.args.cmd"},
		{map[string]any{"cmd": []any{"ls"}}, "call.args.cmd"},
		{map[string]any{"cmd": "true", "timeoutMs": "soon"}, "call.args.timeoutMs"},
		{map[string]any{"cmd": "true", "timeoutMs": 0}, "call.args.timeoutMs"},
		{map[string]any{"cmd": "true", "stdin": 1}, "call.args.stdin"},
	} {
		res := h.run(newCall("").with("call.args", tc.args))
		require.Equal(t, false, res["ok"])
		code, msg := errorOf(res)
		require.Equal(t, "INVALID_PARAMS", code, "%v", tc.args)
		require.Contains(t, msg, tc.field)
	}
}

func TestOutputAndStdin(t *testing.T) {
	h := newHarness(t, Options{})
	res := h.run(newCall("echo out; echo err >&2"))
	require.Equal(t, map[string]any{"ok": true, "output": "out\nerr\n"}, res)

	// stdout without a final newline is kept apart from stderr.
	res = h.run(newCall("printf out; echo err >&2"))
	require.Equal(t, "out\nerr\n", res["output"])

	// A command reading stdin gets end-of-file, not a hang.
	res = h.run(newCall("cat; echo done"))
	require.Equal(t, "done\n", res["output"])
	res = h.run(newCall("tr a-z A-Z").with("call.args.stdin", "hello\n"))
	require.Equal(t, "HELLO\n", res["output"])

	// No output at all is an empty string, not a missing field.
	status, m := h.post(newCall("true").String())
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"ok": true, "output": ""}, m)
}

func TestSessionsPersistAndIsolate(t *testing.T) {
	h := newHarness(t, Options{})
	dir := t.TempDir()
	require.Equal(t, true, h.run(newCall("cd " + dir + " && export GW_VAR=one"))["ok"])
	res := h.run(newCall("pwd; echo $GW_VAR"))
	require.Equal(t, dir+"\none\n", res["output"], "cd and export persist across a run's calls")

	for name, c := range map[string]call{
		"other tenant":    newCall("pwd; echo $GW_VAR").with("target.tenantId", "t_other"),
		"other workspace": newCall("pwd; echo $GW_VAR").with("target.workspaceId", "w_other"),
		"no workspace":    newCall("pwd; echo $GW_VAR").with("target.workspaceId", del),
		"other session":   newCall("pwd; echo $GW_VAR").with("ctx.sessionId", "s_2"),
	} {
		res := h.run(c)
		require.Equal(t, "/tmp\n\n", res["output"], name)
	}
	// The same session in another run still shares the shell: the key
	// is the session, not the run.
	res = h.run(newCall("pwd").with("ctx.runId", "run_2"))
	require.Equal(t, dir+"\n", res["output"])
	require.Equal(t, 5, h.g.sessionCount())

	// Session names are stable, opaque, and tell the key's parts apart.
	name := sessionName("t", "w", "s")
	require.Regexp(t, `^gw-[0-9a-f]{24}$`, name)
	require.Equal(t, name, sessionName("t", "w", "s"))
	require.NotEqual(t, sessionName("ab", "c", "s"), sessionName("a", "bc", "s"))
	require.NotEqual(t, sessionName("t", "", "ws"), sessionName("t", "w", "s"))
}

func TestCommandFailed(t *testing.T) {
	h := newHarness(t, Options{})
	res := h.run(newCall("echo out; echo err >&2; (exit 3)"))
	require.Equal(t, false, res["ok"])
	code, msg := errorOf(res)
	require.Equal(t, "COMMAND_FAILED", code)
	require.Contains(t, msg, "status 3")
	require.Equal(t, "out\nerr\n", res["output"], "the output is kept")

	res = h.run(newCall("no-such-command-xyz"))
	code, msg = errorOf(res)
	require.Equal(t, "COMMAND_FAILED", code)
	require.Contains(t, msg, "status 127")
	require.Contains(t, res["output"], "no-such-command-xyz")

	// A command that ends the shell: the next call gets a new one.
	require.Equal(t, true, h.run(newCall("cd /"))["ok"])
	res = h.run(newCall("exit 4"))
	code, msg = errorOf(res)
	require.Equal(t, "COMMAND_FAILED", code)
	require.Contains(t, msg, "status 4")
	res = h.run(newCall("pwd"))
	require.Equal(t, true, res["ok"])
	require.Equal(t, "/tmp\n", res["output"])
}

func TestTimeout(t *testing.T) {
	h := newHarness(t, Options{})
	start := time.Now()
	res := h.run(newCall("echo started; sleep 30").with("call.args.timeoutMs", 1000))
	took := time.Since(start)
	require.Equal(t, false, res["ok"])
	code, msg := errorOf(res)
	require.Equal(t, "COMMAND_TIMEOUT", code)
	require.Contains(t, msg, "1000 ms")
	require.Equal(t, "started\n", res["output"])
	// The answer is due 50 ms before the caller's own timeout (see
	// TestTimeoutChoice); the slack is for a loaded machine.
	require.Less(t, took, 1300*time.Millisecond)
	require.Greater(t, took, 500*time.Millisecond)

	// ctx.timeoutMs works too, and the session is usable afterwards.
	res = h.run(newCall("sleep 30").with("ctx.timeoutMs", 800))
	code, _ = errorOf(res)
	require.Equal(t, "COMMAND_TIMEOUT", code)
	require.Equal(t, true, h.run(newCall("echo again"))["ok"])

	// A command that ignores SIGINT is answered in time all the same.
	start = time.Now()
	res = h.run(newCall("(trap '' INT; sleep 5)").with("call.args.timeoutMs", 1500))
	// Answered at 1425 ms, long before the runtime's SIGKILL (at 1200 ms
	// + 2 s) ends the command.
	require.Less(t, time.Since(start), 2500*time.Millisecond)
	code, _ = errorOf(res)
	require.Equal(t, "COMMAND_TIMEOUT", code)
	// The next call waits for the session to be free, then runs.
	res = h.run(newCall("echo after").with("call.args.timeoutMs", 10000))
	require.Equal(t, true, res["ok"], "%v", res)
	require.Equal(t, "after\n", res["output"])
}

func TestTimeoutChoice(t *testing.T) {
	g := &Gateway{opts: Options{}}
	g.opts.defaults()
	for _, tc := range []struct {
		c    call
		want time.Duration
	}{
		{newCall("x"), 15 * time.Second},
		{newCall("x").with("ctx.timeoutMs", 2000), 2 * time.Second},
		{newCall("x").with("call.args.timeoutMs", 3000).with("ctx.timeoutMs", 2000), 3 * time.Second},
		{newCall("x").with("call.args.timeoutMs", 1e9), 180 * time.Second},
		{newCall("x").with("call.args.timeoutMs", 0.5), time.Millisecond},
	} {
		req, err := parseRequest([]byte(tc.c.String()))
		require.NoError(t, err)
		d, err := g.timeout(req)
		require.NoError(t, err)
		require.Equal(t, tc.want, d, "%s", tc.c)
	}
	arrived := time.Now()
	cmdBy, answerBy := budget(arrived, 15*time.Second)
	require.Equal(t, 14*time.Second, cmdBy.Sub(arrived))
	require.Equal(t, 14750*time.Millisecond, answerBy.Sub(arrived))
	cmdBy, answerBy = budget(arrived, time.Second)
	require.Equal(t, 800*time.Millisecond, cmdBy.Sub(arrived))
	require.Equal(t, 950*time.Millisecond, answerBy.Sub(arrived))
}

func TestUpdates(t *testing.T) {
	h := newHarness(t, Options{})
	status, m := h.post(newCall("echo a; sleep 0.4; echo b >&2; sleep 0.4; echo c").String())
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, map[string]any{"ok": true, "output": "a\nc\nb\n"}, m["result"])
	updates := m["updates"].([]any)
	require.Len(t, updates, 3)
	at := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	var prev string
	for i, want := range []struct{ delta, stream string }{{"a\n", "stdout"}, {"b\n", "stderr"}, {"c\n", "stdout"}} {
		u := updates[i].(map[string]any)
		require.Equal(t, want.delta, u["delta"])
		require.Equal(t, want.stream, u["stream"])
		require.Regexp(t, at, u["at"])
		require.Greater(t, u["at"], prev)
		prev = u["at"].(string)
	}

	// Failures keep the wrapped form too.
	_, m = h.post(newCall("echo a; sleep 0.3; echo b; (exit 1)").String())
	require.Len(t, m["updates"], 2)
	code, _ := errorOf(m["result"].(map[string]any))
	require.Equal(t, "COMMAND_FAILED", code)
}

func TestIdempotency(t *testing.T) {
	h := newHarness(t, Options{})
	dir := t.TempDir()
	counter := filepath.Join(dir, "runs")
	c := newCall(fmt.Sprintf("echo run >> %s; sleep 0.5; wc -l < %s", counter, counter)).with("ctx.toolCallId", "tool_1")

	// Concurrent duplicates: the command runs once, every POST gets its
	// answer.
	const n = 6
	bodies := make([]map[string]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			status, m := h.post(c.String())
			require.Equal(t, http.StatusOK, status)
			bodies[i] = m
		})
	}
	wg.Wait()
	for _, m := range bodies {
		require.Equal(t, map[string]any{"ok": true, "output": "1\n"}, m)
	}
	runs := func() int {
		b, err := os.ReadFile(counter)
		require.NoError(t, err)
		return strings.Count(string(b), "run")
	}
	require.Equal(t, 1, runs())

	// A later repeat gets the remembered answer.
	require.Equal(t, map[string]any{"ok": true, "output": "1\n"}, h.run(c))
	require.Equal(t, 1, runs())

	// Another tenant's toolCallId is its own.
	require.Equal(t, true, h.run(c.with("target.tenantId", "t_other"))["ok"])
	require.Equal(t, 2, runs())
	c.with("target.tenantId", "t_default")

	// The same id for a different call is refused, not answered wrongly.
	status, m := h.post(newCall("echo other").with("ctx.toolCallId", "tool_1").String())
	require.Equal(t, http.StatusConflict, status)
	code, _ := errorOf(m)
	require.Equal(t, "IDEMPOTENCY_CONFLICT", code)

	// Without a toolCallId every POST runs.
	plain := newCall(fmt.Sprintf("echo run >> %s", counter))
	h.run(plain)
	h.run(plain)
	require.Equal(t, 4, runs())
}

func TestClientGoneCallGoesOn(t *testing.T) {
	h := newHarness(t, Options{})
	marker := filepath.Join(t.TempDir(), "marker")
	c := newCall("sleep 0.5; echo done > "+marker+"; echo finished").with("ctx.toolCallId", "tool_gone")
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	status, m := h.postCtx(ctx, c.String())
	require.Nil(t, m, "no answer to a client that left")
	_ = status
	// The retry waits for the same call and gets its answer.
	require.Equal(t, map[string]any{"ok": true, "output": "finished\n"}, h.run(c))
	b, err := os.ReadFile(marker)
	require.NoError(t, err)
	require.Equal(t, "done\n", string(b))
}

func TestCallsInOneSessionTakeTurns(t *testing.T) {
	h := newHarness(t, Options{})
	var wg sync.WaitGroup
	results := make([]map[string]any, 3)
	for i := range 3 {
		wg.Go(func() { results[i] = h.run(newCall(fmt.Sprintf("sleep 0.2; echo %d", i))) })
	}
	wg.Wait()
	for i, r := range results {
		require.Equal(t, true, r["ok"], "%v", r)
		require.Equal(t, fmt.Sprintf("%d\n", i), r["output"])
	}
}

func TestIdleSessionsAreReaped(t *testing.T) {
	h := newHarness(t, Options{IdleTimeout: 300 * time.Millisecond})
	dir := t.TempDir()
	require.Equal(t, true, h.run(newCall("cd " + dir))["ok"])
	require.Equal(t, dir+"\n", h.run(newCall("pwd"))["output"])
	gwSessions := func() int {
		reply, err := h.rt.Handle(context.Background(), &protocol.Call{Method: protocol.MethodSessionList})
		require.NoError(t, err)
		n := 0
		for _, s := range reply.Data.(protocol.SessionListResult).Sessions {
			if strings.HasPrefix(s.Name, "gw-") {
				n++
			}
		}
		return n
	}
	require.Equal(t, 1, gwSessions())
	require.Eventually(t, func() bool { return gwSessions() == 0 && h.g.sessionCount() == 0 }, 5*time.Second, 50*time.Millisecond)
	// The next call starts afresh.
	require.Equal(t, "/tmp\n", h.run(newCall("pwd"))["output"])
	require.Equal(t, 1, gwSessions())
}

func TestCloseAnswersShuttingDown(t *testing.T) {
	h := newHarness(t, Options{})
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		done <- h.serve(context.Background(), newCall("sleep 10").with("call.args.timeoutMs", 20000).String())
	}()
	require.Eventually(t, func() bool { return h.g.sessionCount() == 1 }, 5*time.Second, 10*time.Millisecond)
	time.Sleep(200 * time.Millisecond)
	h.g.Close()
	select {
	case rec := <-done:
		_, m := h.check(rec)
		code, _ := errorOf(m)
		require.Equal(t, "SHUTTING_DOWN", code)
	case <-time.After(5 * time.Second):
		t.Fatal("a call in progress was not answered on Close")
	}
	status, m := h.post(newCall("true").String())
	require.Equal(t, http.StatusServiceUnavailable, status)
	code, _ := errorOf(m)
	require.Equal(t, "SHUTTING_DOWN", code)
}

// A command that waits for terminal input (here a password prompt on
// /dev/tty) is answered at once: a gateway call cannot answer it.
func TestCommandWaitingInput(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed: the prompt comes from its getpass")
	}
	h := newHarness(t, Options{})
	start := time.Now()
	res := h.run(newCall(`echo before; python3 -c 'import getpass; getpass.getpass("Token: ")'`))
	require.Equal(t, false, res["ok"])
	code, msg := errorOf(res)
	require.Equal(t, CodeCommandWaitingInput, code)
	require.Contains(t, msg, `"Token: "`)
	require.Contains(t, msg, "password")
	require.Contains(t, res["output"], "before\n")
	require.Less(t, time.Since(start), 10*time.Second, "answered at once, not at the timeout")
	// The command was interrupted: the session takes the next call.
	require.Equal(t, true, h.run(newCall("echo next"))["ok"])
}

// TestPendingBytesBounded: the calls in progress hold at most
// MaxPendingBytes of requests together; past it a call is answered 503
// LIMIT_EXCEEDED at once. Clients that posted big calls and hung up
// grew the daemon without bound (40 of 15 MiB: 2 GB).
func TestPendingBytesBounded(t *testing.T) {
	h := newHarness(t, Options{MaxPendingBytes: 2000})
	long := newCall("sleep 2").with("ctx.sessionId", "busy").with("ctx.toolCallId", "tc-long")
	done := make(chan struct{})
	go func() { defer close(done); h.serve(context.Background(), long.String()) }()
	require.Eventually(t, func() bool {
		h.g.mu.Lock()
		defer h.g.mu.Unlock()
		return h.g.pending > 0
	}, 5*time.Second, time.Millisecond)
	big := newCall("cat").with("ctx.sessionId", "other").with("ctx.toolCallId", "tc-big").with("call.args.stdin", strings.Repeat("x", 2000))
	status, m := h.post(big.String())
	require.Equal(t, http.StatusServiceUnavailable, status)
	code, msg := errorOf(m)
	require.Equal(t, "LIMIT_EXCEEDED", code, msg)
	<-done
	// The call's bytes are given back just after its answer is written.
	require.Eventually(t, func() bool {
		h.g.mu.Lock()
		defer h.g.mu.Unlock()
		return h.g.pending == 0
	}, 5*time.Second, time.Millisecond)
	status, _ = h.post(big.with("ctx.toolCallId", "tc-big-2").String())
	require.Equal(t, http.StatusOK, status, "once the first call ended, a big one is taken")
}
