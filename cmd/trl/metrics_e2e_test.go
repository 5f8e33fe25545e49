package main

import (
	"io"
	"net/http"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var metricsAddrRE = regexp.MustCompile(`"metrics":"([0-9.:\[\]]+)"`)

// scrapeMetrics GETs url and parses it with the Prometheus text parser.
func scrapeMetrics(t *testing.T, url string, header map[string]string) (map[string]*dto.MetricFamily, int) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode != http.StatusOK {
		return nil, resp.StatusCode
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	require.NoError(t, err, "%s", body)
	return fams, resp.StatusCode
}

// sample returns the value of the sample of name with exactly labels, or
// -1 when there is none (a histogram answers its sample count).
func sample(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f, ok := fams[name]
	if !ok {
		return -1
	}
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if v, ok := labels[l.GetName()]; !ok || v != l.GetValue() {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount())
		}
	}
	return -1
}

// TestMetricsAfterAKnownWorkload runs a fixed set of requests against a real
// daemon and checks every count /metrics reports.
func TestMetricsAfterAKnownWorkload(t *testing.T) {
	d := startHTTPDaemon(t, "--metrics", "127.0.0.1:0")
	m := metricsAddrRE.FindStringSubmatch(d.stderr.String())
	require.NotNil(t, m, "no metrics address in the log: %s", d.stderr)
	metricsURL := "http://" + m[1]

	c := dial(t, d.socket)
	data(t, c.call("session.create", nil))
	data(t, c.call("session.create", map[string]any{"name": "m2"}))
	assert.Equal(t, "hello", data(t, c.call("exec.run", map[string]any{"session_id": "m2", "command": "printf hello"}))["stdout"])
	assert.EqualValues(t, 1, data(t, c.call("exec.run", map[string]any{"session_id": "m2", "command": "printf ab >&2; false"}))["exit_code"])
	data(t, c.call("exec.stream", map[string]any{"session_id": "m2", "command": "printf 123"}))
	for n := range c.notes {
		if n["method"] == "exec.exit" {
			break
		}
	}
	assert.Equal(t, false, c.call("no.such", nil)["ok"])
	assert.Equal(t, false, c.call("session.info", map[string]any{"session_id": "s-nope"})["ok"])
	dir := t.TempDir()
	data(t, c.call("fs.write", map[string]any{"session_id": "m2", "path": dir + "/f", "data": "12345"}))
	data(t, c.call("fs.read", map[string]any{"session_id": "m2", "path": dir + "/f"}))
	assert.Equal(t, false, c.call("fs.read", map[string]any{"session_id": "m2", "path": dir + "/none"})["ok"])
	resp := d.post(t, "/rpc", `{"id":1,"method":"system.ping"}`, bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = d.post(t, "/rpc", `{"id":2,"method":"system.ping"}`, map[string]string{"Authorization": "Bearer wrong"})
	require.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	want := []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"trl_sessions_created_total", nil, 2},
		{"trl_sessions_active", nil, 2},
		{"trl_commands_running", nil, 0},
		{"trl_commands_total", map[string]string{"method": "exec.run", "outcome": "ok"}, 1},
		{"trl_commands_total", map[string]string{"method": "exec.run", "outcome": "failed"}, 1},
		{"trl_commands_total", map[string]string{"method": "exec.stream", "outcome": "ok"}, 1},
		{"trl_command_duration_seconds", map[string]string{"method": "exec.run"}, 2},
		{"trl_command_duration_seconds", map[string]string{"method": "exec.stream"}, 1},
		{"trl_output_bytes_total", map[string]string{"stream": "stdout"}, 8},
		{"trl_output_bytes_total", map[string]string{"stream": "stderr"}, 2},
		{"trl_requests_total", map[string]string{"transport": "unix", "method": "session.create", "code": "OK"}, 2},
		{"trl_requests_total", map[string]string{"transport": "unix", "method": "exec.run", "code": "OK"}, 2},
		{"trl_requests_total", map[string]string{"transport": "unix", "method": "exec.stream", "code": "OK"}, 1},
		{"trl_requests_total", map[string]string{"transport": "unix", "method": "other", "code": "METHOD_NOT_FOUND"}, 1},
		{"trl_requests_total", map[string]string{"transport": "unix", "method": "session.info", "code": "SESSION_NOT_FOUND"}, 1},
		{"trl_requests_total", map[string]string{"transport": "http", "method": "system.ping", "code": "OK"}, 1},
		{"trl_requests_total", map[string]string{"transport": "http", "method": "other", "code": "AUTH_FAILED"}, 1},
		// The start-up check's dial and this test's connection.
		{"trl_connections_total", map[string]string{"transport": "unix"}, 2},
		{"trl_connections", map[string]string{"transport": "unix"}, 1},
		{"trl_console_viewers", nil, 0},
		{"trl_requests_total", map[string]string{"transport": "unix", "method": "fs.write", "code": "OK"}, 1},
		{"trl_file_operations_total", map[string]string{"op": "fs.write", "code": "OK"}, 1},
		{"trl_file_operations_total", map[string]string{"op": "fs.read", "code": "OK"}, 1},
		{"trl_file_operations_total", map[string]string{"op": "fs.read", "code": "FILE_NOT_FOUND"}, 1},
		{"trl_file_bytes_total", map[string]string{"op": "fs.write", "code": "OK"}, 5},
		{"trl_file_bytes_total", map[string]string{"op": "fs.read", "code": "OK"}, 5},
	}
	// The stream's exit reaches the client as the command is recorded, so
	// the last counts may lag a moment.
	var fams map[string]*dto.MetricFamily
	require.Eventually(t, func() bool {
		fams, _ = scrapeMetrics(t, metricsURL+"/metrics", nil)
		for _, w := range want {
			if sample(fams, w.name, w.labels) != w.value {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond, "metrics never matched the workload")
	for _, w := range want {
		assert.Equal(t, w.value, sample(fams, w.name, w.labels), "%s%v", w.name, w.labels)
	}
	require.Len(t, fams["trl_build_info"].GetMetric(), 1)
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				assert.NotRegexp(t, `^(s|st|x)-[0-9a-f]+$`, l.GetValue(), "%s has an id as a label", f.GetName())
			}
		}
	}

	// The HTTP listener serves /metrics behind the token, the probes without.
	_, code := scrapeMetrics(t, d.url+"/metrics", nil)
	assert.Equal(t, http.StatusUnauthorized, code)
	fams, code = scrapeMetrics(t, d.url+"/metrics", bearer())
	require.Equal(t, http.StatusOK, code)
	assert.Equal(t, 2.0, sample(fams, "trl_sessions_created_total", nil))
	for _, base := range []string{d.url, metricsURL} {
		for _, p := range []string{"/livez", "/readyz"} {
			resp, err := http.Get(base + p)
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode, base+p)
		}
	}
}

