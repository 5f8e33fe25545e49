package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trl-project/trl/internal/clip"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/render"
)

// Status is the structured content of run, send_input and wait: the same
// bounded view of the output the text shows, with the command's state.
type Status struct {
	ExecID        string `json:"exec_id"`
	SessionID     string `json:"session_id"`
	State         string `json:"state"`
	Reason        string `json:"reason"`
	ExitCode      *int   `json:"exit_code"`
	DurationMS    int64  `json:"duration_ms"`
	TimedOut      bool   `json:"timed_out"`
	Canceled      bool   `json:"canceled"`
	SessionExited bool   `json:"session_exited"`
	// SessionEndCause says why the session ended with the command.
	SessionEndCause string              `json:"session_end_cause,omitempty"`
	Cwd             string              `json:"cwd"`
	Stdout          Output              `json:"stdout"`
	Stderr          Output              `json:"stderr"`
	Input           *protocol.InputWait `json:"input,omitempty"`
	// Approval is set when the command awaits, or had, a person's
	// approval (the command policy).
	Approval  *protocol.Approval `json:"approval,omitempty"`
	AltScreen bool               `json:"alt_screen"`
	Screen    []string           `json:"screen,omitempty"`
	// SessionCreated is set when run created the session it named.
	SessionCreated bool `json:"session_created,omitempty"`

	// renewed: run found the session's shell exited and started a new
	// one. renewable: the session was named (or default), so the next
	// run starts it anew if this command ended its shell.
	renewed, renewable bool
}

// Output is one stream's output since the previous status, as the model
// reads it: rendered as text, its head and tail within a budget.
type Output struct {
	Text string `json:"text"`
	// Offset is where this output starts in the command's whole output
	// (bytes, for read_output); Bytes is how much of it this status
	// covers, shown and left out.
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
	// Omitted is what was left out between the head and the tail.
	Omitted *Omitted `json:"omitted,omitempty"`
}

// Omitted says exactly what a cut left out and which of it can still be
// read.
type Omitted struct {
	// Bytes left out, from Offset in the command's output; Lines is the
	// count of newlines among them, left out when some were never seen
	// (it said -1, which read as a count).
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
	Lines  *int64 `json:"lines,omitempty"`
	// Kept are the parts still kept, which read_output reads; the rest
	// is gone (the command's output keeps its head and its tail).
	Kept []Span `json:"kept"`
}

