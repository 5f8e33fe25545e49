package runtime

import (
	"context"
	"time"

	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// launch starts r in s as one exec.Job, registered in the one registry.
// The Job owns the command from here to its end; onExit (audit, metrics)
// runs on its end, before its Done closes.
// The command line is checked against the policy first: a denied one never
// starts, one a person must decide starts held by its approval.
func (rt *Runtime) launch(ctx context.Context, s *session.Session, r exec.Request, onExit func(*exec.Job, exec.Exit)) (*exec.Job, error) {
	if j := rt.current(s); j != nil && j.Ending() {
		// Its command was just cancelled and is ending, as it usually
		// does within milliseconds: wait for that (an exec.run sent just
		// after an exec.cancel got SESSION_BUSY), but not for a program
		// that ignores the signal.
		t := time.NewTimer(cancelGrace)
		select {
		case <-j.Done():
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if rt.opts.Policy != nil && rt.current(s) != nil {
		// Busy (running, or held for a command awaiting approval): said
		// before the policy is asked, so that no person is asked about a
		// command that cannot start. Without a policy the session's own
		// check (ErrBusy from Start) is the one.
		return nil, rt.busyError(s, session.ErrBusy)
	}
	gate, err := rt.admit(ctx, s, r.Command, r.Env, r.Stdin)
	if err != nil {
		return nil, err
	}
	if gate != nil {
		r.Gate = gate
		exit := onExit
		onExit = func(j *exec.Job, x exec.Exit) {
			if x.NotRun {
				rt.unapproved(j, x)
			}
			exit(j, x)
		}
	}
	r.Session, r.SessionID = s, s.ID()
	r.Actor = protocol.CallerFrom(ctx).Actor
	// Commands running in several sessions at once have their output
	// read side by side: the process has every P (internal/procs).
	rt.opts.Procs.EnterCommand()
	counted := onExit
	onExit = func(j *exec.Job, x exec.Exit) {
		rt.opts.Procs.LeaveCommand()
		counted(j, x)
	}
	j, err := exec.Start(exec.InSession(s), rt.jobs, r, exec.Options{OnExit: onExit, Ended: rt.commandEnded})
	if err != nil {
		rt.opts.Procs.LeaveCommand()
	}
	if err != nil && gate != nil {
		// It never started (the session ended or was taken meanwhile):
		// the approval is withdrawn rather than left for a person.
		_ = rt.opts.Approvals.Decide(gate.p.ID(), approval.Deny, "the command could not start: "+err.Error(), "trl")
	}
	return j, err
}

// lookupExec finds a command by exec_id (a stream_id is one too).
func (rt *Runtime) lookupExec(id string) (*exec.Job, error) {
	if id == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "exec_id is required (exec.run and exec.stream return it)")
	}
	return rt.jobs.Get(id)
}

// current returns the command running in s (or held for its approval),
// if any; one whose end is being recorded no longer counts.
func (rt *Runtime) current(s *session.Session) *exec.Job {
	j := rt.jobs.Running(s.ID())
	if j == nil {
		return nil
	}
	if _, ended := j.Exit(); ended {
		return nil
	}
	return j
}

// summary describes j for exec.list and session.info.
func (rt *Runtime) summary(j *exec.Job) protocol.ExecSummary {
	act := j.Watch().Activity()
	sum := protocol.ExecSummary{
		ExecID:      j.ID(),
		SessionID:   j.SessionID(),
		Command:     cut(maskText(j, j.Command()), 256),
		State:       protocol.StateRunning,
		StartedAt:   j.Started().UTC().Format(time.RFC3339Nano),
		StdoutBytes: act.StdoutBytes,
		StderrBytes: act.StderrBytes,
		Approval:    approvalOf(j),
	}
	if x, ended := j.Exit(); ended {
		sum.State = protocol.StateExited
		code := x.ExitCode
		sum.ExitCode = &code
		sum.DurationMS, sum.Cwd = x.Duration.Milliseconds(), maskText(j, x.Cwd)
		return sum
	}
	sum.DurationMS = time.Since(j.Started()).Milliseconds()
	if j.Awaiting() {
		sum.State = protocol.StateAwaitingApproval
		return sum
	}
	if in, _ := rt.inputWait(j); in != nil {
		sum.State, sum.Input = protocol.StateWaitingInput, in
	}
	return sum
}

// busyError is SESSION_BUSY with the running command's status in data,
// so a client learns what holds the session (SPEC §8).
func (rt *Runtime) busyError(s *session.Session, err error) error {
	j := rt.current(s)
	if j == nil {
		return err
	}
	sum := rt.summary(j)
	var what string
	switch sum.State {
	case protocol.StateAwaitingApproval:
		what = " awaits a person's approval (exec.approve); follow it with exec.wait, withdraw it with exec.cancel, or use another session"
	case protocol.StateWaitingInput:
		what = " waits for input; answer it with exec.input, wait with exec.wait, cancel it with exec.cancel, or use another session"
	default:
		what = " runs; wait for it with exec.wait, cancel it with exec.cancel, or use another session"
	}
	return &protocol.Error{
		Code:    protocol.CodeSessionBusy,
		Message: "session " + s.ID() + " is busy: its command " + j.ID() + what,
		Data:    sum,
	}
}

// maskText is text with the secrets of j's session masked (the command
// line of exec.list and the audit log may hold one).
func maskText(j *exec.Job, text string) string {
	if s := j.Session(); s != nil {
		return s.MaskText(text)
	}
	return text
}
