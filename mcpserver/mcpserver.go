// Package mcpserver is trl as an MCP server (SPEC §10), built on the
// official SDK (github.com/modelcontextprotocol/go-sdk). Its tools —
// run, send_input, wait, read_output, screen, cancel, session_create,
// session_list, session_destroy — are trl's methods seen through a
// protocol.Handler: the runtime itself (in-process) or a live daemon's
// socket (Bridge), so sessions outlive the MCP client.
//
// A tool never blocks past its yield (at most 55 s, so that clients with
// a 60 s request timeout always get an answer): it waits in steps of one
// second, sending a progress notification at each when the client asked
// for progress, and a cancelled call interrupts the command (SIGINT) and
// answers with the output so far. A failing command is a normal result;
// what a model can act on comes back as a tool error (isError), never as
// a protocol error.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trl-project/trl/protocol"
)

// Bounds of SPEC §10.
const (
	defaultYield = 10 * time.Second
	maxYield     = 55 * time.Second
	step         = time.Second
	textCap      = 32 << 10
)

// Options configure a server.
type Options struct {
	// Handler is trl's method table: a runtime, or a Bridge to a daemon.
	Handler protocol.Handler
	// Version is reported to clients.
	Version string
}

type server struct {
	h protocol.Handler
}

// New returns an MCP server with trl's tools.
func New(o Options) *mcp.Server {
	s := &server{h: o.Handler}
	srv := mcp.NewServer(&mcp.Implementation{Name: "trl", Title: "trl: real terminals for agents", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Long-lived shells on real terminals. `run` a command (cd, exported variables and functions persist in its session); " +
			"if it asks for input, answer with `send_input`; if it is still running, `wait` for it. Output is rendered as text.",
	})
	no, yes := false, true
	mcp.AddTool(srv, &mcp.Tool{Name: "run", Description: "Run a shell command in a persistent session (default: \"default\") and return its output, exit code and working directory; a command still running after yield_ms, or waiting for input, comes back with its exec_id.",
		Annotations: &mcp.ToolAnnotations{Title: "Run a command", DestructiveHint: &yes, OpenWorldHint: &yes}}, s.run)
	mcp.AddTool(srv, &mcp.Tool{Name: "send_input", Description: "Type into a running command that waits for input (a prompt, a REPL, an editor): text, then named keys such as Enter; returns what the command printed next.",
		Annotations: &mcp.ToolAnnotations{Title: "Answer a prompt", DestructiveHint: &yes, OpenWorldHint: &yes}}, s.sendInput)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Wait for a running command (or any) to exit or to ask for input, up to timeout_ms; returns its new output and state.",
		Annotations: &mcp.ToolAnnotations{Title: "Wait for a command", ReadOnlyHint: true, OpenWorldHint: &no}}, s.wait)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_output", Description: "Read a command's output from a byte offset (stdout or stderr), rendered as text.",
		Annotations: &mcp.ToolAnnotations{Title: "Read output", ReadOnlyHint: true, OpenWorldHint: &no}}, s.readOutput)
	mcp.AddTool(srv, &mcp.Tool{Name: "screen", Description: "Show a session's terminal screen as a person would see it (for full-screen programs such as vim, less, top).",
		Annotations: &mcp.ToolAnnotations{Title: "Look at the screen", ReadOnlyHint: true, OpenWorldHint: &no}}, s.screen)
	mcp.AddTool(srv, &mcp.Tool{Name: "cancel", Description: "Interrupt a running command (SIGINT by default, as Ctrl-C).",
		Annotations: &mcp.ToolAnnotations{Title: "Cancel a command", DestructiveHint: &yes, OpenWorldHint: &no}}, s.cancel)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_create", Description: "Create a named shell session (its own working directory, variables and history).",
		Annotations: &mcp.ToolAnnotations{Title: "Create a session", DestructiveHint: &no, OpenWorldHint: &no}}, s.sessionCreate)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_list", Description: "List the shell sessions with their state and working directory.",
		Annotations: &mcp.ToolAnnotations{Title: "List sessions", ReadOnlyHint: true, OpenWorldHint: &no}}, s.sessionList)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_destroy", Description: "End a session and every process it started.",
		Annotations: &mcp.ToolAnnotations{Title: "Destroy a session", DestructiveHint: &yes, OpenWorldHint: &no}}, s.sessionDestroy)
	return srv
}

// call runs one method and returns its data as JSON.
func (s *server) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	ctx = protocol.WithCaller(ctx, protocol.Caller{Transport: "mcp", Actor: "mcp"})
	reply, err := s.h.Handle(ctx, &protocol.Call{Method: method, Params: raw})
	if err != nil {
		return nil, err
	}
	return json.Marshal(reply.Data)
}

// toolError is a result a model reads: what went wrong and what to do.
func toolError(err error) *mcp.CallToolResult {
	e := protocol.AsError(err)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: string(e.Code) + ": " + e.Message}}}
}

// result is a tool's answer: text for the model, data as structured
// content.
func result(text string, data json.RawMessage) *mcp.CallToolResult {
	var structured map[string]any
	_ = json.Unmarshal(data, &structured)
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}, StructuredContent: structured}
}