// TestReadyzAtTheLimitEndToEnd: a daemon at --max-sessions is not ready.
func TestReadyzAtTheLimitEndToEnd(t *testing.T) {
	d := startHTTPDaemon(t, "--max-sessions", "1")
	readyz := func() int {
		resp, err := http.Get(d.url + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusOK, readyz())
	c := dial(t, d.socket)
	sid := data(t, c.call("session.create", nil))["session_id"]
	assert.Equal(t, http.StatusServiceUnavailable, readyz())
	data(t, c.call("session.destroy", map[string]any{"session_id": sid}))
	assert.Equal(t, http.StatusOK, readyz())
}

// TestOnePWhileOneRequestRuns: the daemon runs on one P while requests come
// one at a time (internal/procs), takes every P back while a stream is
// followed or requests overlap, and narrows again once they are over, as
// its own go_sched_gomaxprocs_threads says.
func TestOnePWhileOneRequestRuns(t *testing.T) {
	if runtime.NumCPU() < 2 {
		t.Skip("one CPU: the daemon has nothing to narrow")
	}
	d := startDaemonEnv(t, []string{"GOMAXPROCS="}, "--metrics", "127.0.0.1:0")
	if !strings.Contains(d.stderr.String(), "one processor while requests come one at a time") {
		t.Skipf("the daemon has one P to begin with (a CPU quota?), nothing to narrow: %s", d.stderr)
	}
	m := metricsAddrRE.FindStringSubmatch(d.stderr.String())
	require.NotNil(t, m, "no metrics address in the log: %s", d.stderr)
	procs := func() float64 {
		fams, _ := scrapeMetrics(t, "http://"+m[1]+"/metrics", nil)
		return sample(fams, "go_sched_gomaxprocs_threads", nil)
	}
	c := dial(t, d.socket)
	for range 5 {
		data(t, c.call("exec.run", map[string]any{"command": "true"}))
	}
	assert.Equal(t, 1.0, procs(), "one P for requests one at a time")

	data(t, c.call("exec.stream", map[string]any{"command": "sleep 1.5"}))
	// The stream is followed once its first answer is written: a scrape
	// just after that answer may come first.
	assert.Eventually(t, func() bool { return procs() > 1 }, time.Second, 20*time.Millisecond, "every P while a stream is followed")
	require.Eventually(t, func() bool { return procs() == 1 }, 15*time.Second, 50*time.Millisecond, "one P again after the stream and a quiet second")

	slow := c.send("exec.run", map[string]any{"command": "sleep 1"})
	time.Sleep(200 * time.Millisecond)
	data(t, c.call("system.ping", nil)) // a second request while the first runs
	assert.Greater(t, procs(), 1.0, "every P once two requests overlap")
	<-slow
	require.Eventually(t, func() bool { return procs() == 1 }, 15*time.Second, 50*time.Millisecond)

	// Commands left running in two sessions (each exec.run yielded): no
	// request is in flight, but two sessions' output is read at once.
	for range 2 {
		s := data(t, c.call("session.create", nil))
		data(t, c.call("exec.run", map[string]any{"session_id": s["session_id"], "command": "sleep 1.5", "yield_ms": 100}))
	}
	assert.Greater(t, procs(), 1.0, "every P while commands run in two sessions")
	require.Eventually(t, func() bool { return procs() == 1 }, 15*time.Second, 50*time.Millisecond)
}
