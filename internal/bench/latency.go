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
	// floor of any runtime that keeps a shell per session. It is timed
	// by turns with the unix socket's ping and exec.run (path).
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
	l.SessionLine = floor("session line", sessionLine)
	l.InProcess = floor("exec.run in-process", runtimeInProcess)

	// The persistent-shell floor is timed by turns with the unix
	// socket's ping and exec.run (byTurns): the goal compares exec.run
	// with their sum, and on a VM each of the three moves with where the
	// kernel puts the processes it wakes.
	sh, err := startShellPipe()
	if err != nil {
		l.Error = "persistent shell floor: " + err.Error()
	}
	if c, err := r.dial(); err != nil {
		l.Unix.Error = err.Error()
	} else {
		l.Unix, l.Shell = r.path(c, l.ForkExec, sh)
		if l.Unix.ExecRun != nil && l.Shell != nil {
			l.OverheadP50US = l.Unix.ExecRun.P50US - l.Unix.Ping.P50US - l.Shell.P50US
		}
	}
	if sh != nil {
		sh.Close()
	}
	if c, err := Dial(r.socket, true); err != nil {
		l.JSONRPC.Error = err.Error()
	} else {
		l.JSONRPC, _ = r.path(c, l.ForkExec, nil)
	}
	if r.httpAddr == "" {
		l.HTTP.Skipped = r.httpSkip
	} else {
		l.HTTP, _ = r.path(NewHTTPClient(r.httpAddr, r.token), l.ForkExec, nil)
	}
	return l
}

// latencyRounds is how many turns byTurns takes between the series of
// one path.
const latencyRounds = 10

// path measures ping and exec.run true by turns (and the shell floor
// with them, when sh is not nil) on one connection and its own session,
// and closes c. It returns the floor's figures too.
func (r *runner) path(c caller, fork *Stats, sh *shellPipe) (Path, *Stats) {
	defer c.Close()
	var out Path
	id, err := newSession(c)
	if err != nil {
		out.Error = "session.create: " + err.Error()
		return out, nil
	}
	defer destroySession(c, id)
	p := r.plan
	ping := func() error {
		if err := c.Call("system.ping", nil, nil); err != nil {
			return fmt.Errorf("system.ping: %w", err)
		}
		return nil
	}
	params := execParams{SessionID: id, Command: "true"}
	run := func() error {
		var res execResult
		if err := c.Call("exec.run", params, &res); err != nil {
			return fmt.Errorf("exec.run: %w", err)
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("exec.run: true exited %d", res.ExitCode)
		}
		return nil
	}
	fns := []func() error{ping, run}
	if sh != nil {
		fns = append(fns, func() error {
			if err := sh.once(); err != nil {
				return fmt.Errorf("persistent shell floor: %w", err)
			}
			return nil
		})
	}
	series, err := byTurns(p.warm, p.latencyN, latencyRounds, fns...)
	if err != nil {
		out.Error = err.Error()
		return out, nil
	}
	var floor *Stats
	if sh != nil {
		fs := Summarize(series[2])
		floor = &fs
	}
	ps, rs := Summarize(series[0]), Summarize(series[1])
	out.Ping, out.ExecRun = &ps, &rs
	out.ExecOverPing = ratio(rs.P50US, ps.P50US)
	if fork != nil {
		out.ExecOverFork = ratio(rs.P50US, fork.P50US)
	}
	return out, floor
}
