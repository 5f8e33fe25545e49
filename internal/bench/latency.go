package bench

import (
	"fmt"
	osexec "os/exec"
	"time"
)

// Latency is exec.run of `true` on each transport beside its floors.
type Latency struct {
	// ForkExec is exec.Command("/bin/true").Run() in the benchmark's own
	// process: what a runtime that starts a process per command cannot
	// go below.
	ForkExec *Stats `json:"fork_exec,omitempty"`
	// Shell is a persistent /bin/sh driven over pipes in-process: the
	// floor of any runtime that keeps a shell per session.
	Shell *Stats `json:"shell_pipe,omitempty"`
	// SessionLine is `true` as trl's command line to a session of
	// /bin/sh in-process, and InProcess exec.run through a runtime
	// in-process: the layers between the shell floor and the socket
	// (layers.go).
	SessionLine *Stats `json:"session_line,omitempty"`
	InProcess   *Stats `json:"exec_run_in_process,omitempty"`
	// OverheadP50US is the unix socket's exec.run p50 less its ping p50
	// and the shell floor's p50: what trl itself adds.
	OverheadP50US float64 `json:"trl_overhead_p50_us,omitempty"`
	Unix          Path    `json:"unix"`
	JSONRPC       Path    `json:"jsonrpc"`
	HTTP          Path    `json:"http"`
	Error         string  `json:"error,omitempty"`
}

// Path is one way of reaching the daemon: exec.run and, on the same
// connection, system.ping, the transport floor.
type Path struct {
	Skipped      string  `json:"skipped,omitempty"`
	Error        string  `json:"error,omitempty"`
	ExecRun      *Stats  `json:"exec_run,omitempty"`
	Ping         *Stats  `json:"ping,omitempty"`
	ExecOverPing float64 `json:"exec_over_ping_p50,omitempty"`
	ExecOverFork float64 `json:"exec_over_fork_p50,omitempty"`
}

type execParams struct {
	SessionID string `json:"session_id"`
	Command   string `json:"command"`
}

type execResult struct {
	ExitCode    int   `json:"exit_code"`
	Truncated   bool  `json:"truncated"`
	StdoutBytes int64 `json:"stdout_bytes"`
	Canceled    bool  `json:"canceled"`
}

func (r *runner) latency() *Latency {
	l := &Latency{}
	p := r.plan
	fork, err := sample(p.warm, p.latencyN, func() error { return osexec.Command("/bin/true").Run() })
	if err != nil {
		l.Error = "fork/exec /bin/true: " + err.Error()
	} else {
		s := Summarize(fork)
		l.ForkExec = &s
	}
	floor := func(name string, f func(warm, n int) ([]time.Duration, error)) *Stats {
		d, err := f(p.warm, p.latencyN)
		if err != nil {
			l.Error = name + ": " + err.Error()
			return nil
		}
		s := Summarize(d)
		return &s
	}
	l.Shell = floor("persistent shell floor", shellFloor)
	l.SessionLine = floor("session line", sessionLine)
	l.InProcess = floor("exec.run in-process", runtimeInProcess)

	if c, err := r.dial(); err != nil {
		l.Unix.Error = err.Error()
	} else {
		l.Unix = r.path(c, l.ForkExec)
		if l.Unix.ExecRun != nil && l.Shell != nil {
			l.OverheadP50US = l.Unix.ExecRun.P50US - l.Unix.Ping.P50US - l.Shell.P50US
		}
	}
	if c, err := Dial(r.socket, true); err != nil {
		l.JSONRPC.Error = err.Error()
	} else {
		l.JSONRPC = r.path(c, l.ForkExec)
	}
	if r.httpAddr == "" {
		l.HTTP.Skipped = r.httpSkip
	} else {
		l.HTTP = r.path(NewHTTPClient(r.httpAddr, r.token), l.ForkExec)
	}
	return l
}

// path measures ping, then exec.run true, on one connection and its own
// session, and closes c.
func (r *runner) path(c caller, fork *Stats) Path {
	defer c.Close()
	var out Path
	id, err := newSession(c)
	if err != nil {
		out.Error = "session.create: " + err.Error()
		return out
	}
	defer destroySession(c, id)
	p := r.plan
	ping, err := sample(p.warm, p.latencyN, func() error { return c.Call("system.ping", nil, nil) })
	if err != nil {
		out.Error = "system.ping: " + err.Error()
		return out
	}
	params := execParams{SessionID: id, Command: "true"}
	run, err := sample(p.warm, p.latencyN, func() error {
		var res execResult
		if err := c.Call("exec.run", params, &res); err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("true exited %d", res.ExitCode)
		}
		return nil
	})
	if err != nil {
		out.Error = "exec.run: " + err.Error()
		return out
	}
	ps, rs := Summarize(ping), Summarize(run)
	out.Ping, out.ExecRun = &ps, &rs
	out.ExecOverPing = ratio(rs.P50US, ps.P50US)
	if fork != nil {
		out.ExecOverFork = ratio(rs.P50US, fork.P50US)
	}
	return out
}
