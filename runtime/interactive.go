package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/internal/terminput"
	"github.com/trl-project/trl/internal/termwait"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/screen"
	"github.com/trl-project/trl/session"
)

// Defaults of SPEC §8.
const (
	inputYield       = 5 * time.Second
	waitTimeout      = 30 * time.Second
	maxWaitTimeout   = 600 * time.Second
	auditInputCutoff = 4096
)

// status is the SPEC §8 status of c after ev: the output since the last
// status (advance moves that mark on; a peek does not), the state, and
// the screen when a full-screen program has it.
func (rt *Runtime) status(c *exec.Job, ev event, render string, advance bool) protocol.ExecStatus {
	m := c.Marks()
	x, ended := c.Exit()
	st := protocol.ExecStatus{ExecID: c.ID(), SessionID: c.SessionID(), Reason: ev.reason}
	var ends [2]int64
	for _, s := range []session.Stream{session.Stdout, session.Stderr} {
		sl := c.Store().Since(s, m.Sent[s], max(m.Max/2, 1))
		at := -1
		if sl.Gap.Bytes > 0 {
			at = sl.Gap.At
		}
		text, omitted := renderCut(render, sl.Data, at, sl.Gap.Offset, sl.Gap.Bytes)
		ends[s] = sl.End
		st.Truncated = st.Truncated || sl.Cut
		if s == session.Stdout {
			st.Stdout, st.StdoutOffset, st.StdoutOmitted = text, sl.Start, omitted
		} else {
			st.Stderr, st.StderrOffset, st.StderrOmitted = text, sl.Start, omitted
		}
	}
	act := c.Watch().Activity()
	st.StdoutBytes, st.StderrBytes = act.StdoutBytes, act.StderrBytes
	if ended {
		fillExit(&st, x)
	} else {
		st.State = protocol.StateRunning
		st.DurationMS = time.Since(c.Started()).Milliseconds()
		if s := c.Session(); s != nil {
			// No directory "after" it yet: the one it started in.
			st.Cwd = s.Cwd()
		}
		if ev.input != nil {
			st.State, st.Input = protocol.StateWaitingInput, ev.input
		}
	}
	tui := ev.input != nil && ev.input.Kind == string(termwait.KindTUI)
	if s := c.Session(); s != nil && (tui || s.Screen().AltScreen()) {
		// A full-screen program (on the alternate screen, or drawing
		// without it) is read from its screen.
		snap := wireScreen(s.Screen().Snapshot(screen.SnapshotOptions{}))
		st.AltScreen, st.Screen = snap.AltScreen, &snap
		if render == "text" && snap.AltScreen {
			st.Stdout, st.StdoutOmitted = "", nil // the screen is the text a reader sees
		}
	}
	approvalStatus(&st, c, x, ended)
	if s := c.Session(); s != nil {
		st.Cwd = s.MaskText(st.Cwd) // a directory named after a secret
	}
	if advance {
		c.Advance(ends)
		if s := c.Session(); s != nil {
			noteSession(&st, s)
			if ended {
				noteStrays(&st, c, s)
			}
		}
	}
	return st
}

// noteSession says what the agent must know about the session beyond the
// command (issue 24 item 7): that the shell exited with the command, and
// where the next command will run; or, once, that this command ran in a
// default session started anew. Call it once per status returned.
func noteSession(st *protocol.ExecStatus, s *session.Session) {
	if old := s.TakeReplaced(); old != "" {
		st.NewSession = true
		st.Note = "this command ran in a new shell: the default session's shell (" + old + ") had ended, so the working directory, variables and functions set there are gone"
	}
	if !st.SessionExited {
		return
	}
	code := 0
	if st.ExitCode != nil {
		code = *st.ExitCode
	}
	cause := s.EndCause()
	var note string
	switch {
	case errors.Is(cause, session.ErrShutdown):
		st.Note = joinNote(st.Note, fmt.Sprintf("the daemon shut down while this command ran: it ended it (status %d) and session %s", code, s.ID()))
		return
	case errors.Is(cause, session.ErrDestroyed):
		note = fmt.Sprintf("session %s was destroyed while this command ran, which ended it (status %d)", s.ID(), code)
	case errors.Is(cause, session.ErrEndedAfterCommand):
		note = fmt.Sprintf("this command ended (status %d), and session %s was ended after it: %v", code, s.ID(), cause)
	case cause == nil || errors.Is(cause, session.ErrShellExited):
		note = fmt.Sprintf("the shell exited with this command (status %d): session %s is gone", code, s.ID())
	default:
		note = fmt.Sprintf("session %s was ended while this command ran (%v), which ended it (status %d)", s.ID(), cause, code)
	}
	if s.Name() == session.DefaultName {
		note += "; the next command without a session_id starts a new shell, in the default directory and without this one's variables"
	} else {
		note += "; create a new session to go on"
	}
	st.Note = joinNote(st.Note, note)
}

