package policy

import (
	"context"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReloadOnSIGHUP sends the test process real SIGHUPs: a good file is
// put in force, a broken one is refused and reported, the old policy
// kept.
func TestReloadOnSIGHUP(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(path, []byte("rules:\n  - {match: {program: rm}, action: deny}\n"), 0o600))
	e := NewEvaluator(nil)
	require.NoError(t, e.Reload(path))

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	type result struct {
		p   *Policy
		err error
	}
	results := make(chan result, 4)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		e.ReloadOn(ctx, hup, path, func(p *Policy, err error) { results <- result{p, err} })
	}()
	next := func() result {
		t.Helper()
		require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGHUP))
		select {
		case r := <-results:
			return r
		case <-time.After(30 * time.Second):
			t.Fatal("no reload after SIGHUP")
			return result{}
		}
	}

	require.NoError(t, os.WriteFile(path, []byte("rules:\n  - {match: {program: rm}, action: ask}\n"), 0o600))
	r := next()
	require.NoError(t, r.err)
	assert.Same(t, e.Policy(), r.p)
	assert.Equal(t, Ask, e.Evaluate(Input{Line: "rm x"}).Action)

	require.NoError(t, os.WriteFile(path, []byte("rules:\n  - {match: {program: rm}, acton: allow}\n"), 0o600))
	r = next()
	assert.ErrorContains(t, r.err, `line 2: unknown key "acton" (did you mean "action"?)`)
	assert.Same(t, e.Policy(), r.p, "the policy in force is reported")
	assert.Equal(t, Ask, e.Evaluate(Input{Line: "rm x"}).Action, "the old policy is kept")

	cancel()
	<-done
}
