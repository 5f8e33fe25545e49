package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
	"golang.org/x/sys/unix"
)

// execSession resolves exec.*'s session_id: a session's id or name, or,
// when omitted, the session named "default", created on first use.
func (rt *Runtime) execSession(ref string) (*session.Session, error) {
	if ref == "" {
		return rt.sessions.Default()
	}
	return rt.sessions.Get(ref)
}

// checkEmptyRef refuses a session_id given as "": absent means the
// default session, an empty string is a mistake (a variable that was not
// set) and must not quietly run in default.
func checkEmptyRef(ref string, raw json.RawMessage) error {
	if ref != "" || !bytes.Contains(raw, []byte(`"session_id"`)) {
		return nil
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) == nil && string(m["session_id"]) == `""` {
		return protocol.Errorf(protocol.CodeInvalidParams, "session_id is empty: give a session's id or name, or leave session_id out to use the session named \"default\"")
	}
	return nil
}

// execRequest turns exec params into a request for s.
func execRequest(p *protocol.ExecParams, s *session.Session) (exec.Request, error) {
	if p.Command == nil {
		return exec.Request{}, protocol.Errorf(protocol.CodeInvalidParams, "command is required, e.g. {\"command\": \"ls -la\"}")
	}
	r := exec.Request{Command: *p.Command, Env: p.Env, Stdin: p.Stdin, Timeout: s.DefaultTimeout()}
	switch {
	case p.TimeoutS == nil || *p.TimeoutS == 0:
		// The session's default.
	case *p.TimeoutS == -1:
		r.Timeout = 0 // no timeout for this call, whatever the session's default
	case *p.TimeoutS < 0:
		return exec.Request{}, protocol.Errorf(protocol.CodeInvalidParams, "timeout_s must be positive, 0 (the session's default) or -1 (no timeout for this call)")
	default:
		d, err := seconds("timeout_s", *p.TimeoutS)
		if err != nil {
			return exec.Request{}, err
		}
		r.Timeout = d
	}
	return r, nil // exec.Start validates what the shell cannot carry
}

// auditCommand writes the audit event of one command: who ran what where
// and how it ended, never its output.
func (rt *Runtime) auditCommand(s *session.Session, actor, method, command string, x exec.Exit, truncated bool) {
	rt.audit.Info().
		Str("event", "command").
		Str("method", method).
		Str("session", s.ID()).
		Str("actor", actor).
		Str("command", cut(s.MaskText(command), 4096)).
		Int("exit_code", x.ExitCode).
		Int64("duration_ms", x.Duration.Milliseconds()).
		Bool("timed_out", x.TimedOut).
		Bool("canceled", x.Canceled).
		Bool("truncated", truncated).
		Msg("command finished")
}

