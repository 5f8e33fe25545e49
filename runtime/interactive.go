package runtime

import (
	"context"
	"encoding/json"
	"time"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/internal/terminput"
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

// since returns stream s of c's output from offset, within max bytes.
func (rt *Runtime) since(c *command, s session.Stream, offset int64, max int) (data []byte, start, end int64, cut bool) {
	if c.coll != nil {
		return c.coll.Since(s, offset, max)
	}
	data, start, lost, _ := c.st.ReadAt(s, offset, max)
	end = start + int64(len(data))
	out, errb := c.st.Totals()
	total := out
	if s == session.Stderr {
		total = errb
	}
	return data, start, end, lost > 0 || end < total
}

// status is the SPEC §8 status of c after ev: the output since the last
// status (advance moves that mark on; a peek does not), the state, and
// the screen when a full-screen program has it.
func (rt *Runtime) status(c *command, ev event, render string, advance bool) protocol.ExecStatus {
	rt.mu.Lock()
	sent, x, budget := c.sent, c.exit, c.max
	rt.mu.Unlock()
	st := protocol.ExecStatus{ExecID: c.id, SessionID: c.s.ID(), Reason: ev.reason}
	var ends [2]int64
	var data [2]string
	for _, s := range []session.Stream{session.Stdout, session.Stderr} {
		b, start, end, cut := rt.since(c, s, sent[s], max(budget/2, 1))
		data[s], _ = renderOutput(render, b)
		ends[s] = end
		st.Truncated = st.Truncated || cut
		if s == session.Stdout {
			st.StdoutOffset = start
		} else {
			st.StderrOffset = start
		}
	}
	st.Stdout, st.Stderr = data[0], data[1]
	act := c.watch.Activity()
	st.StdoutBytes, st.StderrBytes = act.StdoutBytes, act.StderrBytes
	if x != nil {
		fillExit(&st, *x)
	} else {
		st.State = protocol.StateRunning
		st.DurationMS = time.Since(c.started).Milliseconds()
		if ev.input != nil {
			st.State, st.Input = protocol.StateWaitingInput, ev.input
		}
	}
	if c.s.Screen().AltScreen() {
		snap := wireScreen(c.s.Screen().Snapshot(screen.SnapshotOptions{}))
		st.AltScreen, st.Screen = true, &snap
		if render == "text" {
			st.Stdout = "" // the screen is the text a reader sees
		}
	}
	if advance {
		rt.mu.Lock()
		c.sent = ends
		if x == nil {
			c.yielded = true
		} else {
			c.reported = true
		}
		rt.mu.Unlock()
	}
	return st
}

// fillExit sets the fields of an ended command.
func fillExit(st *protocol.ExecStatus, x exec.Exit) {
	code := x.ExitCode
	st.State, st.ExitCode = protocol.StateExited, &code
	st.DurationMS = x.Duration.Milliseconds()
	st.TimedOut, st.Canceled = x.TimedOut, x.Canceled
	st.Cwd, st.SessionExited = x.Cwd, x.SessionExited
	if x.OutOfMemory {
		st.EndCause = protocol.EndCauseOutOfMemory
	}
	switch {
	case x.TimedOut:
		st.Reason = protocol.ReasonTimeout
	case x.Canceled:
		st.Reason = protocol.ReasonCanceled
	default:
		st.Reason = protocol.ReasonExit
	}
}

func (rt *Runtime) execInput(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.ExecInputParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	items, err := inputItems(p.Input)
	if err != nil {
		return nil, err
	}
	u, err := parseUntil(p.Until)
	if err != nil {
		return nil, err
	}
	yield, err := yieldDuration(p.YieldMS, inputYield)
	if err != nil {
		return nil, err
	}
	if err := checkRender(p.Render); err != nil {
		return nil, err
	}
	c, err := rt.commandFor(p.ExecID, p.SessionID)
	if err != nil {
		return nil, err
	}
	if p.MaxOutputBytes != nil {
		if *p.MaxOutputBytes < 1 || *p.MaxOutputBytes > rt.opts.MaxOutputBytes {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "max_output_bytes must be between 1 and %d", rt.opts.MaxOutputBytes)
		}
		rt.mu.Lock()
		c.max = int(*p.MaxOutputBytes)
		rt.mu.Unlock()
	}
	select {
	case <-c.done:
		return nil, &protocol.Error{Code: protocol.CodeInvalidState, Message: "command " + c.id + " has ended; nothing was typed", Data: rt.status(c, event{reason: protocol.ReasonExit}, p.Render, false)}
	default:
	}
	if p.RequireWaiting && rt.inputWait(c) == nil {
		return nil, &protocol.Error{Code: protocol.CodeInvalidState, Message: "command " + c.id + " is not waiting for input; nothing was typed (drop require_waiting to type anyway)", Data: rt.status(c, event{}, p.Render, false)}
	}
	appCursor, paste, erase, eof := c.s.InputModes()
	b, err := terminput.Encode(nil, items, terminput.Modes{AppCursor: appCursor, BracketedPaste: paste, Erase: erase, EOF: eof})
	if err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "%v", err)
	}
	rt.mu.Lock()
	c.inputAt = time.Now()
	rt.mu.Unlock()
	if p.Secret {
		err = c.s.WriteSecret(b)
	} else {
		err = c.s.WriteInput(b)
	}
	if err != nil {
		return nil, err
	}
	rt.auditInput(c, call.Actor, items, len(b), p.Secret)
	ev := rt.await(ctx, c, u, yield)
	return &protocol.Reply{Data: rt.status(c, ev, p.Render, true)}, nil
}

