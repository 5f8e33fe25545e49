package metrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// scrape fetches /metrics from h and parses it with the Prometheus text parser.
func scrape(t *testing.T, h http.Handler) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(rec.Body.String()))
	require.NoError(t, err, rec.Body.String())
	return fams
}

// value returns the sample of family name whose labels are exactly labels.
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	t.Helper()
	f, ok := fams[name]
	require.True(t, ok, "no metric %s", name)
next:
	for _, m := range f.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		for _, l := range m.GetLabel() {
			if labels[l.GetName()] != l.GetValue() {
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
	t.Fatalf("no sample of %s with labels %v", name, labels)
	return 0
}

func TestPrometheusCountsExactly(t *testing.T) {
	active := 3
	p := New(Options{Version: "1.2.3", ActiveSessions: func() int { return active }, NoProcessMetrics: true})
	p.SessionCreated()
	p.SessionCreated()
	p.CommandDone("exec.run", OutcomeOf(0, false, false), 20*time.Millisecond, 10, 2)
	p.CommandDone("exec.run", OutcomeOf(1, false, false), time.Second, 5, 0)
	p.CommandDone("exec.stream", OutcomeOf(0, true, false), 3*time.Second, 1, 1)
	p.CommandDone("exec.stream", OutcomeOf(130, false, true), time.Millisecond, 0, 0)
	p.Request("unix", "exec.run", Code(nil))
	p.Request("unix", "exec.run", Code(protocol.Errorf(protocol.CodeSessionNotFound, "x")))
	p.Request("http", "no.such.method-"+strings.Repeat("x", 100), "METHOD_NOT_FOUND")
	p.Request("http", "evil.method", "METHOD_NOT_FOUND")
	p.ConnOpened("unix")
	p.ConnOpened("unix")
	p.ConnClosed("unix")
	p.ConsoleViewers(2)
	p.ConsoleViewers(-1)

	fams := scrape(t, p.Handler())
	assert.Equal(t, 2.0, value(t, fams, "trl_sessions_created_total", nil))
	assert.Equal(t, 3.0, value(t, fams, "trl_sessions_active", nil))
	assert.Equal(t, 1.0, value(t, fams, "trl_commands_total", map[string]string{"method": "exec.run", "outcome": "ok"}))
	assert.Equal(t, 1.0, value(t, fams, "trl_commands_total", map[string]string{"method": "exec.run", "outcome": "failed"}))
	assert.Equal(t, 1.0, value(t, fams, "trl_commands_total", map[string]string{"method": "exec.stream", "outcome": "timeout"}))
	assert.Equal(t, 1.0, value(t, fams, "trl_commands_total", map[string]string{"method": "exec.stream", "outcome": "canceled"}))
	assert.Equal(t, 2.0, value(t, fams, "trl_command_duration_seconds", map[string]string{"method": "exec.run"}))
	h := fams["trl_command_duration_seconds"].GetMetric()
	var sum float64
	for _, m := range h {
		sum += m.GetHistogram().GetSampleSum()
	}
	assert.InDelta(t, 4.021, sum, 1e-9)
	assert.Equal(t, 16.0, value(t, fams, "trl_output_bytes_total", map[string]string{"stream": "stdout"}))
	assert.Equal(t, 3.0, value(t, fams, "trl_output_bytes_total", map[string]string{"stream": "stderr"}))
	assert.Equal(t, 1.0, value(t, fams, "trl_requests_total", map[string]string{"transport": "unix", "method": "exec.run", "code": "OK"}))
	assert.Equal(t, 1.0, value(t, fams, "trl_requests_total", map[string]string{"transport": "unix", "method": "exec.run", "code": "SESSION_NOT_FOUND"}))
	// Made-up method names never become label values of their own.
	assert.Equal(t, 2.0, value(t, fams, "trl_requests_total", map[string]string{"transport": "http", "method": "other", "code": "METHOD_NOT_FOUND"}))
	assert.Equal(t, 1.0, value(t, fams, "trl_connections", map[string]string{"transport": "unix"}))
	assert.Equal(t, 2.0, value(t, fams, "trl_connections_total", map[string]string{"transport": "unix"}))
	assert.Equal(t, 1.0, value(t, fams, "trl_console_viewers", nil))
	assert.Equal(t, 1.0, value(t, fams, "trl_build_info", map[string]string{"version": "1.2.3", "goversion": goruntime.Version()}))
}

func TestProbes(t *testing.T) {
	var notReady error
	mux := Mux(New(Options{NoProcessMetrics: true}), Probes{Ready: func() error { return notReady }})
	get := func(path string) (int, string) {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	code, _ := get("/livez")
	assert.Equal(t, http.StatusOK, code)
	code, _ = get("/readyz")
	assert.Equal(t, http.StatusOK, code)
	notReady = errors.New("draining")
	code, body := get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "draining")
	code, _ = get("/livez")
	assert.Equal(t, http.StatusOK, code, "a draining daemon is still alive")
}

func TestGetDefaultsToNop(t *testing.T) {
	Set(nil)
	assert.Equal(t, Nop{}, Get())
	p := New(Options{NoProcessMetrics: true})
	Set(p)
	defer Set(nil)
	Get().SessionCreated()
	assert.Equal(t, 1.0, value(t, scrape(t, p.Handler()), "trl_sessions_created_total", nil))
}
