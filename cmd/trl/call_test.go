package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTimeoutTakesSeconds: trl call --timeout takes a bare number as
// seconds (`--timeout 1` was a parse error that named no unit).
func TestTimeoutTakesSeconds(t *testing.T) {
	for in, want := range map[string]time.Duration{"1": time.Second, "0.5": 500 * time.Millisecond, "2m": 2 * time.Minute, "0": 0} {
		var d durationOrSeconds
		require.NoError(t, d.Set(in), in)
		assert.Equal(t, want, time.Duration(d), in)
	}
	for _, bad := range []string{"x", "-1", "-2s", "Inf", "1e10"} {
		var d durationOrSeconds
		err := d.Set(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "30s", bad)
	}
}
