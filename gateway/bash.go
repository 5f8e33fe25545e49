package gateway

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/trl-project/trl/protocol"
)

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
	caller := protocol.Caller{Transport: "gateway", Actor: actor}
	if req.ToolCallID != "" {
		// A retried call shares the first call's approval (SPEC §16).
		k := memoKey(req.TenantID, req.ToolCallID)
		caller.ApprovalKey = "gateway:" + hex.EncodeToString(k[:])
	}
	ctx = protocol.WithCaller(ctx, caller)

	s, err := g.acquire(ctx, req.TenantID, req.WorkspaceID, req.SessionID)
	if err != nil {
		return g.notRun(err, "waiting for the previous call in this session")
	}
	defer g.release(s)

	started, follow, err := g.startStream(ctx, s, cmd, stdin, cmdBy)
	if err != nil {
		return g.notRun(err, "waiting for this session to be free")
	}
	out := newCollector(g.opts.MaxOutputBytes, updateInterval)
	var exit *protocol.ExitNotification
	var approval *protocol.ApprovalNotification
	emit := func(method string, params any) error {
		switch n := params.(type) {
		case protocol.OutputNotification:
			out.add(n.Stream, n.Data, n.LostBytes, g.opts.now())
		case protocol.ApprovalNotification:
			approval = &n
		case protocol.ExitNotification:
			exit = &n
		default:
			return fmt.Errorf("gateway: unexpected %s notification of type %T", method, params)
		}
		return nil
	}
	fctx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	stopWatch, prompt := g.watchInput(fctx, started.ExecID, cmdBy, stopFollow)
	ferr := follow(fctx, emit)
	stopWatch()
	output := out.output()
	ms := timeout.Milliseconds()
	switch {
	case exit == nil && approval != nil && approval.State == protocol.StateAwaitingApproval:
		// Fail-closed: no decision within the call's time is a denial;
		// the command, which never ran, is withdrawn.
		_, _ = g.api.ExecCancel(context.WithoutCancel(ctx), protocol.ExecCancelParams{ExecID: started.ExecID})
		return encode(failure(string(protocol.CodeCommandDenied),
			"the command needs a person's approval (%s: %s) and none came within the call's %d ms; nothing was run", approval.Approval.Rule, approval.Approval.Reason, ms)), true
	case exit != nil && exit.Denied:
		reason := "it was denied"
		if approval != nil {
			reason = fmt.Sprintf("%s (%s); the approver said: %s", approval.Approval.Reason, approval.Approval.Rule, approval.Approval.DecisionReason)
		}
		return encode(failure(string(protocol.CodeCommandDenied), "the command was not approved: %s; nothing was run", reason)), true
	case prompt() != nil && (exit == nil || exit.Canceled):
		// A gateway call cannot answer a prompt: say so at once, with
		// the prompt and the output so far; the command was interrupted.
		// The exit the interrupt caused may have come in before the
		// stream stopped: it is this answer too.
		return out.body(toolResult{Output: &output, Error: &toolError{Code: CodeCommandWaitingInput, Message: waitingMessage(prompt())}}), true
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
// terminal input (awaitInput); when it does, it stops the command (stop:
// SIGINT, then TERM and KILL if it goes on) and calls stopFollow. The returned stop ends the watch; prompt
// says what the command waited for (nil: it did not).
func (g *Gateway) watchInput(ctx context.Context, id string, cmdBy time.Time, stopFollow func()) (stop func(), prompt func() *protocol.InputWait) {
	var in *protocol.InputWait
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		ms := min(max(time.Until(cmdBy).Milliseconds(), 1), 600_000)
		if in = g.awaitInput(wctx, id, ms); in == nil {
			return
		}
		g.stop(context.WithoutCancel(ctx), id)
		stopFollow()
	}()
	return func() { cancel(); <-done }, func() *protocol.InputWait { return in }
}

// startStream starts cmd with exec.stream in the slot's session, creating
// the session when it does not exist or its shell has ended. While the
// session is busy with the end of an earlier call (one the gateway gave
// up waiting for), it waits for that command's exit (exec.wait) and tries
// again, until ctx ends.
func (g *Gateway) startStream(ctx context.Context, s *slot, cmd, stdin string, cmdBy time.Time) (protocol.ExecStreamStarted, protocol.Follow, error) {
	created := false
	for {
		left := time.Until(cmdBy)
		if left <= 0 {
			return protocol.ExecStreamStarted{}, nil, context.DeadlineExceeded
		}
		started, follow, err := g.api.ExecStream(ctx, protocol.ExecParams{SessionID: s.name, Command: &cmd, Stdin: &stdin, TimeoutS: ptr(left.Seconds())})
		if err == nil {
			g.setLive(s, true)
			return started, follow, nil
		}
		pe := protocol.AsError(err)
		switch pe.Code {
		case protocol.CodeSessionNotFound, protocol.CodeSessionExited:
			if created {
				return started, nil, err
			}
			if err := g.createSession(ctx, s); err != nil {
				return started, nil, err
			}
			created = true
		case protocol.CodeSessionBusy:
			running, ok := pe.Data.(protocol.ExecSummary)
			if !ok {
				return started, nil, err
			}
			ms := min(max(time.Until(cmdBy).Milliseconds(), 1), 600_000)
			if _, err := g.api.ExecWait(ctx, protocol.ExecWaitParams{ExecID: running.ExecID, Until: &[]string{}, TimeoutMS: &ms}); err != nil && ctx.Err() == nil && protocol.AsError(err).Code != protocol.CodeStreamNotFound {
				return started, nil, err
			}
			if ctx.Err() != nil {
				return started, nil, ctx.Err()
			}
		default:
			return started, nil, err
		}
	}
}

// createSession creates the slot's session (replacing one whose shell has
// ended). A name already taken means another creator won; that is fine.
func (g *Gateway) createSession(ctx context.Context, s *slot) error {
	c := protocol.CallerFrom(ctx)
	c.IsolationKey = s.tenant
	_, err := g.api.SessionCreate(protocol.WithCaller(ctx, c), protocol.SessionCreateParams{Name: s.name, Shell: g.opts.Shell, WorkingDir: g.opts.WorkingDir})
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
	keep := pe.Code == protocol.CodeInvalidParams || pe.Code == protocol.CodeCommandDenied
	return encode(failure(string(pe.Code), "%s", pe.Message)), keep
}

func ptr[T any](v T) *T { return &v }
