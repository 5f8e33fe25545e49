package metrics

import (
	goruntime "runtime"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Options configure a Prometheus recorder.
type Options struct {
	// Version is reported by trl_build_info.
	Version string
	// ActiveSessions, when set, is read at each scrape for
	// trl_sessions_active.
	ActiveSessions func() int
	// RunningCommands, when set, is read at each scrape for
	// trl_commands_running.
	RunningCommands func() int
	// SessionUsage, when set, is read at each scrape for the sessions'
	// summed resource use (trl_sessions_memory_bytes and the like): sums
	// over every session, never labelled by session, so the series do not
	// grow with sessions.
	SessionUsage func() (memoryBytes int64, cpuSeconds float64, pids, oomKills int64)
	// NoProcessMetrics leaves out the Go runtime and process collectors
	// (tests that compare whole scrapes).
	NoProcessMetrics bool
}

// Prometheus is the Recorder behind /metrics. Its registry is its own, so
// several can live in one process (tests).
type Prometheus struct {
	reg            *prometheus.Registry
	sessions       prometheus.Counter
	commands       *prometheus.CounterVec
	duration       *prometheus.HistogramVec
	outputBytes    *prometheus.CounterVec
	requests       *prometheus.CounterVec
	conns          *prometheus.GaugeVec
	connsTotal     *prometheus.CounterVec
	consoleViewers prometheus.Gauge
	policy         *prometheus.CounterVec
	fileOps        *prometheus.CounterVec
	fileBytes      *prometheus.CounterVec
}

// New returns a Prometheus recorder with every trl metric registered.
func New(opts Options) *Prometheus {
	p := &Prometheus{
		reg: prometheus.NewRegistry(),
		sessions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "trl_sessions_created_total", Help: "Sessions whose shell started.",
		}),
		commands: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trl_commands_total", Help: "Finished commands by method and outcome (ok, failed, timeout, canceled).",
		}, []string{"method", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "trl_command_duration_seconds",
			Help:    "How long finished commands ran, by method.",
			Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 180, 600, 1800},
		}, []string{"method"}),
		outputBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trl_output_bytes_total", Help: "Bytes finished commands wrote, by stream (stdout, stderr).",
		}, []string{"stream"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trl_requests_total", Help: "Answered requests by transport, method and code (OK or the error code).",
		}, []string{"transport", "method", "code"}),
		conns: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "trl_connections", Help: "Open client connections by transport.",
		}, []string{"transport"}),
		connsTotal: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trl_connections_total", Help: "Client connections accepted, by transport.",
		}, []string{"transport"}),
		consoleViewers: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "trl_console_viewers", Help: "Web console viewers connected now.",
		}),
		policy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trl_policy_decisions_total", Help: "Decisions on command lines by the policy's action (allow, ask, deny) and outcome (ran, denied, approved, rejected, timed_out, canceled, session_ended).",
		}, []string{"action", "outcome"}),
		fileOps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trl_file_operations_total", Help: "File operations (fs.* and /files) by operation and code (OK or the error code).",
		}, []string{"op", "code"}),
		fileBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "trl_file_bytes_total", Help: "Bytes file operations read or wrote, by operation and code.",
		}, []string{"op", "code"}),
	}
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name:        "trl_build_info",
		Help:        "Always 1; the labels say which trl is running.",
		ConstLabels: prometheus.Labels{"version": opts.Version, "goversion": goruntime.Version()},
	})
	build.Set(1)
	p.reg.MustRegister(p.sessions, p.commands, p.duration, p.outputBytes, p.requests, p.conns, p.connsTotal, p.consoleViewers, p.policy, p.fileOps, p.fileBytes, build)
	if f := opts.ActiveSessions; f != nil {
		p.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "trl_sessions_active", Help: "Sessions the daemon holds now (idle, busy, or exited and not yet destroyed).",
		}, func() float64 { return float64(f()) }))
	}
	if f := opts.RunningCommands; f != nil {
		p.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "trl_commands_running", Help: "Commands running now.",
		}, func() float64 { return float64(f()) }))
	}
	if f := opts.SessionUsage; f != nil {
		p.reg.MustRegister(usageCollector(f))
	}
	if !opts.NoProcessMetrics {
		p.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	return p
}

// Registry is where the metrics are registered, for a handler or a test.
func (p *Prometheus) Registry() *prometheus.Registry { return p.reg }

func (p *Prometheus) SessionCreated() { p.sessions.Inc() }

func (p *Prometheus) CommandDone(method string, o Outcome, d time.Duration, stdoutBytes, stderrBytes int64) {
	method = methodLabel(method)
	p.commands.WithLabelValues(method, string(o)).Inc()
	p.duration.WithLabelValues(method).Observe(d.Seconds())
	p.outputBytes.WithLabelValues("stdout").Add(float64(stdoutBytes))
	p.outputBytes.WithLabelValues("stderr").Add(float64(stderrBytes))
}

func (p *Prometheus) Request(transport, method, code string) {
	p.requests.WithLabelValues(transport, methodLabel(method), codeLabel(code)).Inc()
}

func (p *Prometheus) ConnOpened(transport string) {
	p.conns.WithLabelValues(transport).Inc()
	p.connsTotal.WithLabelValues(transport).Inc()
}

func (p *Prometheus) ConnClosed(transport string) { p.conns.WithLabelValues(transport).Dec() }

func (p *Prometheus) ConsoleViewers(delta int) { p.consoleViewers.Add(float64(delta)) }

func (p *Prometheus) PolicyDecision(action, outcome string) {
	p.policy.WithLabelValues(action, outcome).Inc()
}

func (p *Prometheus) FileOp(op, code string, bytes int64) {
	p.fileOps.WithLabelValues(op, code).Inc()
	p.fileBytes.WithLabelValues(op, code).Add(float64(bytes))
}

// methodLabel keeps the method label's values a small fixed set: a
// client's made-up method names all count as "other".
func methodLabel(m string) string {
	ns, name, ok := strings.Cut(m, ".")
	if !ok || len(m) > 40 {
		return "other"
	}
	switch ns {
	case "session", "exec", "system", "console", "mcp", "fs":
	default:
		return "other"
	}
	for _, r := range name {
		if (r < 'a' || r > 'z') && r != '_' {
			return "other"
		}
	}
	return m
}

// codeLabel does the same for codes: upper-case words only.
func codeLabel(c string) string {
	if c == "" || len(c) > 32 {
		return "OTHER"
	}
	for _, r := range c {
		if (r < 'A' || r > 'Z') && r != '_' {
			return "OTHER"
		}
	}
	return c
}
