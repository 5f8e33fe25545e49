package runtime

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/internal/leakcheck"
	"github.com/trl-project/trl/protocol"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func newRuntime(t *testing.T, opts Options) *Runtime {
	t.Helper()
	opts.Logger = zerolog.Nop()
	rt := New(opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	return rt
}

// callJSON calls method with params and returns the data as a map, or the
// wire error.
func callJSON(t *testing.T, rt *Runtime, method string, params any) (map[string]any, *protocol.Error) {
	t.Helper()
	raw, err := json.Marshal(params)
	require.NoError(t, err)
	if params == nil {
		raw = nil
	}
	reply, err := rt.Handle(context.Background(), &protocol.Call{Method: method, Params: raw})
	if err != nil {
		return nil, protocol.AsError(err)
	}
	b, err := json.Marshal(reply.Data)
	require.NoError(t, err)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out))
	return out, nil
}

// callAsync calls method on its own goroutine, which must not touch t:
// the result comes back on the channel, to be checked on the test's.
func callAsync(rt *Runtime, method string, params any) <-chan asyncResult {
	ch := make(chan asyncResult, 1)
	go func() {
		raw, err := json.Marshal(params)
		if err != nil {
			ch <- asyncResult{err: err}
			return
		}
		reply, err := rt.Handle(context.Background(), &protocol.Call{Method: method, Params: raw})
		if err != nil {
			ch <- asyncResult{err: err}
			return
		}
		b, err := json.Marshal(reply.Data)
		var out map[string]any
		if err == nil {
			err = json.Unmarshal(b, &out)
		}
		ch <- asyncResult{data: out, err: err}
	}()
	return ch
}

type asyncResult struct {
	data map[string]any
	err  error
}

func mustCall(t *testing.T, rt *Runtime, method string, params any) map[string]any {
	t.Helper()
	out, perr := callJSON(t, rt, method, params)
	require.Nil(t, perr, "%s: %v", method, perr)
	return out
}

func TestSessionLifecycle(t *testing.T) {
	rt := newRuntime(t, Options{})
	dir := t.TempDir()
	s := mustCall(t, rt, "session.create", map[string]any{"name": "work", "working_dir": dir, "env": map[string]string{"MY_VAR": "v"}, "timeout_s": 30})
	id := s["session_id"].(string)
	assert.True(t, strings.HasPrefix(id, "s-"))
	assert.Equal(t, "idle", s["state"])
	assert.Equal(t, "/bin/sh", s["shell"])
	_, err := time.Parse(time.RFC3339, s["created_at"].(string))
	assert.NoError(t, err)

	r := mustCall(t, rt, "exec.run", map[string]any{"session_id": "work", "command": "echo $MY_VAR; mkdir d; cd d"})
	assert.Equal(t, "v\n", r["stdout"])
	assert.Equal(t, dir+"/d", r["cwd"])

	in := mustCall(t, rt, "session.info", map[string]any{"session_id": id})
	assert.Equal(t, dir+"/d", in["working_dir"])
	assert.EqualValues(t, 1, in["commands_run"])
	assert.EqualValues(t, 30, in["timeout_s"])
	assert.NotZero(t, in["pid"])

	list := mustCall(t, rt, "session.list", nil)
	assert.Len(t, list["sessions"], 1)

	_, perr := callJSON(t, rt, "session.create", map[string]any{"name": "work"})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)

	d := mustCall(t, rt, "session.destroy", map[string]any{"session_id": "work"})
	assert.Equal(t, true, d["destroyed"])
	_, perr = callJSON(t, rt, "session.info", map[string]any{"session_id": id})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeSessionNotFound, perr.Code)
	assert.Contains(t, perr.Message, id)
}