// cut shortens s to at most n bytes on a character boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func (rt *Runtime) execRun(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.ExecParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	max := exec.DefaultMaxOutput
	if p.MaxOutputBytes != nil {
		if *p.MaxOutputBytes < 1 || *p.MaxOutputBytes > rt.opts.MaxOutputBytes {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "max_output_bytes must be between 1 and %d", rt.opts.MaxOutputBytes)
		}
		max = int(*p.MaxOutputBytes)
	}
	if err := checkRender(p.Render); err != nil {
		return nil, err
	}
	if err := checkEmptyRef(p.SessionID, call.Params); err != nil {
		return nil, err
	}
	s, err := rt.execSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	r, err := execRequest(&p, s)
	if err != nil {
		return nil, err
	}
	u, err := parseUntil(p.Until)
	if err != nil {
		return nil, err
	}
	yield, err := yieldDuration(p.YieldMS, 0)
	if err != nil {
		return nil, err
	}
	coll := exec.NewCollector(max)
	c, err := rt.launch(s, r, &command{id: session.NewID("x-", 8), method: call.Method, coll: coll, max: max}, func(c *command, x exec.Exit) {
		rt.auditCommand(s, call.Actor, call.Method, r.Command, x, coll.Truncated())
		act := c.watch.Activity()
		recordCommand(call.Method, x, act.StdoutBytes, act.StderrBytes)
	})
	if err != nil {
		return nil, rt.startError(s, err)
	}
	// The command runs to its end even if the caller goes away: a shell
	// cannot be left half-way through a command. Only a yield or an
	// until event returns before the end (SPEC §8).
	ev := rt.await(ctx, c, u, yield)
	if rt.shuttingDown() {
		return nil, session.ErrShuttingDown
	}
	if ev.reason != protocol.ReasonExit {
		return &protocol.Reply{Data: rt.status(c, ev, p.Render, true)}, nil
	}
	<-c.done
	if rt.shuttingDown() {
		return nil, session.ErrShuttingDown
	}
	rt.mu.Lock()
	x, yielded := *c.exit, c.yielded
	rt.mu.Unlock()
	var res protocol.ExecStatus
	if yielded {
		res = rt.status(c, ev, p.Render, true)
	} else {
		out := coll.Result()
		stdout, _ := renderOutput(p.Render, out.Stdout)
		stderr, _ := renderOutput(p.Render, out.Stderr)
		res = protocol.ExecStatus{
			Stdout:      stdout,
			Stderr:      stderr,
			Truncated:   out.Truncated,
			StdoutBytes: out.StdoutBytes,
			StderrBytes: out.StderrBytes,
			ExecID:      c.id,
			SessionID:   s.ID(),
		}
		fillExit(&res, x)
		rt.mu.Lock()
		c.reported = true
		rt.mu.Unlock()
	}
	if p.Check {
		switch {
		case x.TimedOut:
			return nil, &protocol.Error{Code: protocol.CodeCommandTimeout, Message: "command timed out after " + r.Timeout.String(), Data: res}
		case x.ExitCode != 0:
			return nil, &protocol.Error{Code: protocol.CodeCommandFailed, Message: "command exited with status " + strconv.Itoa(x.ExitCode), Data: res}
		}
	}
	return &protocol.Reply{Data: res}, nil
}

// startError turns a refused start into the error a client sees: a busy
// session carries its running command's status (SPEC §8).
func (rt *Runtime) startError(s *session.Session, err error) error {
	if errors.Is(err, session.ErrBusy) {
		return rt.busyError(s, err)
	}
	return err
}

func (rt *Runtime) execStream(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.ExecParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	if p.Render != "" && p.Render != "raw" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "exec.stream sends raw bytes; render the chunks with exec.read's \"render\": \"text\"")
	}
	if p.MaxOutputBytes != nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "max_output_bytes applies to exec.run; a stream keeps a window of recent output instead")
	}
	if err := checkEmptyRef(p.SessionID, call.Params); err != nil {
		return nil, err
	}
	s, err := rt.execSession(p.SessionID)
	if err != nil {
		return nil, err
	}
	r, err := execRequest(&p, s)
	if err != nil {
		return nil, err
	}
	st := rt.streams.New(s.ID())
	_, err = rt.launch(s, r, &command{id: st.ID, method: call.Method, st: st, max: exec.DefaultMaxOutput}, func(_ *command, x exec.Exit) {
		rt.streams.Finish(st, x)
		rt.auditCommand(s, call.Actor, call.Method, r.Command, x, false)
		recordStream(call.Method, st, x)
	})
	if err != nil {
		rt.streams.Drop(st)
		return nil, rt.startError(s, err)
	}
	reader := st.NewReader(0, 0)
	return &protocol.Reply{
		Data:   protocol.ExecStreamStarted{StreamID: st.ID, SessionID: s.ID(), ExecID: st.ID},
		Follow: func(ctx context.Context, emit protocol.Emitter) error { return follow(ctx, st, reader, emit) },
	}, nil
}

