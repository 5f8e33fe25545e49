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
	"github.com/trl-project/trl/protocol"
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

// TestCommandEndingDuringShutdownAnswered: a command that ends by itself
// after the shutdown began, its session still alive, gets its result; only
// one the shutdown ended is answered SHUTTING_DOWN (it was told "may have
// run in part" though it had run whole).
func TestCommandEndingDuringShutdownAnswered(t *testing.T) {
	rt := newRuntime(t, Options{})
	cmd := "sleep 0.5; echo whole"
	done := make(chan struct{})
	var res protocol.ExecStatus
	var err error
	go func() {
		defer close(done)
		res, err = rt.ExecRun(context.Background(), protocol.ExecParams{Command: &cmd})
	}()
	time.Sleep(200 * time.Millisecond)
	rt.BeginShutdown()
	<-done
	require.NoError(t, err)
	assert.Equal(t, "whole\n", res.Stdout)
	require.NotNil(t, res.ExitCode)
	assert.Equal(t, 0, *res.ExitCode)
}
