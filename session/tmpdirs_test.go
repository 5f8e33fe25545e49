package session

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The private directories of a SIGKILLed daemon are swept at the next
// start; a live daemon's are kept.
func TestStaleTempDirsSwept(t *testing.T) {
	dead := deadPID(t)
	stale := filepath.Join(os.TempDir(), "trl-d"+strconv.Itoa(dead)+"-s-0123456789ab-42")
	live := filepath.Join(os.TempDir(), "trl-d1-s-0123456789ab-43") // pid 1 is alive
	for _, d := range []string{stale, live} {
		require.NoError(t, os.MkdirAll(d, 0o700))
		require.NoError(t, os.WriteFile(filepath.Join(d, "stdin-1"), []byte("x"), 0o600))
	}
	t.Cleanup(func() { os.RemoveAll(stale); os.RemoveAll(live) })

	assert.GreaterOrEqual(t, sweepStaleTempDirs(), 1)
	_, err := os.Stat(stale)
	assert.True(t, os.IsNotExist(err), "a dead daemon's directory is removed")
	_, err = os.Stat(live)
	assert.NoError(t, err, "a live daemon's directory is kept")
}
