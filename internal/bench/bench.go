// Package bench measures a trl daemon side by side with the floors of the
// machine it runs on, in one run: the transport floor (system.ping on the
// same connection), a bare fork/exec from the benchmark's own process, and
// a PTY read raw in the same process. Absolute numbers drift between
// machines and runs; the ratios measured in one run are what compare.
//
// It owns the daemon it measures (a child `trl serve` stopped with
// SIGTERM) unless given the socket of one already running. Each group of
// measurements lives in its own file; a group that fails records its error
// and the others still run.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/trl-project/trl/protocol"
)

// Options configure a run. Zero values mean the full benchmark.
type Options struct {
	// Exe is the trl binary started as the daemon (serve). Ignored when
	// Socket is set.
	Exe string
	// Socket is an already running daemon to measure instead of starting
	// one; its memory is then read with system.stats.
	Socket string
	// HTTPAddr (host:port) and Token reach that daemon's HTTP transport;
	// with Socket and no HTTPAddr the HTTP measurements are skipped.
	HTTPAddr, Token string
	// Quick uses few iterations and small sizes: it proves the benchmark
	// works, it measures nothing worth keeping.
	Quick bool
	// Sessions is the largest session count of the memory step; 0 means
	// 1,000 (20 with Quick).
	Sessions int
	// StreamMB is the size of the streamed output; 0 means 200 (8 with
	// Quick).
	StreamMB int
	// Only limits the run to these groups (see Groups); empty means all.
	Only []string
	// Progress receives a line per step; nil means none.
	Progress io.Writer
}

// Groups are the measurement groups, in the order they run. Memory comes
// first, on a daemon that has done nothing yet: later groups leave freed
// heap behind that new sessions would reuse, hiding their cost.
var Groups = []string{"sessions", "latency", "parallel", "cancel", "largerun", "stream", "screen", "interactive", "policy", "files", "state", "masking"}

// plan is how much of each measurement a run does.
type plan struct {
	latencyN, warm  int
	parallelFor     time.Duration
	parallelClients []int
	cancelN         int
	largeRunN       int
	largeRunBytes   int
	streamBytes     int
	streamRuns      int
	sessions        int
	sessionsStep    int
	settle          time.Duration
}

func newPlan(o Options) plan {
	p := plan{
		latencyN: 2000, warm: 200,
		parallelFor: 3 * time.Second, parallelClients: []int{1, 2, 4, 8, 32},
		cancelN:   200,
		largeRunN: 5, largeRunBytes: 10_000_000,
		streamBytes: 200_000_000, streamRuns: 3,
		sessions: 1000,
		settle:   time.Second,
	}
	if o.Quick {
		p.latencyN, p.warm = 200, 20
		p.parallelFor = 300 * time.Millisecond
		p.cancelN = 10
		p.largeRunN = 2
		p.streamBytes, p.streamRuns = 8_000_000, 1
		p.sessions = 20
		p.settle = 100 * time.Millisecond
	}
	if o.Sessions > 0 {
		p.sessions = o.Sessions
	}
	if o.StreamMB > 0 {
		p.streamBytes = o.StreamMB * 1_000_000
	}
	p.sessionsStep = min(200, p.sessions/2)
	return p
}

// Report is everything one run measured.
type Report struct {
	Machine  Machine   `json:"machine"`
	Config   Config    `json:"config"`
	Latency  *Latency  `json:"latency"`
	Stream   *Stream   `json:"stream"`
	LargeRun *LargeRun `json:"large_run"`
	Sessions *Sessions `json:"sessions"`
	Parallel *Parallel `json:"parallel"`
	Cancel   *Cancel   `json:"cancel"`
	Screen   *Screen   `json:"screen"`
	// Interactive is SPEC §8: how soon a prompt is told, and a REPL's
	// round trip.
	Interactive *Interactive `json:"interactive"`
	// Policy is SPEC §16: evaluating a line against a 20-rule policy.
	Policy *Policy `json:"policy"`
	Files  *Files  `json:"files"`
	// State is SPEC §17: session.state and session.fork.
	State *StateBench `json:"state"`
	// Masking is #23's cost of masking a session's secrets.
	Masking *Masking `json:"masking"`
	Goals   []Goal   `json:"goals"`
}

// Config records how the run was made.
type Config struct {
	Quick       bool     `json:"quick"`
	Daemon      string   `json:"daemon"` // "started" or "existing"
	Iterations  int      `json:"iterations"`
	Sessions    int      `json:"sessions"`
	StreamBytes int      `json:"stream_bytes"`
	Only        []string `json:"only,omitempty"`
}

// runner carries what every measurement needs.
type runner struct {
	ctx    context.Context
	opts   Options
	plan   plan
	socket string
	d      *daemon // nil for an existing daemon
	// httpAddr and token reach the HTTP transport; httpSkip says why
	// there is none.
	httpAddr, token, httpSkip string
}

