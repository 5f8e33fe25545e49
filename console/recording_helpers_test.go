package console

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
)

// recorderRun is a Recorder running into dir for a test harness; stop
// ends it (also at cleanup) and waits for it.
type recorderRun struct {
	rec  *Recorder
	stop func()
}

func startRecorder(t *testing.T, h *harness, dir string) *recorderRun {
	t.Helper()
	rec, err := NewRecorder(dir, 0, h.rt, zerolog.Nop())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	r := &recorderRun{rec: rec}
	stopped := false
	r.stop = func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	t.Cleanup(r.stop)
	return r
}

// waitFor waits until the recorder records session sid.
func (r *recorderRun) waitFor(t *testing.T, sid string) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.rec.mu.Lock()
		defer r.rec.mu.Unlock()
		return r.rec.recs[sid] != nil
	}, 10*time.Second, 10*time.Millisecond, "the recorder never picked up the session")
}
