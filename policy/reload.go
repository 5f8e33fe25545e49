package policy

import (
	"context"
	"os"
)

// ReloadOn reloads the file at path each time reload receives (the
// daemon passes a channel given to signal.Notify for SIGHUP), until ctx
// ends. report is told each outcome: the policy now in force and nil, or
// the refused file's error (the old policy stays in force) — both are to
// be logged. ReloadOn blocks; the caller owns the goroutine it runs in.
func (e *Evaluator) ReloadOn(ctx context.Context, reload <-chan os.Signal, path string, report func(*Policy, error)) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-reload:
			err := e.Reload(path)
			report(e.Policy(), err)
		}
	}
}
