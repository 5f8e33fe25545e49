package bench

import (
	_ "embed"
	"fmt"
	"io"
	"os"

	"github.com/trl-project/trl/policy"
)

// policy20 is a 20-rule policy of the kind SPEC §16 describes.
//
//go:embed policy20.yaml
var policy20 []byte

// policyLine is an agent's everyday line: a list and a pipeline.
const policyLine = `cd /work/app && git status --short && go test ./... 2>&1 | tail -n 20`

// Policy is SPEC §16's speed goal: evaluating a typical command line
// (shell parse and rules) against a 20-rule policy. It runs in the
// benchmark's process: evaluation is a pure function of the line.
type Policy struct {
	Rules    int    `json:"rules"`
	Line     string `json:"line"`
	Evaluate *Stats `json:"evaluate,omitempty"`
	// Without and With are exec.run of `true` on two daemons started
	// by the bench, one without a policy and one with the 20 rules,
	// measured alternately in the same run; Ratio is With's p50 over
	// Without's. Skipped against an existing daemon.
	Without *Stats  `json:"exec_run_without_policy,omitempty"`
	With    *Stats  `json:"exec_run_with_policy,omitempty"`
	Ratio   float64 `json:"exec_run_ratio,omitempty"`
	Skipped string  `json:"skipped,omitempty"`
	Error   string  `json:"error,omitempty"`
}

func (r *runner) policy() *Policy {
	out := &Policy{Line: policyLine}
	p, err := policy.Parse(policy20, "policy20.yaml")
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Rules = p.Len()
	in := policy.Input{Line: policyLine, Cwd: "/work/app", Session: "dev-1", Actor: "agent"}
	if d := p.Evaluate(in); d.Action != policy.Allow {
		out.Error = fmt.Sprintf("the line is not allowed: %+v", d)
		return out
	}
	samples, _ := sample(r.plan.warm, r.plan.latencyN*5, func() error {
		p.Evaluate(in)
		return nil
	})
	s := Summarize(samples)
	out.Evaluate = &s
	if err := r.policyAB(out); err != nil {
		out.Error = "exec.run with and without a policy: " + err.Error()
	}
	return out
}

// policyAB measures exec.run `true` on a daemon without a policy and on
// one with the 20 rules, alternating between them so that both see the
// same machine.
func (r *runner) policyAB(out *Policy) error {
	if r.opts.Exe == "" || r.opts.Socket != "" {
		out.Skipped = "needs two daemons the bench starts itself"
		return nil
	}
	file, err := os.CreateTemp("", "trl-bench-policy-*.yaml")
	if err != nil {
		return err
	}
	defer os.Remove(file.Name())
	if _, err := file.Write(policy20); err != nil {
		file.Close()
		return err
	}
	file.Close()
	var conns [2]*Conn
	var ids [2]string
	for i, extra := range [][]string{nil, {"--policy", file.Name()}} {
		d, err := startDaemon(r.opts.Exe, false, extra)
		if err != nil {
			return err
		}
		defer d.stop()
		c, err := Dial(d.socket, false)
		if err != nil {
			return err
		}
		defer c.Close()
		if ids[i], err = newSession(c); err != nil {
			return err
		}
		conns[i] = c
	}
	without, with, ratio, err := r.abExecRun(conns[0], conns[1], ids, "true")
	if err != nil {
		return err
	}
	out.Without, out.With, out.Ratio = &without, &with, ratio
	return nil
}

func policyTable(w io.Writer, p *Policy) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\ncommand policy (SPEC §16)\t\t\t\t\t\n")
	if p.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", p.Error)
	}
	if l := p.Evaluate; l != nil {
		fmt.Fprintf(w, "  evaluate a typical line, %d rules, in-process (n=%d)\tp50 %s\tp99 %s\t\t\t\n", p.Rules, l.N, fmtUS(l.P50US), fmtUS(l.P99US))
	}
	if p.Skipped != "" {
		fmt.Fprintf(w, "  exec.run with and without a policy: %s\n", p.Skipped)
	}
	if p.Without != nil && p.With != nil {
		fmt.Fprintf(w, "  exec.run true, daemon without a policy (n=%d)\tp50 %s\tp99 %s\t\t\t\n", p.Without.N, fmtUS(p.Without.P50US), fmtUS(p.Without.P99US))
		fmt.Fprintf(w, "  exec.run true, daemon with the %d-rule policy\tp50 %s\tp99 %s\t%.2f×\t\t\n", p.Rules, fmtUS(p.With.P50US), fmtUS(p.With.P99US), p.Ratio)
	}
}