// status is the part of the SPEC §8 status the text is made of.
type status struct {
	ExecID     string              `json:"exec_id"`
	State      string              `json:"state"`
	Reason     string              `json:"reason"`
	ExitCode   *int                `json:"exit_code"`
	DurationMS int64               `json:"duration_ms"`
	TimedOut   bool                `json:"timed_out"`
	Canceled   bool                `json:"canceled"`
	Stdout     string              `json:"stdout"`
	Stderr     string              `json:"stderr"`
	Truncated  bool                `json:"truncated"`
	Cwd        string              `json:"cwd"`
	Input      *protocol.InputWait `json:"input"`
	AltScreen  bool                `json:"alt_screen"`
	Screen     *protocol.Screen    `json:"screen"`
	// Note says what the output does not: the shell exited, or the
	// command ran in a new shell.
	Note string `json:"note"`
}

// follow waits for a command that first answered st, in steps, until it
// exits, waits for input, or yield passes; it reports progress and
// interrupts the command when ctx is cancelled. out gathers the output.
func (s *server) follow(ctx context.Context, req *mcp.CallToolRequest, st status, raw json.RawMessage, yield time.Duration, out *output) (status, json.RawMessage) {
	start := time.Now()
	bg := context.WithoutCancel(ctx)
	for st.State == protocol.StateRunning && st.Reason == protocol.ReasonYield && time.Since(start) < yield {
		if ctx.Err() != nil {
			// The client cancelled: Ctrl-C, keeping what was printed.
			_, _ = s.call(bg, protocol.MethodExecCancel, map[string]any{"exec_id": st.ExecID, "signal": "SIGINT"})
			r, err := s.call(bg, protocol.MethodExecWait, map[string]any{"exec_id": st.ExecID, "timeout_ms": 2000, "until": []string{}, "render": "text"})
			if err == nil {
				raw = r
				_ = json.Unmarshal(r, &st)
				out.add(st)
			}
			return st, raw
		}
		if token := req.Params.GetProgressToken(); token != nil {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: token,
				Progress: time.Since(start).Seconds(), Total: yield.Seconds(),
				Message: fmt.Sprintf("%s still running after %.0f s", st.ExecID, time.Since(start).Seconds())})
		}
		wait := min(step, yield-time.Since(start))
		r, err := s.call(bg, protocol.MethodExecWait, map[string]any{"exec_id": st.ExecID, "timeout_ms": max(wait.Milliseconds(), 1), "render": "text"})
		if err != nil {
			break
		}
		raw = r
		if json.Unmarshal(r, &st) != nil {
			break
		}
		out.add(st)
	}
	return st, raw
}

// output is what statuses carried, for the model's text.
type output struct {
	stdout, stderr strings.Builder
	truncated      bool
}

func (o *output) add(st status) {
	o.stdout.WriteString(st.Stdout)
	o.stderr.WriteString(st.Stderr)
	o.truncated = o.truncated || st.Truncated
}

// text is what a model reads: the output (head and tail within 32 KiB),
// stderr apart, the screen of a full-screen program, then one status line.
func (o *output) text(st status) string {
	var b strings.Builder
	b.WriteString(headTail(o.stdout.String(), textCap))
	if e := o.stderr.String(); e != "" {
		if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
			b.WriteString("\n")
		}
		b.WriteString("[stderr]\n")
		b.WriteString(headTail(e, textCap/4))
	}
	if st.AltScreen && st.Screen != nil {
		b.Reset() // a full-screen program: the screen is what it shows
		b.WriteString(strings.Join(st.Screen.Lines, "\n"))
	}
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	if o.truncated {
		b.WriteString("[output cut to its head and tail; read_output reads the rest]\n")
	}
	if st.Note != "" {
		b.WriteString("[" + st.Note + "]\n")
	}
	b.WriteString(statusLine(st))
	return b.String()
}

func statusLine(st status) string {
	secs := float64(st.DurationMS) / 1000
	switch {
	case st.State == protocol.StateExited && st.TimedOut:
		return fmt.Sprintf("timed out · exit %d · %.1f s · %s", code(st), secs, st.Cwd)
	case st.State == protocol.StateExited && st.Canceled:
		return fmt.Sprintf("interrupted · exit %d · %.1f s · %s", code(st), secs, st.Cwd)
	case st.State == protocol.StateExited:
		return fmt.Sprintf("exit %d · %.1f s · %s", code(st), secs, st.Cwd)
	case st.State == protocol.StateWaitingInput && st.Input != nil:
		return fmt.Sprintf("still running as %s: waiting for input (%s): %q — answer with send_input", st.ExecID, st.Input.Kind, st.Input.Prompt)
	default:
		return fmt.Sprintf("still running as %s after %.1f s (%s) — call wait to keep waiting, or cancel", st.ExecID, secs, st.Reason)
	}
}

func code(st status) int {
	if st.ExitCode == nil {
		return -1
	}
	return *st.ExitCode
}

// headTail cuts s to n bytes: its head and its tail, marked.
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	h := n / 2
	return strings.ToValidUTF8(s[:h], "") + "\n[… " + fmt.Sprint(len(s)-n) + " bytes cut …]\n" + strings.ToValidUTF8(s[len(s)-(n-h):], "")
}

// yieldOf reads a tool's yield_ms.
func yieldOf(ms int64, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	return min(time.Duration(ms)*time.Millisecond, maxYield)
}