// follow sends a stream's output as exec.output notifications, then its
// exec.exit, until the stream ends or ctx does (the client went away; the
// command goes on).
func follow(ctx context.Context, st *exec.Stream, r *exec.Reader, emit protocol.Emitter) error {
	var seq int64
	for {
		chunks, exit, err := r.Next(ctx)
		if err != nil {
			return err
		}
		for _, c := range chunks {
			n := protocol.OutputNotification{
				StreamID:  st.ID,
				Seq:       seq,
				Stream:    c.Stream.String(),
				Data:      bytesView(c.Data),
				Offset:    c.Offset,
				LostBytes: c.Lost,
			}
			if err := emit(protocol.NotifyExecOutput, n); err != nil {
				return err
			}
			seq++
		}
		if exit != nil {
			out, errb := st.Totals()
			return emit(protocol.NotifyExecExit, protocol.ExitNotification{
				StreamID:      st.ID,
				ExitCode:      exit.ExitCode,
				DurationMS:    exit.Duration.Milliseconds(),
				TimedOut:      exit.TimedOut,
				Canceled:      exit.Canceled,
				Cwd:           exit.Cwd,
				StdoutBytes:   out,
				StderrBytes:   errb,
				SessionExited: exit.SessionExited,
				EndCause:      endCause(*exit),
			})
		}
	}
}

// bytesView returns b as a string without copying it: a stream's chunk
// bytes are never modified once stored (see exec.Chunk), and this is the
// hottest path of a stream, where a copy costs as much as the encoding.
func bytesView(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

type readParams struct {
	StreamID string `json:"stream_id"`
	ExecID   string `json:"exec_id"`
	Stream   string `json:"stream"`
	Offset   int64  `json:"offset"`
	Limit    int    `json:"limit"`
	Render   string `json:"render"`
}

func (rt *Runtime) execRead(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p readParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	var c *command
	if p.StreamID == "" && p.ExecID != "" {
		// An exec.run command's output, kept head and tail (SPEC §8).
		var err error
		if c, err = rt.lookupExec(p.ExecID); err != nil {
			return nil, err
		}
		if c.st != nil {
			p.StreamID = c.st.ID
		}
	}
	which, err := streamName(p.Stream)
	if err != nil {
		return nil, err
	}
	if p.Offset < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "offset must not be negative")
	}
	if p.Limit == 0 {
		p.Limit = 64 << 10
	}
	if p.Limit < 0 || p.Limit > 16<<20 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "limit must be between 1 and %d bytes", 16<<20)
	}
	if err := checkRender(p.Render); err != nil {
		return nil, err
	}
	if c != nil && c.coll != nil {
		data, start, end := c.coll.Page(which, p.Offset, p.Limit)
		if p.Offset > end {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "offset %d is past the end of %s (%d bytes so far)", p.Offset, which, end)
		}
		text, _ := renderOutput(p.Render, data)
		var lost int64
		if start > p.Offset {
			lost = start - p.Offset
		}
		finished := false
		select {
		case <-c.done:
			finished = true
		default:
		}
		return &protocol.Reply{Data: protocol.ExecReadResult{
			ExecID:    c.id,
			Stream:    which.String(),
			Data:      text,
			Offset:    start,
			Length:    len(data),
			Complete:  finished && start+int64(len(data)) >= end,
			LostBytes: lost,
		}}, nil
	}
	st, err := rt.stream(p.StreamID)
	if err != nil {
		return nil, err
	}
	if out, errb := st.Totals(); (which == session.Stdout && p.Offset > out) || (which == session.Stderr && p.Offset > errb) {
		total := out
		if which == session.Stderr {
			total = errb
		}
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "offset %d is past the end of %s (%d bytes so far)", p.Offset, which, total)
	}
	data, start, lost, complete := st.ReadAt(which, p.Offset, p.Limit)
	text, _ := renderOutput(p.Render, data)
	return &protocol.Reply{Data: protocol.ExecReadResult{
		StreamID:  st.ID,
		Stream:    which.String(),
		Data:      text,
		Offset:    start,
		Length:    len(data),
		Complete:  complete,
		LostBytes: lost,
	}}, nil
}

func (rt *Runtime) stream(id string) (*exec.Stream, error) {
	if id == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "stream_id is required (exec.stream returned it)")
	}
	return rt.streams.Get(id)
}

