package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []time.Duration
		want    Stats
	}{
		{"empty", nil, Stats{}},
		{"one", []time.Duration{7 * time.Microsecond}, Stats{N: 1, P50US: 7, P90US: 7, P95US: 7, P99US: 7, MaxUS: 7, MeanUS: 7}},
		{"1..100 shuffled", shuffled(100), Stats{N: 100, P50US: 50, P90US: 90, P95US: 95, P99US: 99, MaxUS: 100, MeanUS: 50.5}},
		{"1..1000", shuffled(1000), Stats{N: 1000, P50US: 500, P90US: 900, P95US: 950, P99US: 990, MaxUS: 1000, MeanUS: 500.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Summarize(tt.samples))
		})
	}
}

// shuffled returns 1..n µs in a scrambled order.
func shuffled(n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration((i*7919)%n+1) * time.Microsecond
	}
	return out
}

func TestSampleStopsAtFirstError(t *testing.T) {
	calls := 0
	got, err := sample(2, 10, func() error {
		calls++
		if calls == 5 {
			return fmt.Errorf("boom")
		}
		return nil
	})
	require.EqualError(t, err, "boom")
	assert.Len(t, got, 2, "the two recorded calls before the failing one")
}

// TestByTurns: each series is warmed up, then the series take turns in
// rounds, every call recorded in its own series; a failure stops it.
func TestByTurns(t *testing.T) {
	var order []string
	fn := func(name string) func() error {
		return func() error { order = append(order, name); return nil }
	}
	got, err := byTurns(1, 5, 2, fn("a"), fn("b"))
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b", "a", "a", "a", "b", "b", "b", "a", "a", "b", "b"}, order,
		"a warm-up call each, then a round of 3 and a round of 2")
	require.Len(t, got, 2)
	assert.Len(t, got[0], 5)
	assert.Len(t, got[1], 5)

	calls := 0
	_, err = byTurns(0, 10, 5, fn("a"), func() error {
		if calls++; calls == 3 {
			return fmt.Errorf("boom")
		}
		return nil
	})
	require.EqualError(t, err, "boom")
}

// fakeDaemon answers each request line with the lines script returns.
func fakeDaemon(t *testing.T, script func(req map[string]any) []string) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "fake.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	var wg sync.WaitGroup
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
	})
	wg.Go(func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		sc := bufio.NewScanner(c)
		for sc.Scan() {
			var req map[string]any
			if json.Unmarshal(sc.Bytes(), &req) != nil {
				return
			}
			for _, line := range script(req) {
				if _, err := c.Write([]byte(line + "\n")); err != nil {
					return
				}
			}
		}
	})
	return sock
}

func TestConnQueuesNotificationsAndDecodesErrors(t *testing.T) {
	sock := fakeDaemon(t, func(req map[string]any) []string {
		id := req["id"].(float64)
		switch req["method"] {
		case "exec.stream":
			// The exit notification overtakes nothing: it comes before
			// the response to a later request, as a real daemon may send.
			return []string{fmt.Sprintf(`{"id":%v,"ok":true,"data":{"stream_id":"st-1"}}`, id)}
		case "exec.cancel":
			return []string{
				`{"method":"exec.output","params":{"stream_id":"st-1","seq":0,"stream":"stdout","data":"hé\n","offset":0}}`,
				`{"method":"exec.exit","params":{"stream_id":"st-1","exit_code":130,"canceled":true}}`,
				fmt.Sprintf(`{"id":%v,"ok":true,"data":{"canceled":true}}`, id),
			}
		default:
			return []string{fmt.Sprintf(`{"id":%v,"ok":false,"error":{"code":"SESSION_NOT_FOUND","message":"no session"}}`, id)}
		}
	})
	c, err := Dial(sock, false)
	require.NoError(t, err)
	defer c.Close()
	c.Deadline(10 * time.Second)

	var st struct {
		StreamID string `json:"stream_id"`
	}
	require.NoError(t, c.Call("exec.stream", execParams{Command: "x"}, &st))
	assert.Equal(t, "st-1", st.StreamID)
	var res struct {
		Canceled bool `json:"canceled"`
	}
	require.NoError(t, c.Call("exec.cancel", nil, &res))
	assert.True(t, res.Canceled)

	n, err := c.Next()
	require.NoError(t, err)
	assert.Equal(t, "exec.output", n.Method)
	assert.Equal(t, "hé\n", n.Data)
	assert.False(t, n.At.IsZero())
	n, err = c.Next()
	require.NoError(t, err)
	assert.Equal(t, "exec.exit", n.Method)
	assert.True(t, n.Canceled)
	assert.Equal(t, 130, n.ExitCode)

	err = c.Call("session.info", nil, nil)
	var ce *CallError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "SESSION_NOT_FOUND", ce.Code)
}

