package runtime

import (
	"context"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// Watching the daemon's work from inside the process, as the recorder
// does: the callbacks see every session and command, whichever front-end
// started it, without polling.

// OnSessionCreate calls f with each session created from now on, before
// any request can reach it (session.Manager.OnCreate); remove stops it.
func (rt *Runtime) OnSessionCreate(f func(*session.Session)) (remove func()) {
	return rt.sessions.OnCreate(f)
}

// CommandEnd is a command that ended, as OnCommandEnd tells it.
type CommandEnd struct {
	// Summary is its exec.list entry, state exited.
	Summary protocol.ExecSummary
	// Ran is false for a command that never reached its shell: not
	// approved, or its session ended first. One that ran was announced
	// to the session's observers (session.CommandStart).
	Ran bool

	rt *Runtime
}

// Read reads the command's output as exec.read does, also while the
// daemon shuts down (exec.read then answers SHUTTING_DOWN): an observer
// records the commands the shutdown itself ended.
func (e CommandEnd) Read(ctx context.Context, p protocol.ExecReadParams) (protocol.ExecReadResult, error) {
	p.ExecID, p.StreamID = e.Summary.ExecID, ""
	r, err := e.rt.execRead(ctx, p)
	if err != nil {
		err = wireError(err)
	}
	return r, err
}

// OnCommandEnd calls f with each command that ends from now on, once its
// end is kept (exec.list shows it ended, exec.read has all its output).
// f runs on the session's output path and must not block; remove stops
// it.
func (rt *Runtime) OnCommandEnd(f func(CommandEnd)) (remove func()) {
	return rt.ended.Add(f)
}

// commandEnded is every Job's Ended: its audit line, then OnCommandEnd's
// callbacks.
func (rt *Runtime) commandEnded(j *exec.Job, x exec.Exit) {
	rt.auditCommand(j, x)
	rt.commandGone(j)
	fs := rt.ended.Load()
	if len(fs) == 0 {
		return
	}
	e := CommandEnd{Summary: rt.summary(j), Ran: !x.NotRun, rt: rt}
	for _, f := range fs {
		(*f)(e)
	}
}
