package metrics

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSessionUsageSeries: the sessions' summed usage is exported as four
// unlabelled series, read at each scrape (no session ids as labels).
func TestSessionUsageSeries(t *testing.T) {
	mem := int64(64 << 20)
	p := New(Options{NoProcessMetrics: true, SessionUsage: func() (int64, float64, int64, int64) { return mem, 2.5, 7, 1 }})
	read := func() map[string]float64 {
		fams, err := p.Registry().Gather()
		require.NoError(t, err)
		out := map[string]float64{}
		for _, f := range fams {
			if !strings.HasPrefix(f.GetName(), "trl_sessions_") {
				continue
			}
			for _, m := range f.GetMetric() {
				assert.Empty(t, m.GetLabel(), "%s is labelled", f.GetName())
				if g := m.GetGauge(); g != nil {
					out[f.GetName()] = g.GetValue()
				}
			}
		}
		return out
	}
	got := read()
	assert.Equal(t, float64(64<<20), got["trl_sessions_memory_bytes"])
	assert.Equal(t, 2.5, got["trl_sessions_cpu_seconds"])
	assert.Equal(t, 7.0, got["trl_sessions_pids"])
	assert.Equal(t, 1.0, got["trl_sessions_oom_kills"])
	mem = 0
	assert.Equal(t, 0.0, read()["trl_sessions_memory_bytes"], "read again at each scrape")
}
