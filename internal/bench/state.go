package bench

import (
	"fmt"
	"io"
	osexec "os/exec"
	"strings"
	"time"

	"github.com/trl-project/trl/protocol"
)

// StateBench measures SPEC §17 through the daemon: session.state on a bash
// session holding stateVars variables and stateFuncs functions, and
// session.fork of it beside session.create of a bare bash session in the
// same run (a fork is a create plus a state read and applied).
type StateBench struct {
	Vars      int    `json:"vars"`
	Functions int    `json:"functions"`
	State     *Stats `json:"session_state,omitempty"`
	Create    *Stats `json:"session_create_bash,omitempty"`
	Fork      *Stats `json:"session_fork,omitempty"`
	// ForkOverCreate is Fork's p50 over Create's.
	ForkOverCreate float64 `json:"fork_over_create,omitempty"`
	Skipped        string  `json:"skipped,omitempty"`
	Error          string  `json:"error,omitempty"`
}

const (
	stateVars  = 200
	stateFuncs = 50
)

// stateSetup is the command that gives a session its variables and
// functions.
func stateSetup() string {
	var b strings.Builder
	for i := range stateVars {
		fmt.Fprintf(&b, "bench_v%d='value %d with \"quotes\" and a\nnewline'; ", i, i)
	}
	for i := range stateFuncs {
		fmt.Fprintf(&b, "bench_f%d() { echo \"function %d: $1\"; local x=%d; return 0; }; ", i, i, i)
	}
	b.WriteString("true")
	return b.String()
}

func (r *runner) state() *StateBench {
	out := &StateBench{Vars: stateVars, Functions: stateFuncs}
	bash, err := osexec.LookPath("bash")
	if err != nil {
		out.Skipped = "bash is not installed"
		return out
	}
	c, err := r.dial()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer c.Close()
	var src protocol.SessionInfo
	if err := c.Call(protocol.MethodSessionCreate, map[string]any{"shell": bash}, &src); err != nil {
		out.Error = "session.create: " + err.Error()
		return out
	}
	defer destroySession(c, src.SessionID)
	var st protocol.ExecStatus
	if err := c.Call(protocol.MethodExecRun, map[string]any{"session_id": src.SessionID, "command": stateSetup()}, &st); err != nil {
		out.Error = "set up the variables: " + err.Error()
		return out
	}
	n := max(r.plan.latencyN/10, 20)

	var state protocol.ShellState
	lat, err := sample(3, n, func() error {
		return c.Call(protocol.MethodSessionState, map[string]any{"session_id": src.SessionID}, &state)
	})
	if err != nil {
		out.Error = "session.state: " + err.Error()
		return out
	}
	if len(state.Functions) < stateFuncs {
		out.Error = fmt.Sprintf("session.state has %d functions, not %d", len(state.Functions), stateFuncs)
		return out
	}
	s := Summarize(lat)
	out.State = &s

	// Creates and forks alternate, so that both see the same machine.
	nf := max(n/4, 10)
	var creates, forks []time.Duration
	for range nf {
		var in protocol.SessionInfo
		t := time.Now()
		if err := c.Call(protocol.MethodSessionCreate, map[string]any{"shell": bash}, &in); err != nil {
			out.Error = "session.create: " + err.Error()
			return out
		}
		creates = append(creates, time.Since(t))
		destroySession(c, in.SessionID)
		t = time.Now()
		if err := c.Call(protocol.MethodSessionFork, map[string]any{"session_id": src.SessionID}, &in); err != nil {
			out.Error = "session.fork: " + err.Error()
			return out
		}
		forks = append(forks, time.Since(t))
		destroySession(c, in.SessionID)
	}
	cs, fs := Summarize(creates), Summarize(forks)
	out.Create, out.Fork = &cs, &fs
	out.ForkOverCreate = ratio(fs.P50US, cs.P50US)
	return out
}

func stateTable(w io.Writer, s *StateBench) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nsession state (SPEC §17), bash with %d variables and %d functions\t\t\t\t\t\n", s.Vars, s.Functions)
	if s.Skipped != "" {
		fmt.Fprintf(w, "  skipped: %s\n", s.Skipped)
	}
	if s.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", s.Error)
	}
	if l := s.State; l != nil {
		fmt.Fprintf(w, "  session.state (n=%d)\tp50 %s\tp95 %s\t\t\t\n", l.N, fmtUS(l.P50US), fmtUS(l.P95US))
	}
	if l := s.Create; l != nil {
		fmt.Fprintf(w, "  session.create bash (n=%d)\tp50 %s\tp95 %s\t\t\t\n", l.N, fmtUS(l.P50US), fmtUS(l.P95US))
	}
	if l := s.Fork; l != nil {
		fmt.Fprintf(w, "  session.fork (n=%d)\tp50 %s\tp95 %s\t%.2f× create\t\t\n", l.N, fmtUS(l.P50US), fmtUS(l.P95US), s.ForkOverCreate)
	}
}