// commandFor finds the command exec.input addresses: by exec_id, or the
// one running in a session.
func (rt *Runtime) commandFor(id, sessionRef string) (*command, error) {
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
func inputItems(raw json.RawMessage) ([]terminput.Item, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "input is required: a string, or a list such as [\"y\", {\"key\": \"Enter\"}]")
	}
	var list []protocol.InputItem
	if raw[0] == '"' {
		var one protocol.InputItem
		if err := json.Unmarshal(raw, &one); err != nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "input: %v", err)
		}
		list = []protocol.InputItem{one}
	} else if err := json.Unmarshal(raw, &list); err != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "input must be a string or a list of strings and {\"key\"}, {\"paste\"}, {\"eof\": true} objects: %v", err)
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

// auditInput writes one event per exec.input: who typed how much into
// which command, the keys by name, and the text (cut) unless secret.
func (rt *Runtime) auditInput(c *command, actor string, items []terminput.Item, n int, secret bool) {
	ev := rt.audit.Info().
		Str("event", "input").
		Str("session", c.s.ID()).
		Str("exec_id", c.id).
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
		ev = ev.Str("text", cut(c.s.MaskText(string(text)), auditInputCutoff))
	}
	ev.Msg("input")
}

func (rt *Runtime) execWait(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.ExecWaitParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	u, err := parseUntil(p.Until)
	if err != nil {
		return nil, err
	}
	if err := checkRender(p.Render); err != nil {
		return nil, err
	}
	timeout := waitTimeout
	if p.TimeoutMS != nil {
		if *p.TimeoutMS < 0 || *p.TimeoutMS > maxWaitTimeout.Milliseconds() {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "timeout_ms must be between 0 and %d", maxWaitTimeout.Milliseconds())
		}
		timeout = time.Duration(*p.TimeoutMS) * time.Millisecond
	}
	var cs []*command
	switch {
	case p.ExecID == "any" && len(p.ExecIDs) == 0:
		cs = rt.unreported()
		if len(cs) == 0 {
			return nil, protocol.Errorf(protocol.CodeInvalidState, "no command is running or has an exit not yet reported; nothing to wait for")
		}
	case p.ExecID != "" && len(p.ExecIDs) == 0:
		c, err := rt.lookupExec(p.ExecID)
		if err != nil {
			return nil, err
		}
		cs = []*command{c}
	case p.ExecID == "" && len(p.ExecIDs) > 0:
		for _, id := range p.ExecIDs {
			c, err := rt.lookupExec(id)
			if err != nil {
				return nil, err
			}
			cs = append(cs, c)
		}
	default:
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "give exec_id (an id, or \"any\") or exec_ids, not both")
	}
	if len(cs) == 1 {
		ev := rt.await(ctx, cs[0], u, max(timeout, time.Millisecond))
		return &protocol.Reply{Data: rt.status(cs[0], ev, p.Render, true)}, nil
	}
	c, ev := rt.awaitAny(ctx, cs, u, timeout)
	if c == nil {
		// Nothing happened: the status of the first, carrying its news.
		c = cs[0]
	}
	return &protocol.Reply{Data: rt.status(c, ev, p.Render, true)}, nil
}

// unreported returns the running commands and the finished ones whose
// exit no status has carried, oldest first.
func (rt *Runtime) unreported() []*command {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	var cs []*command
	for _, c := range rt.finished {
		if !c.reported && c.yielded {
			cs = append(cs, c)
		}
	}
	return append(cs, rt.runningLocked()...)
}

func (rt *Runtime) execList(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.ExecListParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	var only *session.Session
	if p.SessionID != "" {
		s, err := rt.sessions.Get(p.SessionID)
		if err != nil {
			return nil, err
		}
		only = s
	}
	rt.mu.Lock()
	cs := make([]*command, 0, len(rt.cmds))
	cs = append(cs, rt.finished...)
	cs = append(cs, rt.runningLocked()...)
	rt.mu.Unlock()
	out := protocol.ExecList{Commands: []protocol.ExecSummary{}}
	for _, c := range cs {
		if only == nil || c.s == only {
			out.Commands = append(out.Commands, rt.summary(c))
		}
	}
	return &protocol.Reply{Data: out}, nil
}