// noteStrays says, in the status of a command that timed out or was
// cancelled, which processes it started still run: they left its process
// group (setsid, a nested shell's background job), so the signals did
// not reach them. Call it once the command has ended.
func noteStrays(st *protocol.ExecStatus, c *exec.Job, s *session.Session) {
	if !st.TimedOut && !st.Canceled || st.SessionExited {
		return
	}
	strays := s.Strays(c.Started())
	if len(strays) == 0 {
		return
	}
	pids := make([]string, len(strays))
	for i, p := range strays {
		pids[i] = strconv.Itoa(p)
	}
	st.Note = joinNote(st.Note, fmt.Sprintf("%d process(es) it started still run (pid %s): they left its process group, so the signals did not reach them; kill them, or end them all with session.destroy", len(strays), strings.Join(pids, ", ")))
}

// joinNote appends note to what a status's note says already.
func joinNote(was, note string) string {
	if was == "" {
		return note
	}
	return was + "; " + note
}

// sessionEndCause is why the session of x's command ended, when the
// command ended it.
func sessionEndCause(x exec.Exit) string {
	if !x.SessionExited || x.Cause == nil {
		return ""
	}
	return x.Cause.Error()
}

// fillExit sets the fields of an ended command.
func fillExit(st *protocol.ExecStatus, x exec.Exit) {
	code := x.ExitCode
	st.State, st.ExitCode = protocol.StateExited, &code
	st.DurationMS = x.Duration.Milliseconds()
	st.TimedOut, st.Canceled = x.TimedOut, x.Canceled
	st.Cwd, st.SessionExited = x.Cwd, x.SessionExited
	st.SessionEndCause = sessionEndCause(x)
	if x.OutOfMemory {
		st.EndCause = protocol.EndCauseOutOfMemory
	}
	switch {
	case x.Denied:
		st.Reason = protocol.ReasonDenied
	case x.TimedOut:
		st.Reason = protocol.ReasonTimeout
	case x.Canceled:
		st.Reason = protocol.ReasonCanceled
	default:
		st.Reason = protocol.ReasonExit
	}
}

// ExecInput is the typed execInput.
func (rt *Runtime) ExecInput(ctx context.Context, p protocol.ExecInputParams) (protocol.ExecStatus, error) {
	return serve(rt, ctx, protocol.MethodExecInput, func() (protocol.ExecStatus, error) { return rt.execInput(ctx, p) })
}

func (rt *Runtime) execInput(ctx context.Context, p protocol.ExecInputParams) (protocol.ExecStatus, error) {
	items, err := inputItems(p.Input)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	u, err := parseUntil(p.Until)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	yield, err := yieldDuration(p.YieldMS, inputYield)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	if err := checkRender(p.Render); err != nil {
		return protocol.ExecStatus{}, err
	}
	c, err := rt.commandFor(p.ExecID, p.SessionID)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	if p.MaxOutputBytes != nil {
		if *p.MaxOutputBytes < 1 || *p.MaxOutputBytes > rt.opts.MaxOutputBytes {
			return protocol.ExecStatus{}, protocol.Errorf(protocol.CodeInvalidParams, "max_output_bytes must be between 1 and %d", rt.opts.MaxOutputBytes)
		}
		c.SetMax(int(*p.MaxOutputBytes))
	}
	s := c.Session()
	select {
	case <-c.Done():
		return protocol.ExecStatus{}, &protocol.Error{Code: protocol.CodeInvalidState, Message: "command " + c.ID() + " has ended; nothing was typed", Data: rt.status(c, event{reason: protocol.ReasonExit}, p.Render, false)}
	default:
	}
	if p.RequireWaiting && !rt.waitingNow(c) {
		return protocol.ExecStatus{}, &protocol.Error{Code: protocol.CodeInvalidState, Message: "command " + c.ID() + " is not waiting for input; nothing was typed (drop require_waiting to type anyway)", Data: rt.status(c, event{}, p.Render, false)}
	}
	appCursor, paste, erase, eof := s.InputModes()
	b, err := terminput.Encode(nil, items, terminput.Modes{AppCursor: appCursor, BracketedPaste: paste, Erase: erase, EOF: eof})
	if err != nil {
		return protocol.ExecStatus{}, protocol.Errorf(protocol.CodeInvalidParams, "%v", err)
	}
	typed, err := rt.admitInput(ctx, c, items, p.Secret)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	c.Typed(time.Now())
	if p.Secret {
		err = s.WriteSecret(b)
	} else {
		err = s.WriteInput(b)
	}
	typed(err == nil)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	rt.auditInput(c, protocol.CallerFrom(ctx).Actor, items, len(b), p.Secret)
	ev := rt.await(ctx, c, u, yield)
	return rt.status(c, ev, p.Render, true), nil
}