// Span is a range of a command's output.
type Span struct {
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// probeLimit bounds one read that finds which omitted bytes are kept.
const probeLimit = 1 << 20

// kept finds the parts of [from, to) of a command's output that are still
// kept: exec.read answers from the first kept byte at or after the
// offset asked, contiguous.
func (s *server) kept(ctx context.Context, id, stream string, from, to int64) []Span {
	var spans []Span
	for pos, i := from, 0; pos < to && i < 8; i++ {
		r, err := s.api.ExecRead(ctx, protocol.ExecReadParams{ExecID: id, Stream: stream, Offset: pos, Limit: int(min(to-pos, probeLimit))})
		if err != nil || r.Length == 0 || r.Offset >= to {
			break
		}
		end := min(r.Offset+int64(r.Length), to)
		if n := len(spans); n > 0 && spans[n-1].Offset+spans[n-1].Bytes == r.Offset {
			spans[n-1].Bytes += end - r.Offset
		} else {
			spans = append(spans, Span{Offset: r.Offset, Bytes: end - r.Offset})
		}
		pos = end
	}
	return spans
}

// output builds one stream's view of st: the status's own bytes when it
// carries them whole, else pages read from the command's kept output
// (the status itself was cut with no mark of where).
func (s *server) output(ctx context.Context, st protocol.ExecStatus, stream string) Output {
	data, start, total, budget := st.Stdout, st.StdoutOffset, st.StdoutBytes, textCap
	if stream == "stderr" {
		data, start, total, budget = st.Stderr, st.StderrOffset, st.StderrBytes, stderrCap
	}
	c := clip.Clip{Max: budget}
	whole := !st.Truncated || start+int64(len(data)) >= total
	if whole {
		c.Write(data)
	} else {
		next := start
		page := func(from int64, limit int) {
			r, err := s.api.ExecRead(ctx, protocol.ExecReadParams{ExecID: st.ExecID, Stream: stream, Offset: from, Limit: limit})
			if err != nil {
				return
			}
			c.Skip(r.Offset - next)
			c.Write(r.Data)
			next = r.Offset + int64(r.Length)
		}
		page(start, budget/2)
		if from := max(next, total-int64(budget-budget/2)); from < total {
			c.Skip(from - next)
			next = from
			page(from, budget-budget/2)
		}
		c.Skip(total - next)
	}
	k := c.Cut()
	// Bytes of the command's output, as stdout_bytes counts them: the
	// clipper counted the text, where an invalid byte had become U+FFFD
	// (a character cut by head -c made 2,000,002 of 2,000,000).
	o := Output{Offset: start, Bytes: max(total-start, 0)}
	if k.Dropped == 0 {
		o.Text = render.Text([]byte(k.Head))
		return o
	}
	om := &Omitted{Offset: start + k.From, Bytes: k.Dropped}
	if k.DroppedLines >= 0 {
		om.Lines = &k.DroppedLines
	}
	om.Kept = s.kept(ctx, st.ExecID, stream, om.Offset, om.Offset+om.Bytes)
	o.Omitted = om
	head := render.Text([]byte(k.Head))
	if head != "" && !strings.HasSuffix(head, "\n") {
		head += "\n"
	}
	o.Text = head + omittedLine(stream, om) + render.Text([]byte(k.Tail))
	return o
}

// omittedLine is the line between a head and a tail: what was left out,
// and which of it read_output can still read.
func omittedLine(stream string, om *Omitted) string {
	what := fmt.Sprintf("%d bytes", om.Bytes)
	if om.Lines != nil {
		what += fmt.Sprintf(" (%d lines)", *om.Lines)
	}
	tool := "read_output"
	if stream == "stderr" {
		tool = "read_output (stream stderr)"
	}
	var kept int64
	for _, sp := range om.Kept {
		kept += sp.Bytes
	}
	var read string
	switch {
	case kept == 0:
		read = "they are no longer kept and cannot be read"
	case kept == om.Bytes:
		read = fmt.Sprintf("%s with offset %d reads them", tool, om.Offset)
	default:
		var parts []string
		for _, sp := range om.Kept {
			parts = append(parts, fmt.Sprintf("%d–%d", sp.Offset, sp.Offset+sp.Bytes))
		}
		read = fmt.Sprintf("only bytes %s are still kept (%s with offset %d); the other %d bytes are lost",
			strings.Join(parts, " and "), tool, om.Kept[0].Offset, om.Bytes-kept)
	}
	return fmt.Sprintf("[… %s left out at offset %d; %s …]\n", what, om.Offset, read)
}

// status is the structured view of st.
func (s *server) status(ctx context.Context, st protocol.ExecStatus) Status {
	v := Status{ExecID: st.ExecID, SessionID: st.SessionID, State: st.State, Reason: st.Reason, ExitCode: st.ExitCode,
		DurationMS: st.DurationMS, TimedOut: st.TimedOut, Canceled: st.Canceled, SessionExited: st.SessionExited,
		SessionEndCause: st.SessionEndCause, Cwd: st.Cwd, Input: st.Input, Approval: st.Approval, AltScreen: st.AltScreen}
	if st.AltScreen && st.Screen != nil {
		v.Screen = st.Screen.Lines // a full-screen program: the screen is what it shows
		return v
	}
	v.Stdout = s.output(ctx, st, "stdout")
	v.Stderr = s.output(ctx, st, "stderr")
	return v
}

// text is what a model reads: stdout, stderr apart, the screen of a
// full-screen program, then one status line.
func (v Status) text() string {
	var b strings.Builder
	if v.Screen != nil {
		b.WriteString(strings.Join(v.Screen, "\n"))
	} else {
		b.WriteString(v.Stdout.Text)
		if v.Stderr.Text != "" {
			if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
				b.WriteString("\n")
			}
			b.WriteString("[stderr]\n")
			b.WriteString(v.Stderr.Text)
		}
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	if v.SessionCreated {
		b.WriteString("[session created on first use]\n")
	}
	if v.renewed {
		b.WriteString("[the session's shell had exited: this ran in a new shell; cwd and variables were lost]\n")
	}
	b.WriteString(v.statusLine())
	return b.String()
}

func (v Status) statusLine() string {
	secs := float64(v.DurationMS) / 1000
	code := -1
	if v.ExitCode != nil {
		code = *v.ExitCode
	}
	end := ""
	shellExited := v.SessionEndCause == "" || strings.HasPrefix(v.SessionEndCause, "shell exited")
	switch {
	case v.SessionExited && !shellExited:
		// Ended from outside: destroyed, the daemon shut down, a
		// timeout's escalation, a shell that stopped answering.
		end = " · the session ended (" + v.SessionEndCause + ") and is gone"
	case v.SessionExited && v.renewable:
		end = " · the shell exited; the session is gone: the next run in it starts a new shell (cwd and variables are lost)"
	case v.SessionExited:
		end = " · the shell exited; the session is gone"
	}
	switch {
	case v.State == protocol.StateAwaitingApproval && v.Approval != nil:
		return fmt.Sprintf("awaiting approval: %s (%s) — nothing runs until a person approves %s; call wait to follow it, or cancel", v.Approval.Reason, v.Approval.Rule, v.ExecID)
	case v.State == protocol.StateExited && v.Reason == protocol.ReasonDenied && v.Approval != nil:
		why := v.Approval.DecisionReason
		if why == "" {
			why = "no reason given"
		}
		return fmt.Sprintf("not approved: %s — the command did not run", why)
	case v.State == protocol.StateExited && v.TimedOut:
		return fmt.Sprintf("timed out · exit %d · %.1f s · %s%s", code, secs, v.Cwd, end)
	case v.State == protocol.StateExited && v.Canceled:
		return fmt.Sprintf("interrupted · exit %d · %.1f s · %s%s", code, secs, v.Cwd, end)
	case v.State == protocol.StateExited && v.SessionExited:
		return fmt.Sprintf("exit %d · %.1f s%s", code, secs, end)
	case v.State == protocol.StateExited:
		return fmt.Sprintf("exit %d · %.1f s · %s", code, secs, v.Cwd)
	case v.State == protocol.StateWaitingInput && v.Input != nil:
		return fmt.Sprintf("still running as %s: waiting for input (%s): %q — answer with send_input", v.ExecID, v.Input.Kind, v.Input.Prompt)
	default:
		return fmt.Sprintf("still running as %s after %.1f s (%s) — call wait to keep waiting, or cancel", v.ExecID, secs, v.Reason)
	}
}

// toolNames translates the wire's words in an error's message into the
// tools a model has: the one place where MCP's vocabulary replaces the
// daemon's.
var toolNames = strings.NewReplacer(
	"wait with "+protocol.MethodExecWait, "wait for it with wait",
	protocol.MethodExecRun, "run",
	protocol.MethodExecStream, "run",
	protocol.MethodExecInput, "send_input",
	protocol.MethodExecWait, "wait",
	protocol.MethodExecCancel, "cancel",
	protocol.MethodExecRead, "read_output",
	protocol.MethodExecList, "session_info",
	protocol.MethodSessionList, "session_list",
	protocol.MethodSessionCreate, "session_create",
	protocol.MethodSessionDestroy, "session_destroy",
	protocol.MethodSessionInfo, "session_info",
	protocol.MethodSessionScreen, "screen",
	protocol.MethodSessionOutput, "read_background",
	protocol.MethodSessionResize, "resize",
	protocol.MethodFSRead, "read_file",
	protocol.MethodFSWrite, "write_file",
	protocol.MethodFSEdit, "edit_file",
	protocol.MethodFSList, "list_dir",
	"old text", "old_string",
	"old must not be empty", "old_string must not be empty",
	"session_id", "session",
)

// toolError is a result a model reads: what went wrong, in the words of
// its tools, and what to do.
func toolError(err error) *mcp.CallToolResult {
	e := protocol.AsError(err)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(e.Code) + ": " + toolNames.Replace(e.Message)}}}
}

// result is a tool's answer: text for the model, v as structured content.
func result(text string, v any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: v}
}

// codeOf is err's wire code, "" for no error.
func codeOf(err error) protocol.Code {
	if err == nil {
		return ""
	}
	return protocol.AsError(err).Code
}
