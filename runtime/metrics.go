package runtime

import (
	"errors"
	"fmt"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/metrics"
)

// recordCommand reports a finished command to the metrics.
func recordCommand(method string, x exec.Exit, stdoutBytes, stderrBytes int64) {
	metrics.Get().CommandDone(method, metrics.OutcomeOf(x.ExitCode, x.TimedOut, x.Canceled), x.Duration, stdoutBytes, stderrBytes)
}

// ErrDraining is Ready's answer once Shutdown has begun.
var ErrDraining = errors.New("draining: the daemon is shutting down")

// Ready reports whether the daemon takes new work, for /readyz: not while
// it shuts down, nor when it is at its session limit (a new session would
// be refused, so an orchestrator should route new sandboxes elsewhere).
func (rt *Runtime) Ready() error {
	if rt.shuttingDown() {
		return ErrDraining
	}
	if n, max := rt.sessions.Len(), rt.sessions.MaxSessions(); max > 0 && n >= max {
		return fmt.Errorf("at the session limit: %d of %d sessions are live", n, max)
	}
	return nil
}

// SessionCount is how many sessions are live, for the metrics.
func (rt *Runtime) SessionCount() int { return rt.sessions.Len() }

// RunningCommands is how many commands run now, for the metrics.
func (rt *Runtime) RunningCommands() int {
	running, _, _ := rt.jobs.Counts()
	return running
}