func TestBadParams(t *testing.T) {
	rt := newRuntime(t, Options{})
	cases := []struct {
		method string
		params any
		code   protocol.Code
	}{
		{"session.create", map[string]any{"working_dir": "/nonexistent/dir"}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"working_dir": "/etc/passwd"}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"shell": "/no/such/shell"}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"timeout_s": -1}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"timeout_s": 1e300}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"rows": "x"}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"env": map[string]any{"A": 1}}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"env": map[string]any{"BAD-NAME": "x"}}, protocol.CodeInvalidParams},
		{"session.create", map[string]any{"bogus": 1}, protocol.CodeInvalidParams},
		{"session.info", map[string]any{}, protocol.CodeInvalidParams},
		{"session.info", map[string]any{"session_id": "../x"}, protocol.CodeSessionNotFound},
		{"session.destroy", map[string]any{"session_id": "s-nope"}, protocol.CodeSessionNotFound},
		{"exec.run", map[string]any{"session_id": "s-nope", "command": "true"}, protocol.CodeSessionNotFound},
		{"exec.run", map[string]any{}, protocol.CodeInvalidParams},
		{"exec.run", map[string]any{"command": 5}, protocol.CodeInvalidParams},
		{"exec.run", map[string]any{"command": "true", "timeout_s": -5}, protocol.CodeInvalidParams},
		{"exec.run", map[string]any{"command": "true", "max_output_bytes": -1}, protocol.CodeInvalidParams},
		{"exec.run", map[string]any{"command": "a\x00b"}, protocol.CodeInvalidParams},
		{"exec.cancel", map[string]any{"signal": "NOPE"}, protocol.CodeInvalidParams},
		{"exec.cancel", map[string]any{"signal": 0}, protocol.CodeInvalidParams},
		{"exec.read", map[string]any{"stream_id": "st-none"}, protocol.CodeStreamNotFound},
		{"exec.attach", map[string]any{}, protocol.CodeInvalidParams},
		{"no.such", nil, protocol.CodeMethodNotFound},
	}
	for _, tc := range cases {
		_, perr := callJSON(t, rt, tc.method, tc.params)
		if assert.NotNil(t, perr, "%s %v", tc.method, tc.params) {
			assert.Equal(t, tc.code, perr.Code, "%s %v: %s", tc.method, tc.params, perr.Message)
			assert.NotEmpty(t, perr.Message)
		}
	}
	// Nothing above harmed the daemon.
	r := mustCall(t, rt, "exec.run", map[string]any{"command": "echo ok"})
	assert.Equal(t, "ok\n", r["stdout"])
}

// TestOddSessionIDs: ids and names are matched byte for byte, never
// normalised, and odd ones are just not found.
func TestOddSessionIDs(t *testing.T) {
	rt := newRuntime(t, Options{})
	mustCall(t, rt, "session.create", map[string]any{"name": "ｄefault"}) // fullwidth d
	mustCall(t, rt, "session.create", map[string]any{"name": "01"})
	for _, ref := range []string{"default", "1", "001", "01 ", "../01", "s-", "\u0000", "ＯＮＥ", strings.Repeat("x", 10000)} {
		_, perr := callJSON(t, rt, "session.info", map[string]any{"session_id": ref})
		if assert.NotNil(t, perr, ref) {
			assert.Equal(t, protocol.CodeSessionNotFound, perr.Code, ref)
		}
	}
	assert.Equal(t, "01", mustCall(t, rt, "session.info", map[string]any{"session_id": "01"})["name"])
	assert.Equal(t, "ｄefault", mustCall(t, rt, "session.info", map[string]any{"session_id": "ｄefault"})["name"])
	_, perr := callJSON(t, rt, "session.create", map[string]any{"name": "bad\nname"})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeInvalidParams, perr.Code)
}

func TestDefaultSessionAndCheck(t *testing.T) {
	rt := newRuntime(t, Options{})
	mustCall(t, rt, "exec.run", map[string]any{"command": "cd /"})
	r := mustCall(t, rt, "exec.run", map[string]any{"command": "pwd"})
	assert.Equal(t, "/\n", r["stdout"])
	in := mustCall(t, rt, "session.info", map[string]any{"session_id": "default"})
	assert.Equal(t, "default", in["name"])

	_, perr := callJSON(t, rt, "exec.run", map[string]any{"command": "echo no; exit 4", "check": true})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeCommandFailed, perr.Code)
	data := perr.Data.(protocol.ExecStatus)
	require.NotNil(t, data.ExitCode)
	assert.Equal(t, 4, *data.ExitCode)
	assert.Equal(t, "no\n", data.Stdout)

	// The default session exited; naming it says so, omitting it gets a
	// fresh one.
	_, perr = callJSON(t, rt, "exec.run", map[string]any{"session_id": "default", "command": "true"})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeSessionExited, perr.Code)
	r = mustCall(t, rt, "exec.run", map[string]any{"command": "pwd"})
	assert.Equal(t, "/tmp\n", r["stdout"])

	s := mustCall(t, rt, "session.create", nil)
	_, perr = callJSON(t, rt, "exec.run", map[string]any{"session_id": s["session_id"], "command": "sleep 5", "timeout_s": 0.3, "check": true})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeCommandTimeout, perr.Code)
	assert.True(t, perr.Data.(protocol.ExecStatus).TimedOut)
}

