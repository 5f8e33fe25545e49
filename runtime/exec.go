package runtime

import (
	"context"
	"errors"
	"strconv"
	"time"
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
// and how it ended, never its output. The Job's Ended (commandEnded) runs
// it: the line is written as the command ends, just after its answer.
func (rt *Runtime) auditCommand(c *exec.Job, x exec.Exit) {
	truncated := false
	if coll := c.Collector(); coll != nil {
		truncated = coll.Truncated()
	}
	rt.audit.Info().
		Str("event", "command").
		Str("method", c.Method()).
		Str("session", c.SessionID()).
		Str("actor", c.Actor()).
		Str("command", cut(maskText(c, c.Command()), 4096)).
		Int("exit_code", x.ExitCode).
		Int64("duration_ms", x.Duration.Milliseconds()).
		Bool("timed_out", x.TimedOut).
		Bool("canceled", x.Canceled).
		Bool("truncated", truncated).
		Msg("command finished")
}

// renderCut renders output b that leaves out the bytes of the command's
// output from offset on before b[cut] (cut -1: none were), and says
// where: head and tail are rendered apart, so At is where they meet in
// the rendered string.
func renderCut(mode string, b []byte, cut int, offset, bytes int64) (string, *protocol.Omitted) {
	if cut < 0 || mode == "" || mode == "raw" {
		text, _ := renderOutput(mode, b)
		if cut < 0 {
			return text, nil
		}
		return text, &protocol.Omitted{At: cut, Offset: offset, Bytes: bytes}
	}
	head, _ := renderOutput(mode, b[:cut])
	tail, _ := renderOutput(mode, b[cut:])
	return head + tail, &protocol.Omitted{At: len(head), Offset: offset, Bytes: bytes}
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

// ExecRun is the typed execRun.
func (rt *Runtime) ExecRun(ctx context.Context, p protocol.ExecParams) (protocol.ExecStatus, error) {
	return serve(rt, ctx, protocol.MethodExecRun, func() (protocol.ExecStatus, error) { return rt.execRun(ctx, p) })
}

func (rt *Runtime) execRun(ctx context.Context, p protocol.ExecParams) (protocol.ExecStatus, error) {
	max := exec.DefaultMaxOutput
	if p.MaxOutputBytes != nil {
		if *p.MaxOutputBytes < 1 || *p.MaxOutputBytes > rt.opts.MaxOutputBytes {
			return protocol.ExecStatus{}, protocol.Errorf(protocol.CodeInvalidParams, "max_output_bytes must be between 1 and %d", rt.opts.MaxOutputBytes)
		}
		max = int(*p.MaxOutputBytes)
	}
	if err := checkRender(p.Render); err != nil {
		return protocol.ExecStatus{}, err
	}
	s, err := rt.execSession(p.SessionID)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	r, err := execRequest(&p, s)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	u, err := parseUntil(p.Until)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	yield, err := yieldDuration(p.YieldMS, 0)
	if err != nil {
		return protocol.ExecStatus{}, err
	}
	coll := exec.NewCollector(max)
	r.ID, r.Method, r.Output, r.MaxOutput = session.NewID("x-", 8), protocol.MethodExecRun, coll, max
	c, err := rt.launch(ctx, s, r, func(c *exec.Job, x exec.Exit) {
		act := c.Watch().Activity()
		recordCommand(c.Method(), x, act.StdoutBytes, act.StderrBytes)
	})
	if err != nil {
		return protocol.ExecStatus{}, rt.startError(s, err)
	}
	if c.Awaiting() {
		// Nothing runs until a person decides: the status says so at
		// once (SPEC §16); exec.wait follows it.
		return rt.status(c, event{reason: protocol.ReasonApproval}, p.Render, true), nil
	}
	// The command runs to its end even if the caller goes away: a shell
	// cannot be left half-way through a command. Only a yield or an
	// until event returns before the end (SPEC §8).
	ev := rt.await(ctx, c, u, yield)
	if rt.shuttingDown() && !endedWhole(c) {
		return protocol.ExecStatus{}, endedByShutdown(c)
	}
	if ev.reason != protocol.ReasonExit {
		return rt.status(c, ev, p.Render, true), nil
	}
	<-c.Done()
	if rt.shuttingDown() && !endedWhole(c) {
		return protocol.ExecStatus{}, endedByShutdown(c)
	}
	x, _ := c.Exit()
	var res protocol.ExecStatus
	if c.Marks().Yielded {
		res = rt.status(c, ev, p.Render, true)
	} else {
		out := coll.Result()
		stdout, stdoutOmitted := renderCut(p.Render, out.Stdout, out.StdoutCut, int64(out.StdoutCut), out.StdoutBytes-int64(len(out.Stdout)))
		stderr, stderrOmitted := renderCut(p.Render, out.Stderr, out.StderrCut, int64(out.StderrCut), out.StderrBytes-int64(len(out.Stderr)))
		res = protocol.ExecStatus{
			Stdout:        stdout,
			Stderr:        stderr,
			Truncated:     out.Truncated,
			StdoutBytes:   out.StdoutBytes,
			StderrBytes:   out.StderrBytes,
			StdoutOmitted: stdoutOmitted,
			StderrOmitted: stderrOmitted,
			ExecID:        c.ID(),
			SessionID:     s.ID(),
		}
		fillExit(&res, x)
		res.Cwd = s.MaskText(res.Cwd) // a directory named after a secret
		approvalStatus(&res, c, x, true)
		noteSession(&res, s)
		noteStrays(&res, c, s)
		c.Reported()
	}
	if p.Check {
		switch {
		case x.Denied:
			return protocol.ExecStatus{}, &protocol.Error{Code: protocol.CodeCommandDenied, Message: "the command was not approved: " + res.Approval.DecisionReason + "; nothing was run", Data: res}
		case x.TimedOut:
			return protocol.ExecStatus{}, &protocol.Error{Code: protocol.CodeCommandTimeout, Message: "command timed out after " + r.Timeout.String(), Data: res}
		case x.ExitCode != 0:
			return protocol.ExecStatus{}, &protocol.Error{Code: protocol.CodeCommandFailed, Message: "command exited with status " + strconv.Itoa(x.ExitCode), Data: res}
		}
	}
	return res, nil
}

// startError turns a refused start into the error a client sees: a busy
// session carries its running command's status (SPEC §8).
func (rt *Runtime) startError(s *session.Session, err error) error {
	if errors.Is(err, session.ErrBusy) {
		return rt.busyError(s, err)
	}
	return err
}

// ExecStream is the typed execStream; the Follow sends its notifications.
func (rt *Runtime) ExecStream(ctx context.Context, p protocol.ExecParams) (protocol.ExecStreamStarted, protocol.Follow, error) {
	var follow protocol.Follow
	r, err := serve(rt, ctx, protocol.MethodExecStream, func() (r protocol.ExecStreamStarted, err error) {
		r, follow, err = rt.execStream(ctx, p)
		return r, err
	})
	return r, follow, err
}

func (rt *Runtime) execStream(ctx context.Context, p protocol.ExecParams) (protocol.ExecStreamStarted, protocol.Follow, error) {
	if p.Render != "" && p.Render != "raw" {
		return protocol.ExecStreamStarted{}, nil, protocol.Errorf(protocol.CodeInvalidParams, "exec.stream sends raw bytes; render the chunks with exec.read's \"render\": \"text\"")
	}
	if p.MaxOutputBytes != nil {
		return protocol.ExecStreamStarted{}, nil, protocol.Errorf(protocol.CodeInvalidParams, "max_output_bytes applies to exec.run; a stream keeps a window of recent output instead")
	}
	s, err := rt.execSession(p.SessionID)
	if err != nil {
		return protocol.ExecStreamStarted{}, nil, err
	}
	r, err := execRequest(&p, s)
	if err != nil {
		return protocol.ExecStreamStarted{}, nil, err
	}
	st := exec.NewStream(session.NewID("st-", 8), s.ID(), rt.jobs.Options().Window)
	r.ID, r.Method, r.Output, r.MaxOutput = st.ID, protocol.MethodExecStream, st, exec.DefaultMaxOutput
	job, err := rt.launch(ctx, s, r, func(c *exec.Job, x exec.Exit) {
		stdout, stderr := st.Totals()
		recordCommand(c.Method(), x, stdout, stderr)
	})
	if err != nil {
		return protocol.ExecStreamStarted{}, nil, rt.startError(s, err)
	}
	reader := st.NewReader(0, 0)
	return protocol.ExecStreamStarted{StreamID: st.ID, SessionID: s.ID(), ExecID: st.ID},
		rt.followFunc(job, st, reader), nil
}

// inputGrace is how long after the client's input ended a stream waits
// before it interrupts a command still waiting for input: input read
// before the end may still be being typed.
const inputGrace = 500 * time.Millisecond

// follow sends a stream's output as exec.output notifications, then its
// exec.exit, until the stream ends or ctx does (the client went away; the
// command goes on). When the command begins to wait for terminal input it
// sends exec.waiting, once per wait: output alone does not tell a client
// that its command expects an answer.
func (rt *Runtime) follow(ctx context.Context, j *exec.Job, st *exec.Stream, r *exec.Reader, emit protocol.Emitter) error {
	if err := followApproval(ctx, j, emit); err != nil {
		return err
	}
	var seq int64
	w := waitWatch{rt: rt, j: j}
	defer w.stop()
	// Once the client's input has ended (end of stdin for trl stdio), a
	// wait told can never be answered: the stream followed the command
	// for ever, and a request read after it was never answered. The
	// command is interrupted instead, as exec.cancel would.
	ended := protocol.CallerFrom(ctx).InputEnded
	waitTold := false         // since the command last ran on after a wait
	var toldInputAt time.Time // the command's last input when the wait was told
	for {
		// A read whose watch saw a wait still answers the output that
		// was ready: the wait is told after it, once the read ends.
		rctx, cancel := w.arm(ctx), context.CancelFunc(func() {})
		stopEnded := func() bool { return false }
		if waitTold && ended != nil {
			rctx, cancel = context.WithCancel(rctx)
			stopEnded = context.AfterFunc(ended, cancel)
		}
		chunks, exit, err := r.Next(rctx)
		stopEnded()
		cancel()
		if err != nil {
			if in := w.fired(); in != nil && ctx.Err() == nil {
				if err := emit(protocol.NotifyExecWaiting, protocol.WaitingNotification{StreamID: st.ID, Input: *in}); err != nil {
					return err
				}
				waitTold, toldInputAt = true, j.Marks().InputAt
				continue
			}
			if waitTold && ended != nil && ended.Err() != nil && ctx.Err() == nil {
				waitTold = false
				// An exec.input read just before the end may not have
				// typed yet: it is given a moment.
				select {
				case <-time.After(inputGrace):
				case <-ctx.Done():
					return context.Cause(ctx)
				}
				// Input typed since the wait was told answered it, even
				// if the program has not read it yet (the terminal still
				// shows the wait): a client that types and then closes
				// its input is not interrupted.
				if in, _ := rt.inputWait(j); in != nil && j.Marks().InputAt.Equal(toldInputAt) {
					rt.log.Info().Str("exec_id", j.ID()).Msg("the client's input ended while its command waited for input; interrupted")
					_, _ = j.Cancel(unix.SIGINT)
				}
				continue
			}
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
				StreamID:        st.ID,
				ExitCode:        exit.ExitCode,
				DurationMS:      exit.Duration.Milliseconds(),
				TimedOut:        exit.TimedOut,
				Canceled:        exit.Canceled,
				Cwd:             exit.Cwd,
				StdoutBytes:     out,
				StderrBytes:     errb,
				SessionExited:   exit.SessionExited,
				SessionEndCause: sessionEndCause(*exit),
				Denied:          exit.Denied,
				EndCause:        endCause(*exit),
			})
		}
	}
}

