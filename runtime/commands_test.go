package runtime

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// TestRegistrationRace: while commands start and end one after another,
// other calls look them up by session and by list; none may see a command
// half-built (run with -race; a nil execution would panic).
func TestRegistrationRace(t *testing.T) {
	rt := newRuntime(t, Options{})
	mustCall(t, rt, "session.create", map[string]any{"name": "race"})
	stop := make(chan struct{})
	done := make(chan error, 3)
	for _, m := range []struct {
		method string
		params string
	}{
		{"exec.list", `{}`},
		{"session.info", `{"session_id":"race"}`},
		{"exec.cancel", `{"session_id":"race","signal":"SIGCONT"}`},
	} {
		go func() {
			call := &protocol.Call{Method: m.method, Params: []byte(m.params)}
			for {
				select {
				case <-stop:
					done <- nil
					return
				default:
				}
				// Errors are expected (no command running); panics are not.
				_, _ = rt.Handle(context.Background(), call)
			}
		}()
	}
	for range 200 {
		out := mustCall(t, rt, "exec.run", map[string]any{"session_id": "race", "command": "true"})
		require.Equal(t, float64(0), out["exit_code"])
	}
	close(stop)
	for range 3 {
		require.NoError(t, <-done)
	}
}