func TestBusyAndDestroy(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := mustCall(t, rt, "session.create", nil)
	id := s["session_id"]
	slowRun := callAsync(rt, "exec.run", map[string]any{"session_id": id, "command": "sleep 30"})
	require.Eventually(t, func() bool {
		in := mustCall(t, rt, "session.info", map[string]any{"session_id": id})
		return in["state"] == "busy"
	}, 5*time.Second, 10*time.Millisecond)
	_, perr := callJSON(t, rt, "exec.run", map[string]any{"session_id": id, "command": "true"})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeSessionBusy, perr.Code)
	_, perr = callJSON(t, rt, "session.destroy", map[string]any{"session_id": id})
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeSessionBusy, perr.Code)
	mustCall(t, rt, "session.destroy", map[string]any{"session_id": id, "force": true})
	slow := <-slowRun
	require.NoError(t, slow.err)
	assert.Equal(t, true, slow.data["session_exited"])
}

func TestSessionLimit(t *testing.T) {
	rt := newRuntime(t, Options{Sessions: sessionOpts(2)})
	mustCall(t, rt, "session.create", nil)
	mustCall(t, rt, "session.create", nil)
	_, perr := callJSON(t, rt, "session.create", nil)
	require.NotNil(t, perr)
	assert.Equal(t, protocol.CodeLimitExceeded, perr.Code)
}

// collect runs a Reply's Follow and returns the notifications it sent.
func collect(t *testing.T, ctx context.Context, reply *protocol.Reply) []map[string]any {
	t.Helper()
	var out []map[string]any
	err := reply.Follow(ctx, func(method string, params any) error {
		b, _ := json.Marshal(params)
		var m map[string]any
		json.Unmarshal(b, &m)
		m["method"] = method
		out = append(out, m)
		return nil
	})
	require.NoError(t, err)
	return out
}

func stream(t *testing.T, rt *Runtime, params map[string]any) (string, *protocol.Reply) {
	t.Helper()
	raw, _ := json.Marshal(params)
	reply, err := rt.Handle(context.Background(), &protocol.Call{Method: "exec.stream", Params: raw})
	require.NoError(t, err)
	return reply.Data.(protocol.ExecStreamStarted).StreamID, reply
}

func TestStreamLive(t *testing.T) {
	rt := newRuntime(t, Options{})
	_, reply := stream(t, rt, map[string]any{"command": "echo one; printf part; sleep 1; echo two; echo err >&2"})
	start := time.Now()
	var first time.Duration
	var got []map[string]any
	err := reply.Follow(context.Background(), func(method string, params any) error {
		if first == 0 {
			first = time.Since(start)
		}
		b, _ := json.Marshal(params)
		var m map[string]any
		json.Unmarshal(b, &m)
		m["method"] = method
		got = append(got, m)
		return nil
	})
	require.NoError(t, err)
	total := time.Since(start)
	assert.Less(t, first, total-500*time.Millisecond, "the first output arrived well before the end")
	var stdout, stderr string
	for i, n := range got[:len(got)-1] {
		assert.Equal(t, "exec.output", n["method"])
		assert.EqualValues(t, i, n["seq"])
		if n["stream"] == "stdout" {
			assert.EqualValues(t, len(stdout), n["offset"])
			stdout += n["data"].(string)
		} else {
			stderr += n["data"].(string)
		}
	}
	assert.Equal(t, "one\nparttwo\n", stdout)
	assert.Equal(t, "err\n", stderr)
	last := got[len(got)-1]
	assert.Equal(t, "exec.exit", last["method"])
	assert.EqualValues(t, 0, last["exit_code"])
	assert.Equal(t, false, last["canceled"])
}

