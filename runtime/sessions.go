package runtime

import (
	"context"
	"math"
	"strings"
	"time"

	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// maxTimeoutS bounds every timeout a caller may give: one day.
const maxTimeoutS = 86400

// SessionCreate is the typed sessionCreate.
func (rt *Runtime) SessionCreate(ctx context.Context, p protocol.SessionCreateParams) (protocol.SessionInfo, error) {
	return serve(rt, ctx, protocol.MethodSessionCreate, func() (protocol.SessionInfo, error) { return rt.sessionCreate(ctx, p) })
}

func (rt *Runtime) sessionCreate(ctx context.Context, p protocol.SessionCreateParams) (protocol.SessionInfo, error) {
	cfg, err := createConfig(p, protocol.CallerFrom(ctx).IsolationKey)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	if err := rt.admitState(ctx, p.Name, p.Env, p.State); err != nil {
		return protocol.SessionInfo{}, err
	}
	s, err := rt.sessions.Create(cfg)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	rt.log.Info().Str("session", s.ID()).Str("actor", protocol.CallerFrom(ctx).Actor).Msg("session.create")
	return rt.info(s), nil
}

// seconds turns a timeout in seconds into a duration, refusing negative,
// non-finite and absurd values.
func seconds(field string, v float64) (time.Duration, error) {
	if math.IsNaN(v) || v < 0 || v > maxTimeoutS {
		return 0, protocol.Errorf(protocol.CodeInvalidParams, "%s must be between 0 and %d seconds, got %g", field, maxTimeoutS, v)
	}
	return time.Duration(v * float64(time.Second)), nil
}

// info is s's session.info. A session whose command awaits approval is
// busy, as one whose command runs: the command holds it (SPEC §16),
// though nothing has reached its shell yet.
func (rt *Runtime) info(s *session.Session) protocol.SessionInfo {
	in := s.Info()
	if in.State == session.StateIdle && rt.current(s) != nil {
		in.State = session.StateBusy
	}
	return protocol.SessionInfo{
		SessionID:   in.ID,
		Name:        in.Name,
		Shell:       in.Shell,
		WorkingDir:  s.MaskText(in.WorkingDir),
		State:       string(in.State),
		CreatedAt:   in.Created.Format(time.RFC3339Nano),
		LastUsedAt:  in.LastUsed.Format(time.RFC3339Nano),
		CommandsRun: in.CommandsRun,
		PID:         in.PID,
		TimeoutS:    in.Timeout.Seconds(),
		Rows:        in.Rows,
		Cols:        in.Cols,
		ExitCode:    in.ExitCode,
		EndCause:    in.EndCause,
		Limits:      limitsOf(s.Limits()),
		Parent:      in.Parent,
	}
}

// SessionList is the typed sessionList.
func (rt *Runtime) SessionList(ctx context.Context, p protocol.SessionListParams) (protocol.SessionListResult, error) {
	return serve(rt, ctx, protocol.MethodSessionList, func() (protocol.SessionListResult, error) { return rt.sessionList(ctx, p) })
}

func (rt *Runtime) sessionList(ctx context.Context, p protocol.SessionListParams) (protocol.SessionListResult, error) {
	list := rt.sessions.List()
	out := make([]protocol.SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, rt.info(s))
	}
	return protocol.SessionListResult{Sessions: out}, nil
}

// lookup resolves a required session_id.
func (rt *Runtime) lookup(ref string) (*session.Session, error) {
	if ref == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "session_id is required (a session's id or name)")
	}
	return rt.sessions.Get(ref)
}

// SessionInfo is the typed sessionInfo.
func (rt *Runtime) SessionInfo(ctx context.Context, p protocol.SessionRef) (protocol.SessionInfo, error) {
	return serve(rt, ctx, protocol.MethodSessionInfo, func() (protocol.SessionInfo, error) { return rt.sessionInfo(ctx, p) })
}

func (rt *Runtime) sessionInfo(ctx context.Context, p protocol.SessionRef) (protocol.SessionInfo, error) {
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	in := rt.info(s)
	// Usage is shown beside limits: a session without limits may sit in
	// a group whose controllers this host does not give (usage 0).
	if u, ok := s.Usage(); ok && !s.Limits().IsZero() {
		in.Usage = &protocol.SessionUsage{MemoryBytes: u.MemoryBytes, CPUSeconds: u.CPUSeconds, PIDs: u.PIDs, OOMKills: u.OOMKills}
	}
	if c := rt.current(s); c != nil {
		sum := rt.summary(c)
		in.Command = &sum
	}
	return in, nil
}

// SessionDestroy is the typed sessionDestroy.
func (rt *Runtime) SessionDestroy(ctx context.Context, p protocol.SessionDestroyParams) (protocol.SessionDestroyed, error) {
	return serve(rt, ctx, protocol.MethodSessionDestroy, func() (protocol.SessionDestroyed, error) { return rt.sessionDestroy(ctx, p) })
}

func (rt *Runtime) sessionDestroy(ctx context.Context, p protocol.SessionDestroyParams) (protocol.SessionDestroyed, error) {
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return protocol.SessionDestroyed{}, err
	}
	if !p.Force && rt.current(s) != nil {
		// A command holds it, running or awaiting approval.
		err := rt.busyError(s, protocol.Errorf(protocol.CodeSessionBusy, "session %s is busy; destroy it with force", s.ID()))
		if pe, ok := err.(*protocol.Error); ok && !strings.Contains(pe.Message, "force") {
			pe.Message += "; or destroy it anyway with \"force\": true, which ends the command"
		}
		return protocol.SessionDestroyed{}, err
	}
	s, err = rt.sessions.Destroy(p.SessionID, p.Force)
	if err != nil {
		return protocol.SessionDestroyed{}, err
	}
	rt.log.Info().Str("session", s.ID()).Str("actor", protocol.CallerFrom(ctx).Actor).Msg("session.destroy")
	return protocol.SessionDestroyed{SessionID: s.ID(), Destroyed: true}, nil
}

// Session returns a live session by id or name, for the web console,
// which watches its terminal directly (session.Subscribe, Screen).
func (rt *Runtime) Session(ref string) (*session.Session, error) {
	return rt.sessions.Get(ref)
}