// Run measures and returns the report. It fails only when there is no
// daemon to measure; a failing measurement is recorded in its section.
func Run(ctx context.Context, o Options) (rep *Report, err error) {
	r := &runner{ctx: ctx, opts: o, plan: newPlan(o)}
	for _, g := range o.Only {
		if !slices.Contains(Groups, g) {
			return nil, fmt.Errorf("unknown group %q; the groups are %v", g, Groups)
		}
	}
	rep = &Report{Config: Config{Quick: o.Quick, Iterations: r.plan.latencyN, Sessions: r.plan.sessions, StreamBytes: r.plan.streamBytes, Only: o.Only}}
	if o.Socket != "" {
		r.socket, r.httpAddr, r.token = o.Socket, o.HTTPAddr, o.Token
		rep.Config.Daemon = "existing"
		if r.httpAddr == "" {
			r.httpSkip = "skipped: no --http address given for the existing daemon"
		}
	} else {
		rep.Config.Daemon = "started"
		if err := r.start(); err != nil {
			return nil, err
		}
		defer func() {
			if serr := r.d.stop(); serr != nil && err == nil {
				err = serr
			}
		}()
	}
	rep.Machine = machine()
	rep.Machine.TRLVersion = r.version()

	steps := map[string]func(){
		"sessions":    func() { rep.Sessions = r.sessions() },
		"latency":     func() { rep.Latency = r.latency() },
		"parallel":    func() { rep.Parallel = r.parallel() },
		"cancel":      func() { rep.Cancel = r.cancel() },
		"largerun":    func() { rep.LargeRun = r.largeRun() },
		"stream":      func() { rep.Stream = r.stream() },
		"screen":      func() { rep.Screen = r.screen() },
		"interactive": func() { rep.Interactive = r.interactive() },
		"policy":      func() { rep.Policy = r.policy() },
		"files":       func() { rep.Files = r.files() },
		"state":       func() { rep.State = r.state() },
		"masking":     func() { rep.Masking = r.masking() },
	}
	for _, g := range Groups {
		if len(o.Only) > 0 && !slices.Contains(o.Only, g) {
			continue
		}
		if ctx.Err() != nil {
			return nil, context.Cause(ctx)
		}
		r.progress("measuring %s", g)
		steps[g]()
	}
	rep.Goals = goals(rep)
	return rep, nil
}

// start launches the daemon with --http; if it refuses (a build without
// the HTTP transport), it starts it again without and HTTP is skipped.
func (r *runner) start() error {
	d, err := startDaemon(r.opts.Exe, true, nil)
	if err != nil {
		why := err.Error()
		var ee *exitError
		if errors.As(err, &ee) {
			why = ee.stderr
		}
		r.httpSkip = "skipped: `trl serve --http` did not start: " + firstLine(why)
		r.progress("the daemon refused --http (%s); HTTP is skipped", firstLine(why))
		if d, err = startDaemon(r.opts.Exe, false, nil); err != nil {
			return err
		}
	}
	r.d, r.socket, r.httpAddr, r.token = d, d.socket, d.httpAddr, d.token
	return nil
}

func (r *runner) progress(format string, args ...any) {
	if r.opts.Progress != nil {
		fmt.Fprintf(r.opts.Progress, "trl bench: "+format+"\n", args...)
	}
}

// dial opens a TRL-dialect connection with a deadline generous enough
// for the slowest step.
func (r *runner) dial() (*Conn, error) {
	c, err := Dial(r.socket, false)
	if err != nil {
		return nil, err
	}
	c.Deadline(10 * time.Minute)
	return c, nil
}

func (r *runner) version() string {
	c, err := r.dial()
	if err != nil {
		return ""
	}
	defer c.Close()
	var v protocol.PingResult
	c.Call(protocol.MethodSystemPing, nil, &v)
	return v.Version
}

// rss is the daemon's resident memory: from /proc for our own daemon,
// from system.stats for an existing one.
func (r *runner) rss() (int64, error) {
	if r.d != nil {
		return rssBytes(r.d.pid())
	}
	c, err := r.dial()
	if err != nil {
		return 0, err
	}
	defer c.Close()
	var st protocol.StatsResult
	if err := c.Call(protocol.MethodSystemStats, nil, &st); err != nil {
		return 0, err
	}
	if st.MemoryRSSBytes == 0 {
		return 0, errors.New("system.stats reported no memory_rss_bytes")
	}
	return st.MemoryRSSBytes, nil
}

// daemonCPU is the daemon's CPU time so far (0 for an existing daemon).
func (r *runner) daemonCPU() time.Duration {
	if r.d == nil {
		return 0
	}
	t, _ := cpuTime(r.d.pid())
	return t
}

// newSession creates a session with default settings and returns its id.
func newSession(c caller) (string, error) {
	var s protocol.SessionInfo
	if err := c.Call(protocol.MethodSessionCreate, nil, &s); err != nil {
		return "", err
	}
	return s.SessionID, nil
}

// dialSession opens a connection with a session of its own; done destroys
// the session and closes the connection.
func (r *runner) dialSession() (c *Conn, id string, done func(), err error) {
	c, err = r.dial()
	if err != nil {
		return nil, "", nil, err
	}
	if id, err = newSession(c); err != nil {
		c.Close()
		return nil, "", nil, fmt.Errorf("session.create: %w", err)
	}
	return c, id, func() {
		destroySession(c, id)
		c.Close()
	}, nil
}

func destroySession(c caller, id string) error {
	return c.Call(protocol.MethodSessionDestroy, protocol.SessionDestroyParams{SessionID: id, Force: true}, nil)
}

func firstLine(s string) string {
	for i := range len(s) {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
