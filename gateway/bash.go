package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/trl-project/trl/protocol"
)

// busyRetry is how often a call retries a session that is still busy with
// the end of an earlier call (one the gateway gave up waiting for).
const busyRetry = 50 * time.Millisecond

// budget splits a call's timeout: the command is interrupted at cmdBy, and
// the answer goes out by answerBy at the latest, so that it reaches the
// gateway before the gateway's own timeout (the same timeout) gives up.
func budget(arrived time.Time, timeout time.Duration) (cmdBy, answerBy time.Time) {
	margin := min(time.Second, timeout/5)
	return arrived.Add(timeout - margin), arrived.Add(timeout - margin/4)
}

// timeout is the call's timeout: call.args.timeoutMs, else ctx.timeoutMs,
// else the default; capped at MaxTimeout.
func (g *Gateway) timeout(req *request) (time.Duration, error) {
	ms, err := number(req.Args, "call.args", "timeoutMs")
	if err != nil {
		return 0, err
	}
	if ms == nil {
		ms = req.TimeoutMS
	}
	d := g.opts.DefaultTimeout
	if ms != nil {
		d = time.Duration(*ms * float64(time.Millisecond))
	}
	return max(min(d, g.opts.MaxTimeout), time.Millisecond), nil
}

// bashExec runs call.args.cmd in the key's session and returns the
// ToolResult, and whether it may be remembered (not when the command never
// ran for reasons a retry may not meet: a busy session, a limit, shutdown).
func (g *Gateway) bashExec(req *request, actor string, arrived time.Time) ([]byte, bool) {
	invalid := func(err error) ([]byte, bool) {
		return encode(failure(string(protocol.CodeInvalidParams), "%s", err.Error())), true
	}
	cmd, err := str(req.Args, "call.args", "cmd", true)
	if err != nil {
		return invalid(err)
	}
	stdin, err := str(req.Args, "call.args", "stdin", false)
	if err != nil {
		return invalid(err)
	}
	timeout, err := g.timeout(req)
	if err != nil {
		return invalid(err)
	}
	cmdBy, answerBy := budget(arrived, timeout)
	ctx, cancel := context.WithDeadline(g.ctx, answerBy)
	defer cancel()

	s, err := g.acquire(ctx, req.TenantID, req.WorkspaceID, req.SessionID)
	if err != nil {
		return g.notRun(err, "waiting for the previous call in this session")
	}
	defer g.release(s)

	reply, err := g.startStream(ctx, s, cmd, stdin, cmdBy, actor)
	if err != nil {
		return g.notRun(err, "waiting for this session to be free")
	}
	out := newCollector(g.opts.MaxOutputBytes, updateInterval)
	var exit *protocol.ExitNotification
	emit := func(method string, params any) error {
		switch method {
		case protocol.NotifyExecOutput:
			var n protocol.OutputNotification
			if err := as(params, &n); err != nil {
				return err
			}
			out.add(n.Stream, n.Data, n.LostBytes, g.opts.now())
		case protocol.NotifyExecExit:
			exit = &protocol.ExitNotification{}
			return as(params, exit)
		}
		return nil
	}
	ferr := reply.Follow(ctx, emit)
	output := out.output()
	ms := timeout.Milliseconds()
	switch {
	case exit == nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		// The command ignored its interrupt for longer than the margin;
		// the runtime goes on escalating (SIGKILL) without us.
		return out.body(toolResult{Output: &output, Error: &toolError{Code: string(protocol.CodeCommandTimeout),
			Message: fmt.Sprintf("command timed out after %d ms and did not stop when interrupted; it is being killed. The output so far is in output", ms)}}), true
	case exit == nil && g.ctx.Err() != nil:
		return encode(failure(string(protocol.CodeShuttingDown), "the daemon is shutting down; the command was ended")), false
	case exit == nil:
		return encode(failure(string(protocol.CodeInternal), "the command's output ended early: %v", ferr)), false
	case exit.TimedOut:
		return out.body(toolResult{Output: &output, Error: &toolError{Code: string(protocol.CodeCommandTimeout),
			Message: fmt.Sprintf("command timed out after %d ms and was interrupted; the output so far is in output", ms)}}), true
	case exit.ExitCode != 0:
		msg := fmt.Sprintf("command exited with status %d", exit.ExitCode)
		if exit.SessionExited {
			msg += " and ended the session's shell; the next call starts a new shell"
		}
		return out.body(toolResult{Output: &output, Error: &toolError{Code: string(protocol.CodeCommandFailed), Message: msg}}), true
	}
	return out.body(toolResult{OK: true, Output: &output}), true
}

// startStream starts cmd with exec.stream in the slot's session, creating
// the session when it does not exist or its shell has ended, and retrying
// while it is busy until ctx ends.
func (g *Gateway) startStream(ctx context.Context, s *slot, cmd, stdin string, cmdBy time.Time, actor string) (*protocol.Reply, error) {
	created := false
	for {
		left := time.Until(cmdBy)
		if left <= 0 {
			return nil, context.DeadlineExceeded
		}
		params, _ := json.Marshal(protocol.ExecParams{SessionID: s.name, Command: &cmd, Stdin: &stdin, TimeoutS: ptr(left.Seconds())})
		reply, err := g.h.Handle(ctx, &protocol.Call{Method: protocol.MethodExecStream, Params: params, Actor: actor})
		if err == nil {
			g.setLive(s, true)
			if reply == nil || reply.Follow == nil {
				return nil, protocol.Errorf(protocol.CodeInternal, "exec.stream answered without a stream")
			}
			return reply, nil
		}
		switch protocol.AsError(err).Code {
		case protocol.CodeSessionNotFound, protocol.CodeSessionExited:
			if created {
				return nil, err
			}
			if err := g.createSession(ctx, s, actor); err != nil {
				return nil, err
			}
			created = true
		case protocol.CodeSessionBusy:
			select {
			case <-time.After(busyRetry):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		default:
			return nil, err
		}
	}
}

// createSession creates the slot's session (replacing one whose shell has
// ended). A name already taken means another creator won; that is fine.
func (g *Gateway) createSession(ctx context.Context, s *slot, actor string) error {
	params, _ := json.Marshal(protocol.SessionCreateParams{Name: s.name, Shell: g.opts.Shell, WorkingDir: g.opts.WorkingDir})
	_, err := g.h.Handle(ctx, &protocol.Call{Method: protocol.MethodSessionCreate, Params: params, Actor: actor, IsolationKey: s.tenant})
	if err != nil {
		return err
	}
	g.setLive(s, true)
	g.log.Info().Str("session", s.name).Msg("gateway: created a session")
	return nil
}

// notRun answers a call whose command never started.
func (g *Gateway) notRun(err error, waiting string) ([]byte, bool) {
	if g.ctx.Err() != nil {
		return encode(failure(string(protocol.CodeShuttingDown), "the daemon is shutting down; retry against a running daemon")), false
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return encode(failure(string(protocol.CodeSessionBusy),
			"the call's time ran out %s; nothing was run. Retry once the earlier command has finished", waiting)), false
	}
	pe := protocol.AsError(err)
	keep := pe.Code == protocol.CodeInvalidParams
	return encode(failure(string(pe.Code), "%s", pe.Message)), keep
}

// as converts a notification's params into dst: directly when the method
// table passed the protocol type, through JSON otherwise.
func as[T any](params any, dst *T) error {
	switch p := params.(type) {
	case T:
		*dst = p
		return nil
	case *T:
		*dst = *p
		return nil
	}
	b, err := json.Marshal(params)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, dst)
}

func ptr[T any](v T) *T { return &v }