func TestStreamReadAttachCancel(t *testing.T) {
	rt := newRuntime(t, Options{})
	id, reply := stream(t, rt, map[string]any{"command": "echo a; echo b; sleep 30"})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	// The client goes away early: the command goes on.
	reply.Follow(ctx, func(string, any) error { return nil })
	require.Eventually(t, func() bool {
		r := mustCall(t, rt, "exec.read", map[string]any{"stream_id": id})
		return r["data"] == "a\nb\n"
	}, 5*time.Second, 20*time.Millisecond)
	r := mustCall(t, rt, "exec.read", map[string]any{"stream_id": id, "offset": 2, "limit": 1})
	assert.Equal(t, "b", r["data"])
	assert.EqualValues(t, 2, r["offset"])
	assert.Equal(t, false, r["complete"])

	raw, _ := json.Marshal(map[string]any{"stream_id": id, "offset": 2})
	att, err := rt.Handle(context.Background(), &protocol.Call{Method: "exec.attach", Params: raw})
	require.NoError(t, err)
	canceled := make(chan (<-chan asyncResult), 1)
	time.AfterFunc(200*time.Millisecond, func() {
		canceled <- callAsync(rt, "exec.cancel", map[string]any{"signal": "TERM"})
	})
	got := collect(t, context.Background(), att)
	sent := <-<-canceled
	require.NoError(t, sent.err)
	assert.Equal(t, true, sent.data["canceled"])
	assert.Equal(t, "SIGTERM", sent.data["signal"])
	assert.Equal(t, "b\n", got[0]["data"])
	assert.EqualValues(t, 2, got[0]["offset"])
	last := got[len(got)-1]
	assert.Equal(t, "exec.exit", last["method"])
	assert.Equal(t, true, last["canceled"])

	r = mustCall(t, rt, "exec.read", map[string]any{"stream_id": id})
	assert.Equal(t, true, r["complete"])
	c := mustCall(t, rt, "exec.cancel", nil)
	assert.Equal(t, false, c["canceled"])
	assert.Equal(t, "ok\n", mustCall(t, rt, "exec.run", map[string]any{"command": "echo ok"})["stdout"])
}

// TestStreamSlowReader: a reader that stops for a while during a large
// stream does not hold the command up, and learns exactly what it lost.
func TestStreamSlowReader(t *testing.T) {
	rt := newRuntime(t, Options{Commands: exec.RegistryOptions{Window: 1 << 20}})
	const total = 20 << 20
	_, reply := stream(t, rt, map[string]any{"command": "head -c 20971520 /dev/zero | tr '\\0' x"})
	var received, lost int64
	paused := false
	err := reply.Follow(context.Background(), func(method string, params any) error {
		if method == "exec.exit" {
			return nil
		}
		m := params.(protocol.OutputNotification)
		if !paused {
			paused = true
			time.Sleep(3 * time.Second)
		}
		lost += m.LostBytes
		assert.Equal(t, received+lost, m.Offset)
		received += int64(len(m.Data))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, int64(total), received+lost)
	assert.Greater(t, lost, int64(0))
}

func TestStats(t *testing.T) {
	rt := newRuntime(t, Options{})
	mustCall(t, rt, "exec.run", map[string]any{"command": "true"})
	st := mustCall(t, rt, "system.stats", nil)
	assert.EqualValues(t, 1, st["active_sessions"])
	assert.EqualValues(t, 1, st["total_commands_run"])
	assert.Greater(t, st["memory_rss_bytes"].(float64), float64(1<<20))
	limits := st["limits"].(map[string]any)
	assert.EqualValues(t, 256, limits["max_sessions"])
	assert.EqualValues(t, 8<<20, limits["stream_window_bytes"])
	p := mustCall(t, rt, "system.ping", nil)
	assert.Equal(t, Version, p["version"])
}