// waitWatch tells a stream's follow when its command begins to wait for
// terminal input. One goroutine (watchInput) watches at a time; when it
// sees a new wait it ends the follow's read, which tells it. A wait told
// is not told again until input was typed, the wait was seen to end, or
// another process waits: a full-screen program that redraws while it
// waits is told once. stop ends the watch.
type waitWatch struct {
	rt *Runtime
	j  *exec.Job

	ctx    context.Context // the read's while a watch runs
	cancel context.CancelFunc
	done   chan struct{}
	seen   told // what the watch saw, for fired
	last   told // the wait told last
}

// told is a wait told, and the time of the last input typed then.
type told struct {
	in      *protocol.InputWait
	inputAt time.Time
}

// arm starts a watch unless one runs, and returns the context for the
// next read.
func (w *waitWatch) arm(ctx context.Context) context.Context {
	if w.ctx != nil {
		return w.ctx
	}
	w.ctx, w.cancel = context.WithCancel(ctx)
	w.done = make(chan struct{})
	go func(ctx context.Context, cancel context.CancelFunc, done chan struct{}, last told) {
		defer close(done)
		if t := w.rt.watchInput(ctx, w.j, last); t.in != nil {
			w.seen = t
			cancel()
		}
	}(w.ctx, w.cancel, w.done, w.last)
	return w.ctx
}

