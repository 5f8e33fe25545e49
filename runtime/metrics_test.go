package runtime

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/session"
)

// readyz asks the probes of rt what /readyz answers.
func readyz(rt *Runtime) (int, string) {
	rec := httptest.NewRecorder()
	metrics.Probes{Ready: rt.Ready}.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	return rec.Code, rec.Body.String()
}

func TestReadyzAtTheSessionLimit(t *testing.T) {
	rt := newRuntime(t, Options{Sessions: session.Options{MaxSessions: 1}})
	code, _ := readyz(rt)
	assert.Equal(t, http.StatusOK, code)
	s := mustCall(t, rt, "session.create", nil)
	code, body := readyz(rt)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "session limit")
	assert.Equal(t, 1, rt.SessionCount())
	mustCall(t, rt, "session.destroy", map[string]any{"session_id": s["session_id"]})
	code, _ = readyz(rt)
	assert.Equal(t, http.StatusOK, code, "ready again once a session is gone")
}

func TestReadyzWhileDraining(t *testing.T) {
	rt := New(Options{})
	mustCall(t, rt, "session.create", map[string]any{"name": "busy"})
	// A command running when the drain starts: Shutdown ends it.
	done := make(chan struct{})
	run := callAsync(rt, "exec.run", map[string]any{"session_id": "busy", "command": "sleep 30"})
	go func() {
		defer close(done)
		<-run // answered with SHUTTING_DOWN once Shutdown ends the session
	}()
	require.Eventually(t, func() bool { return rt.RunningCommands() == 1 }, 10*time.Second, 10*time.Millisecond)
	code, _ := readyz(rt)
	assert.Equal(t, http.StatusOK, code)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, rt.Shutdown(ctx))
	<-done
	code, body := readyz(rt)
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, body, "draining")
}