func TestConnJSONRPC(t *testing.T) {
	sock := fakeDaemon(t, func(req map[string]any) []string {
		if req["jsonrpc"] != "2.0" {
			return []string{`{"id":null,"ok":false,"error":{"code":"INVALID_PARAMS","message":"not JSON-RPC"}}`}
		}
		id := req["id"].(float64)
		if req["method"] == "system.ping" {
			return []string{fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"result":{"version":"v"}}`, id)}
		}
		return []string{fmt.Sprintf(`{"jsonrpc":"2.0","id":%v,"error":{"code":-32002,"message":"busy","data":{"code":"SESSION_BUSY"}}}`, id)}
	})
	c, err := Dial(sock, true)
	require.NoError(t, err)
	defer c.Close()
	c.Deadline(10 * time.Second)
	var v struct {
		Version string `json:"version"`
	}
	require.NoError(t, c.Call("system.ping", nil, &v))
	assert.Equal(t, "v", v.Version)
	var ce *CallError
	require.ErrorAs(t, c.Call("exec.run", nil, nil), &ce)
	assert.Equal(t, "SESSION_BUSY", ce.Code)
}

func TestConnLongLine(t *testing.T) {
	big := strings.Repeat("x", 1<<20) // longer than the read buffer
	sock := fakeDaemon(t, func(req map[string]any) []string {
		return []string{fmt.Sprintf(`{"id":%v,"ok":true,"data":{"stdout":%q}}`, req["id"], big)}
	})
	c, err := Dial(sock, false)
	require.NoError(t, err)
	defer c.Close()
	c.Deadline(10 * time.Second)
	var res struct {
		Stdout string `json:"stdout"`
	}
	require.NoError(t, c.Call("exec.run", nil, &res))
	assert.Equal(t, big, res.Stdout)
}

func TestHTTPClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/rpc" || r.Method != http.MethodPost {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"id":null,"ok":false,"error":{"code":"AUTH_FAILED","message":"bad token"}}`)
			return
		}
		var req request
		json.NewDecoder(r.Body).Decode(&req)
		fmt.Fprintf(w, `{"id":%d,"ok":true,"data":{"method":%q}}`, req.ID, req.Method)
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")

	h := NewHTTPClient(addr, "tok")
	var out struct {
		Method string `json:"method"`
	}
	require.NoError(t, h.Call("system.ping", nil, &out))
	assert.Equal(t, "system.ping", out.Method)
	h.Close()

	var ce *CallError
	bad := NewHTTPClient(addr, "wrong")
	require.ErrorAs(t, bad.Call("system.ping", nil, nil), &ce)
	assert.Equal(t, "AUTH_FAILED", ce.Code)
	bad.Close()

	// A server without /rpc answers something that is not a response.
	h404 := &HTTPClient{url: srv.URL + "/nope", token: "tok", hc: srv.Client()}
	assert.ErrorContains(t, h404.Call("system.ping", nil, nil), "HTTP 404")
	srv.Client().CloseIdleConnections()
}

func TestRawPTY(t *testing.T) {
	d, n, err := rawPTY(outputCommand(300_000))
	require.NoError(t, err)
	assert.EqualValues(t, 300_000, n, "every byte, no \\r added")
	assert.Positive(t, d)
}

func TestShellFloor(t *testing.T) {
	f, err := startShellPipe()
	require.NoError(t, err)
	defer f.Close()
	got, err := sample(2, 20, f.once)
	require.NoError(t, err)
	assert.Len(t, got, 20)
}

// TestLayers: the in-process layers of exec.run run trl's own code for
// real (a /bin/sh session, a runtime) and time every call.
func TestLayers(t *testing.T) {
	line, err := sessionLine(2, 20)
	require.NoError(t, err)
	assert.Len(t, line, 20)
	run, err := runtimeInProcess(2, 20)
	require.NoError(t, err)
	assert.Len(t, run, 20)
}

func TestPlan(t *testing.T) {
	full := newPlan(Options{})
	assert.Equal(t, 1000, full.sessions)
	assert.Equal(t, 200, full.sessionsStep)
	assert.Equal(t, 200_000_000, full.streamBytes)
	quick := newPlan(Options{Quick: true, Sessions: 6, StreamMB: 2})
	assert.Equal(t, 6, quick.sessions)
	assert.Equal(t, 3, quick.sessionsStep)
	assert.Equal(t, 2_000_000, quick.streamBytes)
	assert.Less(t, quick.latencyN, full.latencyN)
}

func TestRunRejectsUnknownGroup(t *testing.T) {
	_, err := Run(t.Context(), Options{Socket: "/nonexistent", Only: []string{"latnecy"}})
	assert.ErrorContains(t, err, `unknown group "latnecy"`)
}

func TestGoals(t *testing.T) {
	met, miss := true, false
	rep := &Report{
		Latency:  &Latency{Shell: &Stats{P50US: 40}, Unix: Path{ExecRun: &Stats{P50US: 200, P99US: 1500}, Ping: &Stats{P50US: 70}, ExecOverFork: 0.3}},
		LargeRun: &LargeRun{Encode512K: &Stats{P50US: 250}},
		Stream:   &Stream{Ratio: 0.9},
		Sessions: &Sessions{Target: 1000, Created: 1000, IdleRSSBytes: 9 << 20,
			Create: &Stats{P50US: 2000}, Steps: []SessionStep{{Sessions: 1000, PerSessionBytes: 30 << 10}},
			// The second round, on reused heap, is the one that counts.
			Reused: &SessionStep{Sessions: 1000, PerSessionBytes: 80 << 10}},
		Parallel:    &Parallel{Levels: []Level{{Clients: 8, ExecPerSec: 5000}}},
		Screen:      &Screen{SnapshotLatency: &Stats{P50US: 250}, AptRatio: 15},
		Interactive: &Interactive{ToWaiting: &Stats{P95US: 4000}, REPL: &Stats{P50US: 6000}},
		Policy:      &Policy{Evaluate: &Stats{P50US: 30}, Ratio: 1.1},
		Files:       &Files{Read64K: &Stats{P50US: 300}, Cat64K: &Stats{P50US: 900}, HTTPOverDisk: 0.4},
		State:       &StateBench{State: &Stats{P50US: 6000}, ForkOverCreate: 1.5},
		Masking:     &Masking{Ratio: 1.02, LimitsRatio: 1.08},
	}
	got := map[string]*bool{}
	for _, g := range goals(rep) {
		got[g.Goal] = g.Met
	}
	want := map[string]*bool{
		"exec.run true p50 ≤ 300 µs":                       &met,
		"exec.run true p50 ≤ 0.5× fork/exec":               &met,
		"exec.run true p99 ≤ 1 ms":                         &miss,
		"exec.stream ≥ 0.8× raw PTY":                       &met,
		"session.create p50 ≤ 3 ms":                        &met,
		"idle daemon RSS ≤ 15 MiB":                         &met,
		"daemon RSS per idle session ≤ 64 KiB":             &miss,
		"1,000 concurrent sessions work":                   &met,
		"8 clients ≥ 4,000 exec.run/s, 0 errors":           &met,
		"session.screen 80×24 p50 ≤ 200 µs":                &miss,
		"render text of an apt log ≥ 10× smaller":          &met,
		"waiting_input told p95 ≤ 500 ms after the prompt": &met,
		// 200 against 70 + 40: 1.82×.
		"exec.run true p50 ≤ 2.0× (system.ping p50 + persistent-shell floor p50)": &met,
		"REPL round trip through exec.input ≤ 5 ms":                               &miss,
		"a 512 KiB exec.run result encodes in ≤ 0.3 ms":                           &met,
		// Not measured by the bench: rows all the same.
		"daemon peak RSS ≤ 1.5× max_output_bytes above idle, whatever the bytes (TestResultMemoryBound asserts it)":                          nil,
		"per-session cgroup limits cost exec.run ≤ 5% (a session with limits vs without, same run; measurable only where limits can be set)": &miss,
		"secret masking costs exec.run ≤ 5% (a session with a secret vs without, same run)":                                                  &met,
		"exec.run true with a 20-rule policy ≤ 1.2× without (same run)":                                                                      &met,
		"policy evaluation of a typical line, 20 rules, p50 ≤ 50 µs":                                                                         &met,
		"fs.read 64 KiB p50 ≤ 0.5 ms":                             &met,
		"fs.read 64 KiB faster than exec.run cat":                 &met,
		"GET /files ≥ 0.5× disk read":                             &miss,
		"session.fork p50 ≤ 2× session.create p50":                &met,
		"session.state p50 ≤ 5 ms (bash, 200 vars, 50 functions)": &miss,
	}
	assert.Equal(t, want, got)

	// Nothing measured: every goal says so rather than passing or failing.
	for _, g := range goals(&Report{Sessions: &Sessions{Target: 20}}) {
		assert.Nil(t, g.Met, g.Goal)
		assert.Equal(t, "not measured", g.Measured, g.Goal)
	}
}

func TestWriteTableAndJSON(t *testing.T) {
	rep := &Report{
		Machine: Machine{CPUs: 2, CPUModel: "cpu", Kernel: "6.1", Go: "go1", TRLVersion: "v"},
		Config:  Config{Iterations: 10},
		Latency: &Latency{
			ForkExec: &Stats{P50US: 600, P99US: 1000},
			Unix:     Path{ExecRun: &Stats{P50US: 150}, Ping: &Stats{P50US: 25}, ExecOverPing: 6, ExecOverFork: 0.25},
			JSONRPC:  Path{Error: "broken"},
			HTTP:     Path{Skipped: "skipped: no --http"},
		},
		Stream:   &Stream{Bytes: 200_000_000, Runs: 3, RawPTYMBps: 110, StreamMBps: 99, Ratio: 0.9},
		Parallel: &Parallel{Levels: []Level{{Clients: 8, ExecPerSec: 5000, Errors: 3, Latency: &Stats{P50US: 1500}}}},
	}
	rep.Goals = goals(rep)
	var b bytes.Buffer
	require.NoError(t, WriteTable(&b, rep))
	for _, want := range []string{"fork/exec /bin/true", "150 µs", "1.5 ms", "0.25×", "JSON-RPC 2.0, unix socket: error: broken",
		"HTTP keep-alive: skipped: no --http", "output of 200 MB", "8 clients", "MISS", "n/a"} {
		assert.Contains(t, b.String(), want)
	}

	b.Reset()
	require.NoError(t, WriteJSON(&b, rep))
	var back map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &back))
	for _, k := range []string{"machine", "config", "latency", "stream", "large_run", "sessions", "parallel", "cancel", "goals"} {
		assert.Contains(t, back, k)
	}
}

func TestFormat(t *testing.T) {
	assert.Equal(t, "999 µs", fmtUS(999))
	assert.Equal(t, "1.25 ms", fmtUS(1250))
	assert.Equal(t, "2.5 s", fmtUS(2.5e6))
	assert.Equal(t, "64.0 KiB", fmtBytes(64<<10))
	assert.Equal(t, "15.0 MiB", fmtBytes(15<<20))
	assert.Equal(t, "-1.0 KiB", fmtBytes(-1024))
	assert.Equal(t, 0.5, ratio(1, 2))
	assert.Equal(t, 0.0, ratio(1, 0))
}

// TestDaemonLogInError: the daemon logs to a file, not to this process;
// a daemon that exits before it listens is reported with the end of
// that log.
func TestDaemonLogInError(t *testing.T) {
	exe := filepath.Join(t.TempDir(), "fake-trl")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\necho \"refused to $1\" >&2\nexit 3\n"), 0o755))
	_, err := startDaemon(exe, false, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused to serve")
	assert.Contains(t, err.Error(), "exit status 3")
}
