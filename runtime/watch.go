package runtime

import (
	"github.com/trl-project/trl/exec"
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

// OnCommandEnd calls f with each command that ends from now on, once its
// end is kept: exec.list shows it ended and exec.read has all its output.
// f runs on the session's output path and must not block; remove stops
// it.
func (rt *Runtime) OnCommandEnd(f func(sessionID, execID string)) (remove func()) {
	return rt.ended.Add(f)
}

// commandEnded is every Job's Ended: its audit line, then OnCommandEnd's
// callbacks.
func (rt *Runtime) commandEnded(j *exec.Job, x exec.Exit) {
	rt.auditCommand(j, x)
	for _, f := range rt.ended.Load() {
		(*f)(j.SessionID(), j.ID())
	}
}
