// Package mcpserver is trl as an MCP server (SPEC §10), built on the
// official SDK (github.com/modelcontextprotocol/go-sdk). Its tools — run,
// send_input, wait, read_output, screen, cancel, session_create,
// session_fork, session_list, session_info, session_destroy, read_background, resize,
// and the file tools read_file, write_file, edit_file, list_dir —
// are trl's typed API (protocol.API) seen by a model: the runtime itself
// (in-process) or a live daemon through the Go client (trl mcp's bridge),
// so sessions outlive the MCP client.
//
// A tool that waits makes one blocking call with the tool's own yield
// (the runtime keeps it), never more than 55 s so that clients with a
// 60 s request timeout always get an answer; beside it a ticker sends
// progress when the client asked for it. A call the client cancels
// (notifications/cancelled) interrupts its command (SIGINT) and answers
// with how it ended; a client that goes away (its connection ends) leaves
// the command running. A failing command is a normal result; what a
// model can act on comes back as a tool error (isError) that names the
// tools it has, never as a protocol error.
package mcpserver

import (
	"context"
	"runtime"
	"sync"
	"time"
	"weak"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trl-project/trl/protocol"
)

// Bounds of SPEC §10.
const (
	defaultYield  = 10 * time.Second
	defaultWait   = 30 * time.Second
	maxYield      = 55 * time.Second
	progressEvery = time.Second
	textCap       = 32 << 10
	stderrCap     = textCap / 4
)

// Options configure a server.
type Options struct {
	// API is trl's work: a *runtime.Runtime, or a *client.Client dialed
	// to a daemon.
	API protocol.API
	// Version is reported to clients.
	Version string
	// Check, when set, runs before every tool call with the tool's name;
	// an error it returns is the call's answer, and the tool does not
	// run. `trl mcp` uses it to say that the daemon it bridges to stopped
	// or restarted.
	Check func(ctx context.Context, tool string) error
}

type server struct {
	api protocol.API

	mu sync.Mutex
	// started holds, per MCP client session, the commands its tools
	// started and whose end it has not been told yet: wait without an
	// exec_id waits for these, never for another client's.
	started map[weak.Pointer[mcp.ServerSession]]map[string]struct{}
}

// caller is who the runtime sees making the MCP tools' calls.
var caller = protocol.Caller{Transport: "mcp", Actor: "mcp"}

