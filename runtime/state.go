package runtime

import (
	"context"

	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// SessionState reads a session's shell state (SPEC §17) from its idle
// shell; a session running a command answers SESSION_BUSY.
// SessionState is the typed session.state.
func (rt *Runtime) SessionState(ctx context.Context, p protocol.SessionRef) (protocol.ShellState, error) {
	return serve(rt, ctx, protocol.MethodSessionState, func() (protocol.ShellState, error) { return rt.sessionState(ctx, p) })
}

func (rt *Runtime) sessionState(ctx context.Context, p protocol.SessionRef) (protocol.ShellState, error) {
	actor := protocol.CallerFrom(ctx).Actor
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return protocol.ShellState{}, err
	}
	st, err := s.State(ctx)
	if err != nil {
		return protocol.ShellState{}, err
	}
	rt.log.Debug().Str("session", s.ID()).Str("actor", actor).Msg("session.state")
	s.MaskState(st)
	return stateToWire(st), nil
}

// SessionFork starts a new session of the source's shell with the
// source's state applied; the source is untouched. Under isolation the
// fork gets a uid of its own (isolation key ""), so it shares nothing with
// the source but the state. working_dir and env, when given, override the
// state's.
// SessionFork is the typed session.fork.
func (rt *Runtime) SessionFork(ctx context.Context, p protocol.SessionForkParams) (protocol.SessionInfo, error) {
	return serve(rt, ctx, protocol.MethodSessionFork, func() (protocol.SessionInfo, error) { return rt.sessionFork(ctx, p) })
}

func (rt *Runtime) sessionFork(ctx context.Context, p protocol.SessionForkParams) (protocol.SessionInfo, error) {
	actor := protocol.CallerFrom(ctx).Actor
	src, err := rt.lookup(p.SessionID)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	if rt.current(src) != nil {
		return protocol.SessionInfo{}, protocol.Errorf(protocol.CodeSessionBusy, "session %s is running a command; its state can be read once it is idle", src.ID())
	}
	shell := src.Info().Shell
	if p.Shell != "" {
		shell = p.Shell
	}
	cp := protocol.SessionCreateParams{
		Shell: shell, Env: p.Env, WorkingDir: p.WorkingDir, Name: p.Name,
		TimeoutS: p.TimeoutS, Rows: p.Rows, Cols: p.Cols,
	}
	cfg, err := createConfig(cp, "")
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	// The fork masks what the source masks. A variable the caller's env
	// sets anew is no longer a secret; its old value is still masked.
	cfg.Secrets, cfg.Masks = src.ForkSecrets()
	for k := range p.Env {
		delete(cfg.Secrets, k)
	}
	// The source's state is read while the new shell starts. The reader
	// ends with State (bounded by its own timeout); its answer waits in
	// the buffered channel if Create fails before asking.
	type read struct {
		st  *session.ShellState
		err error
	}
	ch := make(chan read, 1)
	go func() {
		st, err := src.State(ctx)
		ch <- read{st, err}
	}()
	cfg.StateFrom = func() (*session.ShellState, error) {
		r := <-ch
		if r.err != nil {
			return nil, r.err
		}
		return overrideState(r.st, cp), nil
	}
	cfg.Parent = src.ID()
	s, err := rt.sessions.Create(cfg)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	rt.log.Info().Str("session", s.ID()).Str("parent", src.ID()).Str("actor", actor).Msg("session.fork")
	return rt.info(s), nil
}

// createConfig is session.create's parameters as a session.Config, the
// state included (with working_dir and env over the state's).
func createConfig(p protocol.SessionCreateParams, isolationKey string) (session.Config, error) {
	cfg := session.Config{Shell: p.Shell, Env: p.Env, Secrets: p.Secrets, WorkingDir: p.WorkingDir, Name: p.Name, IsolationKey: isolationKey}
	if l := p.Limits; l != nil {
		cfg.Limits = session.Limits{MemoryMB: l.MemoryMB, CPU: l.CPU, PIDs: l.PIDs, IOWeight: l.IOWeight}
	}
	if p.TimeoutS != nil {
		d, err := seconds("timeout_s", *p.TimeoutS)
		if err != nil {
			return cfg, err
		}
		cfg.Timeout = d
	}
	if p.Rows != nil {
		if *p.Rows <= 0 {
			return cfg, protocol.Errorf(protocol.CodeInvalidParams, "rows must be between 1 and 1000")
		}
		cfg.Rows = *p.Rows
	}
	if p.Cols != nil {
		if *p.Cols <= 0 {
			return cfg, protocol.Errorf(protocol.CodeInvalidParams, "cols must be between 1 and 1000")
		}
		cfg.Cols = *p.Cols
	}
	if p.State != nil {
		cfg.State = overrideState(stateFromWire(p.State), p)
	}
	return cfg, nil
}

// overrideState gives the caller's working_dir and env precedence over
// the state's.
func overrideState(st *session.ShellState, p protocol.SessionCreateParams) *session.ShellState {
	if p.WorkingDir != "" {
		st.Cwd = p.WorkingDir
		st.Dirs = nil
	}
	if len(p.Env) > 0 {
		if st.Env == nil {
			st.Env = map[string]string{}
		}
		for k, v := range p.Env {
			st.Env[k] = v
		}
		vars := st.Vars[:0]
		for _, v := range st.Vars {
			if _, ok := p.Env[v.Name]; !ok {
				vars = append(vars, v)
			}
		}
		st.Vars = vars
	}
	return st
}

func stateToWire(st *session.ShellState) protocol.ShellState {
	out := protocol.ShellState{
		Shell: st.Shell, Cwd: st.Cwd, Env: st.Env, Readonly: st.Readonly, Functions: st.Functions,
		Aliases: st.Aliases, Options: st.Options, Umask: st.Umask, Dirs: st.Dirs,
		Vars: make([]protocol.StateVar, len(st.Vars)), NotCarried: make([]protocol.StateNotCarried, len(st.NotCarried)),
	}
	for i, v := range st.Vars {
		out.Vars[i] = protocol.StateVar(v)
	}
	for i, n := range st.NotCarried {
		out.NotCarried[i] = protocol.StateNotCarried(n)
	}
	return out
}

func stateFromWire(st *protocol.ShellState) *session.ShellState {
	out := &session.ShellState{
		Shell: st.Shell, Cwd: st.Cwd, Env: st.Env, Readonly: st.Readonly, Functions: st.Functions,
		Aliases: st.Aliases, Options: st.Options, Umask: st.Umask, Dirs: st.Dirs,
		Vars: make([]session.Var, len(st.Vars)), NotCarried: make([]session.NotCarried, len(st.NotCarried)),
	}
	for i, v := range st.Vars {
		out.Vars[i] = session.Var(v)
	}
	for i, n := range st.NotCarried {
		out.NotCarried[i] = session.NotCarried(n)
	}
	return out
}
