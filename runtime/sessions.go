package runtime

import (
	"context"
	"math"
	"time"

	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// maxTimeoutS bounds every timeout a caller may give: one day.
const maxTimeoutS = 86400

func (rt *Runtime) sessionCreate(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.SessionCreateParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	cfg, err := createConfig(p, call.IsolationKey)
	if err != nil {
		return nil, err
	}
	s, err := rt.sessions.Create(cfg)
	if err != nil {
		return nil, err
	}
	rt.log.Info().Str("session", s.ID()).Str("actor", call.Actor).Msg("session.create")
	return &protocol.Reply{Data: info(s)}, nil
}

// seconds turns a timeout in seconds into a duration, refusing negative,
// non-finite and absurd values.
func seconds(field string, v float64) (time.Duration, error) {
	if math.IsNaN(v) || v < 0 || v > maxTimeoutS {
		return 0, protocol.Errorf(protocol.CodeInvalidParams, "%s must be between 0 and %d seconds, got %g", field, maxTimeoutS, v)
	}
	return time.Duration(v * float64(time.Second)), nil
}

func info(s *session.Session) protocol.SessionInfo {
	in := s.Info()
	return protocol.SessionInfo{
		SessionID:   in.ID,
		Name:        in.Name,
		Shell:       in.Shell,
		WorkingDir:  in.WorkingDir,
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
		Parent:      in.Parent,
	}
}

func (rt *Runtime) sessionList(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	if err := protocol.DecodeParams(call.Params, &struct{}{}); err != nil {
		return nil, err
	}
	list := rt.sessions.List()
	out := make([]protocol.SessionInfo, 0, len(list))
	for _, s := range list {
		out = append(out, info(s))
	}
	return &protocol.Reply{Data: protocol.SessionListResult{Sessions: out}}, nil
}

// lookup resolves a required session_id.
func (rt *Runtime) lookup(ref string) (*session.Session, error) {
	if ref == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "session_id is required (a session's id or name)")
	}
	return rt.sessions.Get(ref)
}

func (rt *Runtime) sessionInfo(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.SessionRef
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return nil, err
	}
	in := info(s)
	if c := rt.current(s); c != nil {
		sum := rt.summary(c)
		in.Command = &sum
	}
	return &protocol.Reply{Data: in}, nil
}

func (rt *Runtime) sessionDestroy(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.SessionDestroyParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	if _, err := rt.lookup(p.SessionID); err != nil {
		return nil, err
	}
	s, err := rt.sessions.Destroy(p.SessionID, p.Force)
	if err != nil {
		return nil, err
	}
	rt.log.Info().Str("session", s.ID()).Str("actor", call.Actor).Msg("session.destroy")
	return &protocol.Reply{Data: protocol.SessionDestroyed{SessionID: s.ID(), Destroyed: true}}, nil
}

// Session returns a live session by id or name, for the web console,
// which watches its terminal directly (session.Subscribe, Screen).
func (rt *Runtime) Session(ref string) (*session.Session, error) {
	return rt.sessions.Get(ref)
}