// New returns an MCP server with trl's tools.
func New(o Options) *mcp.Server {
	s := &server{api: o.API, started: map[weak.Pointer[mcp.ServerSession]]map[string]struct{}{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "trl", Title: "trl: real terminals for agents", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Long-lived shells on real terminals. `run` a command (cd, exported variables and functions persist in its session; " +
			"a session you name is created on first use); if it asks for input, answer with `send_input`; if it is still running, " +
			"`wait` for it. Output is rendered as text; long output keeps its head and tail and says how to read the rest.",
	})
	no, yes := false, true
	mcp.AddTool(srv, &mcp.Tool{Name: "run", Description: "Run a shell command in a persistent session (default: \"default\"; a session you name is created on first use) and return its output, exit code and working directory; a command still running after yield_ms, or waiting for input, comes back with its exec_id.",
		Annotations: &mcp.ToolAnnotations{Title: "Run a command", DestructiveHint: &yes, OpenWorldHint: &yes}}, s.run)
	mcp.AddTool(srv, &mcp.Tool{Name: "send_input", Description: "Type into a running command that waits for input (a prompt, a REPL, an editor): text, then named keys such as Enter; returns what the command printed next.",
		Annotations: &mcp.ToolAnnotations{Title: "Answer a prompt", DestructiveHint: &yes, OpenWorldHint: &yes}}, s.sendInput)
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Wait for a running command to exit or to ask for input, up to timeout_ms: the one named by exec_id, the one running in session, or else any command this client started; returns its new output and state.",
		Annotations: &mcp.ToolAnnotations{Title: "Wait for a command", ReadOnlyHint: true, OpenWorldHint: &no}}, s.wait)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_output", Description: "Read a command's output from a byte offset (stdout or stderr), rendered as text; says when bytes before the offset are no longer kept.",
		Annotations: &mcp.ToolAnnotations{Title: "Read output", ReadOnlyHint: true, OpenWorldHint: &no}}, s.readOutput)
	mcp.AddTool(srv, &mcp.Tool{Name: "screen", Description: "Show a session's terminal screen as a person would see it (for full-screen programs such as vim, less, top).",
		Annotations: &mcp.ToolAnnotations{Title: "Look at the screen", ReadOnlyHint: true, OpenWorldHint: &no}}, s.screen)
	mcp.AddTool(srv, &mcp.Tool{Name: "cancel", Description: "Interrupt a running command (SIGINT by default, as Ctrl-C).",
		Annotations: &mcp.ToolAnnotations{Title: "Cancel a command", DestructiveHint: &yes, OpenWorldHint: &no}}, s.cancel)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_create", Description: "Create a named shell session (its own working directory, variables and history).",
		Annotations: &mcp.ToolAnnotations{Title: "Create a session", DestructiveHint: &no, OpenWorldHint: &no}}, s.sessionCreate)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_fork", Description: "Copy a session's state (directory, variables, functions, aliases, options) into a new session, to try something without changing the original.",
		Annotations: &mcp.ToolAnnotations{Title: "Fork a session", DestructiveHint: &no, OpenWorldHint: &no}}, s.sessionFork)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_list", Description: "List the shell sessions with their state and working directory.",
		Annotations: &mcp.ToolAnnotations{Title: "List sessions", ReadOnlyHint: true, OpenWorldHint: &no}}, s.sessionList)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_info", Description: "Describe a session: its state, shell, current working directory and the command running in it.",
		Annotations: &mcp.ToolAnnotations{Title: "Describe a session", ReadOnlyHint: true, OpenWorldHint: &no}}, s.sessionInfo)
	mcp.AddTool(srv, &mcp.Tool{Name: "session_destroy", Description: "End a session and every process it started.",
		Annotations: &mcp.ToolAnnotations{Title: "Destroy a session", DestructiveHint: &yes, OpenWorldHint: &no}}, s.sessionDestroy)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_background", Description: "Read what a session printed while no command ran (background jobs, `cmd &`), from a byte offset, rendered as text.",
		Annotations: &mcp.ToolAnnotations{Title: "Read background output", ReadOnlyHint: true, OpenWorldHint: &no}}, s.readBackground)
	mcp.AddTool(srv, &mcp.Tool{Name: "resize", Description: "Set a session's terminal size (rows and columns), as resizing a terminal window does.",
		Annotations: &mcp.ToolAnnotations{Title: "Resize the terminal", DestructiveHint: &no, OpenWorldHint: &no}}, s.resize)
	mcp.AddTool(srv, &mcp.Tool{Name: "read_file", Description: "Read a text file of a session (relative paths start at its current directory; as its user), numbered like `cat -n`, a page of lines at a time (line_offset, line_limit: 200 by default); the last line says which lines were left out and how to read on. A binary file is described, not shown.",
		Annotations: &mcp.ToolAnnotations{Title: "Read a file", ReadOnlyHint: true, OpenWorldHint: &no}}, s.readFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "write_file", Description: "Write the whole content of a file atomically (a reader sees the old file or the new one), making missing parent directories; if_sha256 refuses to overwrite a version you have not read.",
		Annotations: &mcp.ToolAnnotations{Title: "Write a file", DestructiveHint: &yes, IdempotentHint: true, OpenWorldHint: &no}}, s.writeFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "edit_file", Description: "Replace exact text in a file (old_string must occur exactly once, whitespace included, unless replace_all); answers the changed lines with their numbers. Nothing changes when old_string is missing or ambiguous.",
		Annotations: &mcp.ToolAnnotations{Title: "Edit a file", DestructiveHint: &yes, OpenWorldHint: &no}}, s.editFile)
	mcp.AddTool(srv, &mcp.Tool{Name: "list_dir", Description: "List a directory of a session (default: its current directory), depth levels deep (1 to 8): directories end with /, symlinks show their target, files their size.",
		Annotations: &mcp.ToolAnnotations{Title: "List a directory", ReadOnlyHint: true, OpenWorldHint: &no}}, s.listDir)
	if o.Check != nil {
		srv.AddReceivingMiddleware(checked(o.Check))
	}
	return srv
}