// commandFor finds the command exec.input addresses: by exec_id, or the
// one running in a session.
func (rt *Runtime) commandFor(id, sessionRef string) (*exec.Job, error) {
	if id != "" {
		return rt.lookupExec(id)
	}
	s, err := rt.execSession(sessionRef)
	if err != nil {
		return nil, err
	}
	c := rt.current(s)
	if c == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidState, "session %s runs no command to type into; start one with exec.run", s.ID())
	}
	return c, nil
}

// inputItems reads exec.input's input: a string, or a list of strings
// and {"key"}, {"paste"}, {"eof"} objects.
func inputItems(list protocol.InputList) ([]terminput.Item, error) {
	if list == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "input is required: a string, or a list such as [\"y\", {\"key\": \"Enter\"}]")
	}
	items := make([]terminput.Item, 0, len(list))
	for i, it := range list {
		n := 0
		var item terminput.Item
		if it.Text != nil {
			n++
			item = terminput.Item{Kind: terminput.Text, Value: *it.Text}
		}
		if it.Key != "" {
			n++
			item = terminput.Item{Kind: terminput.Key, Value: it.Key}
		}
		if it.Paste != nil {
			n++
			item = terminput.Item{Kind: terminput.Paste, Value: *it.Paste}
		}
		if it.EOF {
			n++
			item = terminput.Item{Kind: terminput.EOF}
		}
		if n != 1 {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "input[%d] must be a string or an object with exactly one of key, paste, eof", i)
		}
		items = append(items, item)
	}
	return items, nil
}

// TypeInto is a person typing into a session's terminal in the web
// console: raw bytes as the browser's terminal sends them, to whatever
// runs there. It goes through the runtime as exec.input does: the running
// command learns that input came (its input-wait sampling waits for the
// program to read it), the typing is audited with the caller's actor,
// and at a password prompt the line is a secret (masked everywhere, never
// audited). A person is not an agent: the command policy does not check
// what a person types.
func (rt *Runtime) TypeInto(ctx context.Context, ref string, p []byte) error {
	_, err := serve(rt, ctx, "console.type", func() (struct{}, error) {
		s, err := rt.lookup(ref)
		if err != nil {
			return struct{}{}, err
		}
		c := rt.current(s)
		if c != nil {
			c.Typed(time.Now())
		}
		secret, err := s.WriteTyped(p)
		ev := rt.audit.Info().Str("event", "input").Str("actor", protocol.CallerFrom(ctx).Actor).Str("session", s.ID()).
			Int("bytes", len(p)).Bool("secret", secret).Bool("ok", err == nil)
		if c != nil {
			ev = ev.Str("exec_id", c.ID())
		}
		ev.Msg("input")
		return struct{}{}, err
	})
	return err
}