func streamName(s string) (session.Stream, error) {
	switch s {
	case "", "stdout":
		return session.Stdout, nil
	case "stderr":
		return session.Stderr, nil
	}
	return 0, protocol.Errorf(protocol.CodeInvalidParams, "stream must be \"stdout\" or \"stderr\", got %q", clip(s, 32))
}

type attachParams struct {
	StreamID     string `json:"stream_id"`
	ExecID       string `json:"exec_id"`
	Offset       int64  `json:"offset"`
	StderrOffset int64  `json:"stderr_offset"`
}

func (rt *Runtime) execAttach(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p attachParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	if p.StreamID == "" && p.ExecID != "" {
		c, err := rt.lookupExec(p.ExecID)
		if err != nil {
			return nil, err
		}
		if c.st == nil {
			return nil, protocol.Errorf(protocol.CodeInvalidParams, "exec.attach follows exec.stream commands; %s was started by exec.run: use exec.wait for its news and exec.read for its output", c.id)
		}
		p.StreamID = c.st.ID
	}
	st, err := rt.stream(p.StreamID)
	if err != nil {
		return nil, err
	}
	if p.Offset < 0 || p.StderrOffset < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "offsets must not be negative")
	}
	if out, errb := st.Totals(); p.Offset > out || p.StderrOffset > errb {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "offsets %d/%d are past the end of the output (%d/%d bytes so far)", p.Offset, p.StderrOffset, out, errb)
	}
	reader := st.NewReader(p.Offset, p.StderrOffset)
	_, finished := st.Done()
	return &protocol.Reply{
		Data:   protocol.ExecAttachResult{StreamID: st.ID, SessionID: st.SessionID, Offset: p.Offset, StderrOffset: p.StderrOffset, Running: !finished},
		Follow: func(ctx context.Context, emit protocol.Emitter) error { return follow(ctx, st, reader, emit) },
	}, nil
}

func (rt *Runtime) execCancel(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.ExecCancelParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	sig, err := parseSignal(p.Signal)
	if err != nil {
		return nil, err
	}
	var c *command
	if p.ExecID != "" {
		if c, err = rt.lookupExec(p.ExecID); err != nil {
			return nil, err
		}
		select {
		case <-c.done:
			return &protocol.Reply{Data: protocol.ExecCancelResult{}}, nil
		default:
		}
	} else {
		ref := p.SessionID
		if ref == "" {
			ref = session.DefaultName
		}
		s, err := rt.sessions.Get(ref)
		if err != nil {
			return nil, err
		}
		if c = rt.current(s); c == nil {
			return &protocol.Reply{Data: protocol.ExecCancelResult{}}, nil
		}
	}
	sent, err := c.e.Cancel(sig)
	if err == session.ErrNoForeground {
		return &protocol.Reply{Data: protocol.ExecCancelResult{}}, nil
	}
	if err != nil {
		return nil, err
	}
	return &protocol.Reply{Data: protocol.ExecCancelResult{Canceled: true, Signal: unix.SignalName(sent)}}, nil
}

// parseSignal reads a signal given as a name ("SIGINT", "INT", case
// ignored) or a number; absent means SIGINT.
func parseSignal(raw []byte) (unix.Signal, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return unix.SIGINT, nil
	}
	s := string(raw)
	if s[0] == '"' {
		name, err := strconv.Unquote(s)
		if err == nil {
			name = strings.ToUpper(strings.TrimSpace(name))
			if !strings.HasPrefix(name, "SIG") {
				name = "SIG" + name
			}
			if sig := unix.SignalNum(name); sig != 0 {
				return sig, nil
			}
		}
	} else if n, err := strconv.Atoi(s); err == nil && n >= 1 && n <= 64 {
		return unix.Signal(n), nil
	}
	return 0, protocol.Errorf(protocol.CodeInvalidParams, "signal %s is not a signal name (SIGINT, TERM, KILL, HUP, ...) or a number from 1 to 64", clip(s, 32))
}