// checked runs check before each tool call and answers its error in the
// tool's place.
func checked(check func(context.Context, string) error) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if call, ok := req.(*mcp.CallToolRequest); ok && method == "tools/call" && call.Params != nil {
				if err := check(ctx, call.Params.Name); err != nil {
					return toolError(err), nil
				}
			}
			return next(ctx, method, req)
		}
	}
}

// track notes a command a client session's tool started, until a status
// it was given says the command ended.
func (s *server) track(ss *mcp.ServerSession, st protocol.ExecStatus) {
	if ss == nil || st.ExecID == "" {
		return
	}
	key := weak.Make(ss)
	s.mu.Lock()
	defer s.mu.Unlock()
	ids, ok := s.started[key]
	if !ok {
		ids = map[string]struct{}{}
		s.started[key] = ids
		// The entry goes with the client session.
		runtime.AddCleanup(ss, func(k weak.Pointer[mcp.ServerSession]) {
			s.mu.Lock()
			delete(s.started, k)
			s.mu.Unlock()
		}, key)
	}
	if st.State == protocol.StateExited {
		delete(ids, st.ExecID)
	} else {
		ids[st.ExecID] = struct{}{}
	}
}

// mine returns the commands ss's tools started and has not seen end.
func (s *server) mine(ss *mcp.ServerSession) []string {
	if ss == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for id := range s.started[weak.Make(ss)] {
		out = append(out, id)
	}
	return out
}

// block makes one blocking call (run, send_input, wait: the runtime keeps
// the yield) and, beside it, sends progress every second when the client
// asked for it. When the client cancels the request explicitly
// (notifications/cancelled: its context ends with cause
// context.Canceled), interrupt is sent (SIGINT) and the call goes on to
// report how the command ended. When the client goes away instead (the
// connection's reader ended: another cause), the call is let go and the
// command goes on: sessions and their commands outlive the MCP client.
func (s *server) block(ctx context.Context, req *mcp.CallToolRequest, yield time.Duration, interrupt func(context.Context) bool, call func(context.Context) (protocol.ExecStatus, error)) (protocol.ExecStatus, error) {
	callCtx, letGo := context.WithCancel(protocol.WithCaller(context.WithoutCancel(ctx), caller))
	defer letGo()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // owned by block, which waits for it to end
		defer wg.Done()
		var tick <-chan time.Time
		if token := progressToken(req); token != nil {
			t := time.NewTicker(progressEvery)
			defer t.Stop()
			tick = t.C
		}
		start := time.Now()
		gone := ctx.Done()
		var retry <-chan time.Time
		tries := 0
		for {
			select {
			case <-done:
				return
			case <-tick:
				el := time.Since(start)
				_ = req.Session.NotifyProgress(callCtx, &mcp.ProgressNotificationParams{ProgressToken: progressToken(req),
					Progress: el.Seconds(), Total: yield.Seconds(),
					Message: "still running after " + el.Round(time.Second).String()})
			case <-gone:
				gone = nil
				if context.Cause(ctx) != context.Canceled || interrupt == nil {
					letGo()
					continue
				}
				if !interrupt(callCtx) {
					retry = time.After(50 * time.Millisecond)
				}
			case <-retry:
				// The command may not have started when the cancel came.
				retry = nil
				if tries++; tries < 20 && !interrupt(callCtx) {
					retry = time.After(50 * time.Millisecond)
				}
			}
		}
	}()
	st, err := call(callCtx)
	close(done)
	wg.Wait()
	if err == nil {
		s.track(req.Session, st)
	}
	return st, err
}

func progressToken(req *mcp.CallToolRequest) any {
	if req == nil || req.Params == nil {
		return nil
	}
	return req.Params.GetProgressToken()
}

// yieldOf reads a tool's yield_ms or timeout_ms.
func yieldOf(ms int64, def time.Duration) time.Duration {
	if ms <= 0 {
		return def
	}
	return min(time.Duration(ms)*time.Millisecond, maxYield)
}

func ptr[T any](v T) *T { return &v }