// fired returns the wait the watch saw, after the read it ended (nil when
// the read ended otherwise); the watch is over then.
func (w *waitWatch) fired() *protocol.InputWait {
	if w.ctx == nil {
		return nil
	}
	w.stop()
	t := w.seen
	w.seen = told{}
	if t.in != nil {
		w.last = t
	}
	return t.in
}

// stop ends the watch that runs, if any, and waits for it.
func (w *waitWatch) stop() {
	if w.ctx == nil {
		return
	}
	w.cancel()
	<-w.done
	w.ctx, w.cancel, w.done = nil, nil, nil
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

// ExecRead is the typed execRead.
func (rt *Runtime) ExecRead(ctx context.Context, p protocol.ExecReadParams) (protocol.ExecReadResult, error) {
	return serve(rt, ctx, protocol.MethodExecRead, func() (protocol.ExecReadResult, error) { return rt.execRead(ctx, p) })
}

func (rt *Runtime) execRead(ctx context.Context, p protocol.ExecReadParams) (protocol.ExecReadResult, error) {
	var c *exec.Job
	if p.StreamID == "" && p.ExecID != "" {
		// An exec.run command's output, kept head and tail (SPEC §8).
		var err error
		if c, err = rt.lookupExec(p.ExecID); err != nil {
			return protocol.ExecReadResult{}, err
		}
		if st := c.Stream(); st != nil {
			p.StreamID = st.ID
		}
	}
	which, err := streamName(p.Stream)
	if err != nil {
		return protocol.ExecReadResult{}, err
	}
	if p.Offset < 0 {
		return protocol.ExecReadResult{}, protocol.Errorf(protocol.CodeInvalidParams, "offset must not be negative")
	}
	if p.Limit == 0 {
		p.Limit = 64 << 10
	}
	if p.Limit < 0 || p.Limit > 16<<20 {
		return protocol.ExecReadResult{}, protocol.Errorf(protocol.CodeInvalidParams, "limit must be between 1 and %d bytes", 16<<20)
	}
	if err := checkRender(p.Render); err != nil {
		return protocol.ExecReadResult{}, err
	}
	if coll := collectorOf(c); coll != nil {
		data, start, end := coll.Page(which, p.Offset, p.Limit)
		if p.Offset > end {
			return protocol.ExecReadResult{}, protocol.Errorf(protocol.CodeInvalidParams, "offset %d is past the end of %s (%d bytes so far)", p.Offset, which, end)
		}
		text, _ := renderOutput(p.Render, data)
		var lost int64
		if start > p.Offset {
			lost = start - p.Offset
		}
		_, finished := c.Exit()
		return protocol.ExecReadResult{
			ExecID:    c.ID(),
			Stream:    which.String(),
			Data:      text,
			Offset:    start,
			Length:    len(data),
			Complete:  finished && start+int64(len(data)) >= end,
			LostBytes: lost,
		}, nil
	}
	st, err := rt.stream(p.StreamID)
	if err != nil {
		return protocol.ExecReadResult{}, err
	}
	if out, errb := st.Totals(); (which == session.Stdout && p.Offset > out) || (which == session.Stderr && p.Offset > errb) {
		total := out
		if which == session.Stderr {
			total = errb
		}
		return protocol.ExecReadResult{}, protocol.Errorf(protocol.CodeInvalidParams, "offset %d is past the end of %s (%d bytes so far)", p.Offset, which, total)
	}
	data, start, lost, complete := st.ReadAt(which, p.Offset, p.Limit)
	text, _ := renderOutput(p.Render, data)
	return protocol.ExecReadResult{
		StreamID:  st.ID,
		Stream:    which.String(),
		Data:      text,
		Offset:    start,
		Length:    len(data),
		Complete:  complete,
		LostBytes: lost,
	}, nil
}

// stream finds an exec.stream command's window by its stream_id.
func (rt *Runtime) stream(id string) (*exec.Stream, error) {
	if id == "" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "stream_id is required (exec.stream returned it)")
	}
	return rt.jobs.Stream(id)
}

