package bench

import (
	_ "embed"
	"fmt"
	"io"

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
	Error    string `json:"error,omitempty"`
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
	return out
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
}
