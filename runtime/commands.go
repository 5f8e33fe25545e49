package runtime

import (
	"time"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// Finished commands stay addressable by exec_id (exec.read, exec.wait,
// exec.list) for this long, and at most this many of them.
const (
	retainFor   = 10 * time.Minute
	retainCount = 256
)

// command is one command's life as the runtime sees it (SPEC §8): its id,
// its session, its execution, where its output is kept, and how far the
// statuses returned so far have carried its output. What runs in a
// session is its job (session.Running hands back the command); the
// registry Runtime.cmds finds commands by exec_id, running or retained.
type command struct {
	id      string
	s       *session.Session
	text    string
	method  string
	started time.Time
	e       *exec.Execution
	watch   *exec.Watch
	coll    *exec.Collector // exec.run: head and tail within max_output_bytes
	st      *exec.Stream    // exec.stream: a window of recent output
	max     int             // output budget of one status (exec.input may change it: guarded by Runtime.mu)
	done    <-chan struct{} // closed once the exit is recorded (the execution's Done)

	// Guarded by Runtime.mu.
	sent     [2]int64  // output offsets the statuses have carried so far
	yielded  bool      // a status returned before the end
	reported bool      // a status with the exit was returned
	inputAt  time.Time // when input was last typed
	exit     *exec.Exit
	ended    time.Time
}

// launch starts r in s as c (its id, method, and where its output is
// kept — coll or st, with max — set by the caller) and registers it. The
// execution's own goroutine owns the command's end: it records the exit,
// runs onExit and moves the command to the retained ones, all before
// c.done closes. c is complete before anyone else can look it up.
func (rt *Runtime) launch(s *session.Session, r exec.Request, c *command, onExit func(*command, exec.Exit)) (*command, error) {
	c.s, c.text, c.started = s, r.Command, time.Now()
	var sink session.Sink = c.st
	if c.coll != nil {
		sink = c.coll
	}
	c.watch = exec.NewWatch(sink)
	r.Owner = c
	registered := make(chan struct{})
	rt.execs.Add(1)
	e, err := exec.Start(exec.InSession(s), r, c.watch, exec.Options{OnExit: func(x exec.Exit) {
		defer rt.execs.Done()
		<-registered // a command can end before launch has registered it
		onExit(c, x)
		rt.mu.Lock()
		c.exit = &x
		c.ended = time.Now()
		rt.retain(c)
		rt.mu.Unlock()
	}})
	if err != nil {
		rt.execs.Done()
		return nil, err
	}
	c.e, c.done = e, e.Done()
	rt.commands.Add(1)
	rt.mu.Lock()
	rt.cmds[c.id] = c
	rt.mu.Unlock()
	close(registered)
	return c, nil
}

// retain keeps c addressable after its end, dropping the oldest finished
// commands beyond the bounds. Called with rt.mu held.
func (rt *Runtime) retain(c *command) {
	rt.finished = append(rt.finished, c)
	cutoff := time.Now().Add(-retainFor)
	n := 0
	for n < len(rt.finished) && (len(rt.finished)-n > retainCount || rt.finished[n].ended.Before(cutoff)) {
		delete(rt.cmds, rt.finished[n].id)
		n++
	}
	if n > 0 {
		rt.finished = append(rt.finished[:0], rt.finished[n:]...)
	}
}

// lookupExec finds a command by exec_id (a stream_id is one too).
func (rt *Runtime) lookupExec(id string) (*command, error) {
	if id == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "exec_id is required (exec.run and exec.stream return it)")
	}
	rt.mu.Lock()
	c := rt.cmds[id]
	rt.mu.Unlock()
	if c == nil {
		return nil, protocol.Errorf(protocol.CodeStreamNotFound, "no command with exec_id %q; finished commands are kept %s (at most %d); exec.list shows them", clip(id, 64), retainFor, retainCount)
	}
	return c, nil
}

// current returns the command running in s, if any. A command the
// session runs but launch has not registered yet is not returned: it is
// not complete until then.
func (rt *Runtime) current(s *session.Session) *command {
	c, _ := s.Running().(*command)
	if c == nil {
		return nil
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if rt.cmds[c.id] != c || c.exit != nil {
		return nil
	}
	return c
}

// runningLocked lists the commands that have not ended. Called with
// rt.mu held.
func (rt *Runtime) runningLocked() []*command {
	cs := make([]*command, 0, len(rt.cmds)-len(rt.finished))
	for _, c := range rt.cmds {
		if c.exit == nil {
			cs = append(cs, c)
		}
	}
	return cs
}

// summary describes c for exec.list and session.info.
func (rt *Runtime) summary(c *command) protocol.ExecSummary {
	act := c.watch.Activity()
	sum := protocol.ExecSummary{
		ExecID:      c.id,
		SessionID:   c.s.ID(),
		Command:     cut(c.text, 256),
		State:       protocol.StateRunning,
		StartedAt:   c.started.UTC().Format(time.RFC3339Nano),
		StdoutBytes: act.StdoutBytes,
		StderrBytes: act.StderrBytes,
	}
	rt.mu.Lock()
	x := c.exit
	rt.mu.Unlock()
	if x != nil {
		sum.State = protocol.StateExited
		code := x.ExitCode
		sum.ExitCode = &code
		sum.DurationMS, sum.Cwd = x.Duration.Milliseconds(), x.Cwd
		return sum
	}
	sum.DurationMS = time.Since(c.started).Milliseconds()
	if in := rt.inputWait(c); in != nil {
		sum.State, sum.Input = protocol.StateWaitingInput, in
	}
	return sum
}

// busyError is SESSION_BUSY with the running command's status in data,
// so a client learns what holds the session (SPEC §8).
func (rt *Runtime) busyError(s *session.Session, err error) error {
	c := rt.current(s)
	if c == nil {
		return err
	}
	sum := rt.summary(c)
	return &protocol.Error{
		Code:    protocol.CodeSessionBusy,
		Message: "session " + s.ID() + " is running " + c.id + " (" + sum.State + "); answer it with exec.input, wait with exec.wait, cancel it with exec.cancel, or use another session",
		Data:    sum,
	}
}