// collectorOf is c's head-and-tail output, nil when c is nil or streamed.
func collectorOf(c *exec.Job) *exec.Collector {
	if c == nil {
		return nil
	}
	return c.Collector()
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

// ExecAttach is the typed execAttach; the Follow sends its notifications.
func (rt *Runtime) ExecAttach(ctx context.Context, p protocol.ExecAttachParams) (protocol.ExecAttachResult, protocol.Follow, error) {
	var follow protocol.Follow
	r, err := serve(rt, ctx, protocol.MethodExecAttach, func() (r protocol.ExecAttachResult, err error) {
		r, follow, err = rt.execAttach(ctx, p)
		return r, err
	})
	return r, follow, err
}

func (rt *Runtime) execAttach(ctx context.Context, p protocol.ExecAttachParams) (protocol.ExecAttachResult, protocol.Follow, error) {
	if p.StreamID == "" && p.ExecID != "" {
		c, err := rt.lookupExec(p.ExecID)
		if err != nil {
			return protocol.ExecAttachResult{}, nil, err
		}
		st := c.Stream()
		if st == nil {
			return protocol.ExecAttachResult{}, nil, protocol.Errorf(protocol.CodeInvalidParams, "exec.attach follows exec.stream commands; %s was started by exec.run: use exec.wait for its news and exec.read for its output", c.ID())
		}
		p.StreamID = st.ID
	}
	st, err := rt.stream(p.StreamID)
	if err != nil {
		return protocol.ExecAttachResult{}, nil, err
	}
	if p.Offset < 0 || p.StderrOffset < 0 {
		return protocol.ExecAttachResult{}, nil, protocol.Errorf(protocol.CodeInvalidParams, "offsets must not be negative")
	}
	if out, errb := st.Totals(); p.Offset > out || p.StderrOffset > errb {
		return protocol.ExecAttachResult{}, nil, protocol.Errorf(protocol.CodeInvalidParams, "offsets %d/%d are past the end of the output (%d/%d bytes so far)", p.Offset, p.StderrOffset, out, errb)
	}
	job, err := rt.jobs.Get(st.ID)
	if err != nil {
		return protocol.ExecAttachResult{}, nil, err
	}
	reader := st.NewReader(p.Offset, p.StderrOffset)
	_, finished := st.Done()
	return protocol.ExecAttachResult{StreamID: st.ID, SessionID: st.SessionID, Offset: p.Offset, StderrOffset: p.StderrOffset, Running: !finished},
		rt.followFunc(job, st, reader), nil
}

// ExecCancel is the typed execCancel.
func (rt *Runtime) ExecCancel(ctx context.Context, p protocol.ExecCancelParams) (protocol.ExecCancelResult, error) {
	return serve(rt, ctx, protocol.MethodExecCancel, func() (protocol.ExecCancelResult, error) { return rt.execCancel(ctx, p) })
}

func (rt *Runtime) execCancel(ctx context.Context, p protocol.ExecCancelParams) (protocol.ExecCancelResult, error) {
	sig, err := p.Signal.Number()
	if err != nil {
		return protocol.ExecCancelResult{}, err
	}
	var c *exec.Job
	if p.ExecID != "" {
		if c, err = rt.lookupExec(p.ExecID); err != nil {
			return protocol.ExecCancelResult{}, err
		}
	} else {
		ref := p.SessionID
		if ref == "" {
			ref = session.DefaultName
		}
		s, err := rt.sessions.Get(ref)
		if err != nil {
			return protocol.ExecCancelResult{}, err
		}
		if c = rt.current(s); c == nil {
			return protocol.ExecCancelResult{}, nil
		}
	}
	sent, err := c.Cancel(sig)
	if err == session.ErrNoForeground {
		return protocol.ExecCancelResult{}, nil
	}
	if err != nil {
		return protocol.ExecCancelResult{}, err
	}
	return protocol.ExecCancelResult{Canceled: true, Signal: unix.SignalName(sent)}, nil
}

// cancelGrace is how long a command started just after another was
// cancelled waits for that one to end, rather than being told at once
// that the session is busy (launch).
const cancelGrace = time.Second

// endedWhole reports whether c has ended by itself, its session alive: a
// command that ended on its own while the shutdown began (before the
// sessions were ended) gets its result.
func endedWhole(c *exec.Job) bool {
	select {
	case <-c.Done():
	default:
		return false
	}
	x, _ := c.Exit()
	return !x.SessionExited
}

// endedByShutdown is the answer to an exec.run whose command the daemon's
// shutdown ended: SHUTTING_DOWN, saying that the command had started, so
// that a client does not take a retry for safe (it may have run in part).
func endedByShutdown(c *exec.Job) error {
	return protocol.Errorf(protocol.CodeShuttingDown, "the daemon is shutting down; command %s was ended before its answer and may have run in part; check its effects before you run it again against a running daemon", c.ID())
}

// followFunc is the Follow of a stream: its output and exit, delivered to
// the client by rt.follow. Its reader and the session's pump run side by
// side, so while it runs the process has every P (internal/procs).
func (rt *Runtime) followFunc(job *exec.Job, st *exec.Stream, reader *exec.Reader) protocol.Follow {
	return func(ctx context.Context, emit protocol.Emitter) error {
		rt.opts.Procs.EnterStream()
		defer rt.opts.Procs.LeaveStream()
		return rt.follow(ctx, job, st, reader, emit)
	}
}
