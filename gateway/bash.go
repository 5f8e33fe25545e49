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
	fctx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	stopWatch, prompt := g.watchInput(fctx, reply, cmdBy, actor, stopFollow)
	ferr := reply.Follow(fctx, emit)
	stopWatch()
	output := out.output()
	ms := timeout.Milliseconds()
	switch {
	case prompt() != nil && (exit == nil || exit.Canceled):
		// A gateway call cannot answer a prompt: say so at once, with
		// the prompt and the output so far; the command was interrupted.
		// The exit the interrupt caused may have come in before the
		// stream stopped: it is this answer too.
		in := prompt()
		return out.body(toolResult{Output: &output, Error: &toolError{Code: CodeCommandWaitingInput,
			Message: fmt.Sprintf("the command waits for %s input at the prompt %q, which a gateway call cannot answer; it was interrupted. Pass the answer on stdin or use a non-interactive flag (such as -y)", in.Kind, in.Prompt)}}), true
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

// CodeCommandWaitingInput answers a bash.exec whose command waits for
// terminal input (SPEC §8).
const CodeCommandWaitingInput = "COMMAND_WAITING_INPUT"

// watchInput waits, beside the stream, for the command to wait for
// terminal input (exec.wait until "input"); when it does, it interrupts
// the command and calls stop. The returned stop ends the watch; prompt
// says what the command waited for (nil: it did not).
func (g *Gateway) watchInput(ctx context.Context, reply *protocol.Reply, cmdBy time.Time, actor string, stopFollow func()) (stop func(), prompt func() *protocol.InputWait) {
	var id string
	if started, ok := reply.Data.(protocol.ExecStreamStarted); ok {
		id = started.ExecID
	}
	var in *protocol.InputWait
	if id == "" {
		return func() {}, func() *protocol.InputWait { return nil }
	}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ms := max(time.Until(cmdBy).Milliseconds(), 1)
		params, _ := json.Marshal(map[string]any{"exec_id": id, "until": []string{"input"}, "timeout_ms": min(ms, 600_000)})
		r, err := g.h.Handle(wctx, &protocol.Call{Method: protocol.MethodExecWait, Params: params, Actor: actor})
		if err != nil || r == nil {
			return
		}
		st, ok := r.Data.(protocol.ExecStatus)
		if !ok || st.State != protocol.StateWaitingInput || wctx.Err() != nil {
			return
		}
		in = st.Input
		cp, _ := json.Marshal(map[string]any{"exec_id": id})
		_, _ = g.h.Handle(context.WithoutCancel(ctx), &protocol.Call{Method: protocol.MethodExecCancel, Params: cp, Actor: actor})
		stopFollow()
	}()
	return func() { cancel(); <-done }, func() *protocol.InputWait { return in }
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