// auditInput writes one event per exec.input: who typed how much into
// which command, the keys by name, and the text (cut) unless secret.
func (rt *Runtime) auditInput(c *exec.Job, actor string, items []terminput.Item, n int, secret bool) {
	ev := rt.audit.Info().
		Str("event", "input").
		Str("session", c.SessionID()).
		Str("exec_id", c.ID()).
		Str("actor", actor).
		Int("bytes", n).
		Bool("secret", secret)
	var keys []string
	text := make([]byte, 0, 64)
	for _, it := range items {
		switch it.Kind {
		case terminput.Key:
			keys = append(keys, it.Value)
		case terminput.EOF:
			keys = append(keys, "EOF")
		default:
			if !secret && len(text) < auditInputCutoff {
				text = append(text, it.Value...)
			}
		}
	}
	if len(keys) > 0 {
		ev = ev.Strs("keys", keys)
	}
	if !secret {
		ev = ev.Str("text", cut(maskText(c, string(text)), auditInputCutoff))
	}
	ev.Msg("input")
}

// ExecWait is the typed execWait.
func (rt *Runtime) ExecWait(ctx context.Context, p protocol.ExecWaitParams) (protocol.ExecStatus, error) {
	return serve(rt, ctx, protocol.MethodExecWait, func() (protocol.ExecStatus, error) { return rt.execWait(ctx, p) })
}

func (rt *Runtime) execWait(ctx context.Context, p protocol.ExecWaitParams) (protocol.ExecStatus, error) {
	u, err := parseUntil(p.Until)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	if err := checkRender(p.Render); err != nil {
		return protocol.ExecStatus{}, err
	}
	timeout := waitTimeout
	if p.TimeoutMS != nil {
		if *p.TimeoutMS < 0 || *p.TimeoutMS > maxWaitTimeout.Milliseconds() {
			return protocol.ExecStatus{}, protocol.Errorf(protocol.CodeInvalidParams, "timeout_ms must be between 0 and %d", maxWaitTimeout.Milliseconds())
		}
		timeout = time.Duration(*p.TimeoutMS) * time.Millisecond
	}
	var cs []*exec.Job
	switch {
	case p.ExecID == "any" && len(p.ExecIDs) == 0:
		cs = rt.jobs.Unreported()
		if len(cs) == 0 {
			return protocol.ExecStatus{}, protocol.Errorf(protocol.CodeInvalidState, "no command is running or has an exit not yet reported; nothing to wait for")
		}
	case p.ExecID != "" && len(p.ExecIDs) == 0:
		c, err := rt.lookupExec(p.ExecID)
		if err != nil {
			return protocol.ExecStatus{}, err
		}
		cs = []*exec.Job{c}
	case p.ExecID == "" && len(p.ExecIDs) > 0:
		for _, id := range p.ExecIDs {
			c, err := rt.lookupExec(id)
			if err != nil {
				return protocol.ExecStatus{}, err
			}
			cs = append(cs, c)
		}
	case p.ExecID != "":
		return protocol.ExecStatus{}, protocol.Errorf(protocol.CodeInvalidParams, "give exec_id (an id, or \"any\") or exec_ids, not both")
	default:
		return protocol.ExecStatus{}, protocol.Errorf(protocol.CodeInvalidParams, "exec_id is missing: give exec_id (an id, or \"any\") or exec_ids (a non-empty list)")
	}
	if len(cs) == 1 {
		ev := rt.await(ctx, cs[0], u, max(timeout, time.Millisecond))
		return rt.status(cs[0], ev, p.Render, true), nil
	}
	c, ev := rt.awaitAny(ctx, cs, u, timeout)
	if c == nil {
		// Nothing happened: the status of the first, carrying its news.
		c = cs[0]
	}
	return rt.status(c, ev, p.Render, true), nil
}

// ExecList is the typed execList.
func (rt *Runtime) ExecList(ctx context.Context, p protocol.ExecListParams) (protocol.ExecList, error) {
	return serve(rt, ctx, protocol.MethodExecList, func() (protocol.ExecList, error) { return rt.execList(ctx, p) })
}

func (rt *Runtime) execList(ctx context.Context, p protocol.ExecListParams) (protocol.ExecList, error) {
	var only *session.Session
	if p.SessionID != "" {
		s, err := rt.sessions.Get(p.SessionID)
		if err != nil {
			return protocol.ExecList{}, err
		}
		only = s
	}
	out := protocol.ExecList{Commands: []protocol.ExecSummary{}}
	for _, c := range rt.jobs.List() {
		if only == nil || c.SessionID() == only.ID() {
			out.Commands = append(out.Commands, rt.summary(c))
		}
	}
	return out, nil
}
