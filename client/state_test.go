package client_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/client"
)

// TestStateAndFork: State reads a session's state, Fork makes a session
// with it (its parent named), and CreateSession with the state carries it
// to another daemon; a busy session's state is ErrSessionBusy.
func TestStateAndFork(t *testing.T) {
	other := clients(t)["socket"]
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			src, err := c.CreateSession(ctx, client.SessionOptions{Shell: "/bin/bash"})
			require.NoError(t, err)
			_, err = c.Run(ctx, client.RunRequest{Session: src.SessionID, Command: `arr=(a 'b c'); g() { echo "g ${arr[1]}"; }; cd /tmp`})
			require.NoError(t, err)
			st, err := c.State(ctx, src.SessionID)
			require.NoError(t, err)
			assert.Equal(t, "bash", st.Shell)
			assert.Equal(t, "/tmp", st.Cwd)
			assert.Contains(t, st.Functions, "g")

			fork, err := c.Fork(ctx, src.SessionID, client.ForkOptions{Name: "fork-" + name})
			require.NoError(t, err)
			assert.Equal(t, src.SessionID, fork.Parent)
			r, err := c.Run(ctx, client.RunRequest{Session: fork.SessionID, Command: "g; pwd"})
			require.NoError(t, err)
			assert.Equal(t, "g b c\n/tmp\n", r.Stdout)
			fst, err := c.State(ctx, fork.SessionID)
			require.NoError(t, err)
			assert.Equal(t, st, fst)

			carried, err := other.CreateSession(ctx, client.SessionOptions{State: st})
			require.NoError(t, err)
			r, err = other.Run(ctx, client.RunRequest{Session: carried.SessionID, Command: "g"})
			require.NoError(t, err)
			assert.Equal(t, "g b c\n", r.Stdout)

			y, err := c.Run(ctx, client.RunRequest{Session: src.SessionID, Command: "sleep 30", YieldMS: 50})
			require.NoError(t, err)
			_, err = c.State(ctx, src.SessionID)
			assert.True(t, errors.Is(err, client.ErrSessionBusy), "%v", err)
			_, err = c.Cancel(ctx, y.ExecID, "", "")
			require.NoError(t, err)
		})
	}
}
