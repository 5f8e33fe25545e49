package client

import (
	"context"

	"github.com/trl-project/trl/protocol"
)

// ShellState is a session's shell state (docs/state.md): what State returns
// and SessionOptions.State applies, on this daemon or another.
type ShellState = protocol.ShellState

// State reads the shell state of the session with that id or name. A
// session running a command answers ErrSessionBusy.
func (c *Client) State(ctx context.Context, ref string) (*ShellState, error) {
	var st ShellState
	return &st, c.c.call(ctx, protocol.MethodSessionState, map[string]any{"session_id": ref}, &st)
}

// ForkOptions are session.fork's parameters for the new session; zero
// values mean the source's state and the daemon's defaults.
type ForkOptions struct {
	Name       string            `json:"name,omitempty"`
	WorkingDir string            `json:"working_dir,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	TimeoutS   float64           `json:"timeout_s,omitempty"`
	Rows       int               `json:"rows,omitempty"`
	Cols       int               `json:"cols,omitempty"`
}

// Fork starts a new session of the same shell with the state of the
// session with that id or name; the source is untouched.
func (c *Client) Fork(ctx context.Context, ref string, o ForkOptions) (*SessionInfo, error) {
	p := struct {
		SessionID string `json:"session_id"`
		ForkOptions
	}{ref, o}
	var in SessionInfo
	return &in, c.c.call(ctx, protocol.MethodSessionFork, p, &in)
}
