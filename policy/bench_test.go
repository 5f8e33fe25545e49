package policy

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TypicalLine is an agent's everyday line: a list and a pipeline.
const typicalLine = `cd /work/app && git status --short && go test ./... 2>&1 | tail -n 20`

// BenchmarkEvaluate is SPEC §16's speed goal: parse and a 20-rule policy,
// p50 ≤ 50 µs (trl bench's "policy" group reports the p50).
func BenchmarkEvaluate(b *testing.B) {
	p, err := Load("../internal/bench/policy20.yaml") // the policy trl bench measures
	require.NoError(b, err)
	require.Equal(b, 20, p.Len())
	in := Input{Line: typicalLine, Cwd: "/work/app", Session: "dev-1", Actor: "agent"}
	require.Equal(b, Allow, p.Evaluate(in).Action)
	b.ReportAllocs()
	for b.Loop() {
		p.Evaluate(in)
	}
}
