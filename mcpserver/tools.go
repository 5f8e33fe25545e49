package mcpserver

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trl-project/trl/protocol"
)

// RunInput is the run tool's input.
type RunInput struct {
	Command  string            `json:"command" jsonschema:"the shell command line to run, e.g. 'cd repo && make test'"`
	Session  string            `json:"session,omitempty" jsonschema:"session id or name; default: the session named default; a name not in use is created on first use"`
	TimeoutS float64           `json:"timeout_s,omitempty" jsonschema:"hard limit in seconds from the start, across yields; 0: the session's default (none)"`
	YieldMS  int64             `json:"yield_ms,omitempty" jsonschema:"return after this many milliseconds if the command still runs (default 10000, at most 55000); it goes on, and wait picks it up"`
	Stdin    *string           `json:"stdin,omitempty" jsonschema:"text fed to the command's standard input, followed by end-of-file"`
	Env      map[string]string `json:"env,omitempty" jsonschema:"variables for this command only"`
}

func (s *server) run(ctx context.Context, req *mcp.CallToolRequest, in RunInput) (*mcp.CallToolResult, any, error) {
	if strings.TrimSpace(in.Command) == "" {
		return toolError(protocol.Errorf(protocol.CodeInvalidParams, "command is required, e.g. \"ls -la\"")), nil, nil
	}
	yield := yieldOf(in.YieldMS, defaultYield)
	p := protocol.ExecParams{SessionID: in.Session, Command: &in.Command, Stdin: in.Stdin, Env: in.Env, YieldMS: ptr(yield.Milliseconds())}
	if in.TimeoutS > 0 {
		p.TimeoutS = &in.TimeoutS
	}
	interrupt := func(c context.Context) bool {
		r, err := s.api.ExecCancel(c, protocol.ExecCancelParams{SessionID: in.Session, Signal: "SIGINT"})
		return err == nil && r.Canceled
	}
	call := func(c context.Context) (protocol.ExecStatus, error) { return s.api.ExecRun(c, p) }
	st, err := s.block(ctx, req, yield, interrupt, call)
	created, renewed := false, false
	switch code := codeOf(err); {
	case in.Session != "" && code == protocol.CodeSessionNotFound:
		// A session the model names is created on first use, as default is.
		// Another client may create it at the same time: run anyway, and
		// if the session is still missing, say why it was not created.
		_, cerr := s.api.SessionCreate(s.ctx(ctx), protocol.SessionCreateParams{Name: in.Session})
		created = cerr == nil
		st, err = s.block(ctx, req, yield, interrupt, call)
		if cerr != nil && codeOf(err) == protocol.CodeSessionNotFound {
			err = cerr
		}
	case in.Session != "" && code == protocol.CodeSessionExited:
		// A named session whose shell exited starts anew with the same
		// shell, as default does; the answer says so. One named by its id
		// is left as it is.
		info, ierr := s.api.SessionInfo(s.ctx(ctx), protocol.SessionRef{SessionID: in.Session})
		if ierr != nil || info.Name != in.Session {
			break
		}
		if _, cerr := s.api.SessionCreate(s.ctx(ctx), protocol.SessionCreateParams{Name: in.Session, Shell: info.Shell}); cerr == nil {
			renewed = true
			st, err = s.block(ctx, req, yield, interrupt, call)
		}
	}
	if err != nil {
		return toolError(err), nil, nil
	}
	v := s.status(s.ctx(ctx), st)
	// The daemon started the default session anew for this command (its
	// shell had exited): as a named session's renewal, it is said.
	v.SessionCreated, v.renewed = created, renewed || st.NewSession
	v.renewable = in.Session == "" || in.Session != st.SessionID
	return result(v.text(), v), nil, nil
}

// ctx is the context of the calls that do not block: the MCP caller's,
// and not ended by the client's cancel (they are quick, and the answer
// of a cancelled run still reads its output).
func (s *server) ctx(ctx context.Context) context.Context {
	return protocol.WithCaller(context.WithoutCancel(ctx), caller)
}

// SendInputInput is the send_input tool's input.
type SendInputInput struct {
	ExecID  string   `json:"exec_id,omitempty" jsonschema:"the command to type into (run returned it); default: the one running in session"`
	Session string   `json:"session,omitempty" jsonschema:"session id or name, when exec_id is not given"`
	Input   string   `json:"input,omitempty" jsonschema:"text typed as is; add keys [\"Enter\"] to submit a line"`
	Keys    []string `json:"keys,omitempty" jsonschema:"named keys typed after input: Enter, Tab, Escape, Backspace, Up, Down, Left, Right, C-c, C-d, F1..F12 …"`
	EOF     bool     `json:"eof,omitempty" jsonschema:"send end-of-file (Ctrl-D) last"`
	Secret  bool     `json:"secret,omitempty" jsonschema:"the text is a password: never echoed, logged or recorded, and masked as *** wherever it appears in the session's later output (so a short one such as root stars out every root)"`
	YieldMS int64    `json:"yield_ms,omitempty" jsonschema:"return after this many milliseconds if the command neither asks again nor exits (default 10000, at most 55000)"`
}

func (s *server) sendInput(ctx context.Context, req *mcp.CallToolRequest, in SendInputInput) (*mcp.CallToolResult, any, error) {
	var items protocol.InputList
	if in.Input != "" {
		items = append(items, protocol.Text(in.Input))
	}
	for _, k := range in.Keys {
		items = append(items, protocol.Key(k))
	}
	if in.EOF {
		items = append(items, protocol.InputItem{EOF: true})
	}
	if len(items) == 0 {
		return toolError(protocol.Errorf(protocol.CodeInvalidParams, "nothing to type: give input, keys or eof")), nil, nil
	}
	yield := yieldOf(in.YieldMS, defaultYield)
	p := protocol.ExecInputParams{ExecID: in.ExecID, Input: items, Secret: in.Secret, YieldMS: ptr(yield.Milliseconds())}
	if in.ExecID == "" {
		p.SessionID = in.Session
	}
	st, err := s.block(ctx, req, yield, s.interrupt(in.ExecID, in.Session), func(c context.Context) (protocol.ExecStatus, error) {
		return s.api.ExecInput(c, p)
	})
	if err != nil {
		return toolError(err), nil, nil
	}
	v := s.status(s.ctx(ctx), st)
	return result(v.text(), v), nil, nil
}

// interrupt sends SIGINT to the command named by id, or else the one
// running in session.
func (s *server) interrupt(id, session string) func(context.Context) bool {
	return func(c context.Context) bool {
		p := protocol.ExecCancelParams{ExecID: id, Signal: "SIGINT"}
		if id == "" {
			p.SessionID = session
		}
		r, err := s.api.ExecCancel(c, p)
		return err == nil && r.Canceled
	}
}

// WaitInput is the wait tool's input.
type WaitInput struct {
	ExecID    string `json:"exec_id,omitempty" jsonschema:"the command to wait for; default: the one running in session, or else any command this client started that has news"`
	Session   string `json:"session,omitempty" jsonschema:"wait for the command running in this session (id or name), when exec_id is not given"`
	TimeoutMS int64  `json:"timeout_ms,omitempty" jsonschema:"give up after this many milliseconds (default 30000, at most 55000); the command goes on"`
}

func (s *server) wait(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, any, error) {
	timeout := yieldOf(in.TimeoutMS, defaultWait)
	p := protocol.ExecWaitParams{ExecID: in.ExecID, TimeoutMS: ptr(timeout.Milliseconds())}
	var interrupt func(context.Context) bool
	switch {
	case in.ExecID != "":
		interrupt = s.interrupt(in.ExecID, "")
	case in.Session != "":
		// The session's running command; else one this client started
		// there whose end it has not been told (just cancelled, say).
		info, err := s.api.SessionInfo(s.ctx(ctx), protocol.SessionRef{SessionID: in.Session})
		if err != nil {
			return toolError(err), nil, nil
		}
		if info.Command != nil {
			p.ExecID = info.Command.ExecID
			break
		}
		ids, err := s.owed(ctx, req.Session, info.SessionID)
		if err != nil {
			return toolError(err), nil, nil
		}
		if len(ids) == 0 {
			return toolError(protocol.Errorf(protocol.CodeInvalidState, "session %s runs no command, and no command this client started there has news; nothing to wait for", in.Session)), nil, nil
		}
		p.ExecIDs = ids
	default:
		ids, err := s.owed(ctx, req.Session, "")
		if err != nil {
			return toolError(err), nil, nil
		}
		if len(ids) == 0 {
			return toolError(protocol.Errorf(protocol.CodeInvalidState, "no command this client started is running or has news; run starts one (wait with session waits for a session's command)")), nil, nil
		}
		p.ExecIDs = ids
	}
	st, err := s.block(ctx, req, timeout, interrupt, func(c context.Context) (protocol.ExecStatus, error) {
		return s.api.ExecWait(c, p)
	})
	if err != nil {
		return toolError(err), nil, nil
	}
	v := s.status(s.ctx(ctx), st)
	return result(v.text(), v), nil, nil
}

// owed returns the commands this client session started whose end it has
// not been told, as far as the daemon still knows them; in session
// sessionID only, unless it is "".
func (s *server) owed(ctx context.Context, ss *mcp.ServerSession, sessionID string) ([]string, error) {
	mine := s.mine(ss)
	if len(mine) == 0 {
		return nil, nil
	}
	list, err := s.api.ExecList(s.ctx(ctx), protocol.ExecListParams{})
	if err != nil {
		return nil, err
	}
	known := map[string]string{} // exec_id: session_id
	for _, c := range list.Commands {
		known[c.ExecID] = c.SessionID
	}
	var ids []string
	for _, id := range mine {
		if sid, ok := known[id]; ok {
			if sessionID == "" || sid == sessionID {
				ids = append(ids, id)
			}
		} else {
			s.track(ss, protocol.ExecStatus{ExecID: id, State: protocol.StateExited}) // forgotten by the daemon
		}
	}
	return ids, nil
}

// ReadOutputInput is the read_output tool's input.
type ReadOutputInput struct {
	ExecID   string `json:"exec_id" jsonschema:"the command whose output to read"`
	Stream   string `json:"stream,omitempty" jsonschema:"stdout (default) or stderr"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"byte offset to read from (a cut output says where its omitted part starts)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes (default 32768)"`
}

func (s *server) readOutput(ctx context.Context, _ *mcp.CallToolRequest, in ReadOutputInput) (*mcp.CallToolResult, any, error) {
	limit := in.MaxBytes
	if limit <= 0 {
		limit = textCap
	}
	r, err := s.api.ExecRead(s.ctx(ctx), protocol.ExecReadParams{ExecID: in.ExecID, Stream: in.Stream, Offset: in.Offset, Limit: limit, Render: "text"})
	if err != nil {
		return toolError(err), nil, nil
	}
	var b strings.Builder
	if r.LostBytes > 0 {
		fmt.Fprintf(&b, "[bytes %d–%d are no longer kept; reading from %d]\n", r.Offset-r.LostBytes, r.Offset, r.Offset)
	}
	b.WriteString(r.Data)
	if r.Data != "" && !strings.HasSuffix(r.Data, "\n") {
		b.WriteString("\n")
	}
	end := r.Offset + int64(r.Length)
	more := fmt.Sprintf("more from offset %d", end)
	if r.Complete {
		more = "the end of the output"
	}
	fmt.Fprintf(&b, "[bytes %d–%d; %s]", r.Offset, end, more)
	return result(b.String(), r), nil, nil
}

// SessionRefInput names a session (screen, session_info).
type SessionRefInput struct {
	Session string `json:"session,omitempty" jsonschema:"session id or name (default: default)"`
}

func orDefault(ref string) string {
	if ref == "" {
		return "default"
	}
	return ref
}

func (s *server) screen(ctx context.Context, _ *mcp.CallToolRequest, in SessionRefInput) (*mcp.CallToolResult, any, error) {
	scr, err := s.api.SessionScreen(s.ctx(ctx), protocol.SessionScreenParams{SessionID: orDefault(in.Session)})
	if err != nil {
		return toolError(err), nil, nil
	}
	full := ""
	if scr.AltScreen {
		full = ", full-screen program"
	}
	txt := strings.Join(scr.Lines, "\n") + fmt.Sprintf("\n[%dx%d, cursor at row %d col %d%s]", scr.Cols, scr.Rows, scr.Cursor.Row+1, scr.Cursor.Col+1, full)
	return result(txt, scr), nil, nil
}

func (s *server) sessionInfo(ctx context.Context, _ *mcp.CallToolRequest, in SessionRefInput) (*mcp.CallToolResult, any, error) {
	info, err := s.api.SessionInfo(s.ctx(ctx), protocol.SessionRef{SessionID: orDefault(in.Session)})
	if err != nil {
		return toolError(err), nil, nil
	}
	var b strings.Builder
	runs := "commands"
	if info.CommandsRun == 1 {
		runs = "command"
	}
	fmt.Fprintf(&b, "session %s (%s): %s, %s in %s, %dx%d, %d %s run\n", info.SessionID, info.Name, info.State, info.Shell, info.WorkingDir, info.Cols, info.Rows, info.CommandsRun, runs)
	switch {
	case info.EndCause != "":
		fmt.Fprintf(&b, "ended: %s", info.EndCause)
	case info.Command != nil:
		c := info.Command
		fmt.Fprintf(&b, "running %s: %q (%s", c.ExecID, c.Command, c.State)
		if c.Input != nil {
			fmt.Fprintf(&b, ", waiting for input (%s): %q", c.Input.Kind, c.Input.Prompt)
		}
		b.WriteString(")")
	default:
		b.WriteString("no command running")
	}
	return result(b.String(), info), nil, nil
}

// CancelInput is the cancel tool's input.
type CancelInput struct {
	ExecID  string `json:"exec_id,omitempty" jsonschema:"the command to interrupt; default: the one running in session"`
	Session string `json:"session,omitempty" jsonschema:"session id or name, when exec_id is not given (default: default)"`
	Signal  string `json:"signal,omitempty" jsonschema:"SIGINT (default, as Ctrl-C), SIGTERM or SIGKILL"`
}

// running is the exec_id of the command running in session, "" when
// none runs.
func (s *server) running(ctx context.Context, session string) (string, error) {
	info, err := s.api.SessionInfo(s.ctx(ctx), protocol.SessionRef{SessionID: session})
	if err != nil || info.Command == nil {
		return "", err
	}
	return info.Command.ExecID, nil
}

// CancelOutput is the cancel tool's structured answer: exec.cancel's,
// with the command it interrupted.
type CancelOutput struct {
	protocol.ExecCancelResult
	ExecID string `json:"exec_id,omitempty"`
}

// cancel interrupts a command named by exec_id or, without one, the
// command running in the session, which it looks up first: the answer
// names the command, because once it has ended `wait` finds it by its
// exec_id only (a session that runs nothing has nothing to wait for).
func (s *server) cancel(ctx context.Context, _ *mcp.CallToolRequest, in CancelInput) (*mcp.CallToolResult, any, error) {
	if _, err := protocol.Signal(in.Signal).Number(); err != nil {
		return toolError(err), nil, nil // before looking: a bad signal is wrong whatever runs
	}
	id := in.ExecID
	if id == "" {
		var err error
		if id, err = s.running(ctx, orDefault(in.Session)); err != nil {
			return toolError(err), nil, nil
		}
		if id == "" {
			return result("nothing was running", CancelOutput{}), nil, nil
		}
	}
	r, err := s.api.ExecCancel(s.ctx(ctx), protocol.ExecCancelParams{ExecID: id, Signal: protocol.Signal(in.Signal)})
	if err != nil {
		return toolError(err), nil, nil
	}
	out := CancelOutput{ExecCancelResult: r}
	txt := "nothing was running"
	if r.Canceled {
		out.ExecID = id
		txt = fmt.Sprintf("sent %s to %s; wait with exec_id %s shows how it ended", r.Signal, id, id)
	}
	return result(txt, out), nil, nil
}

// SessionCreateInput is the session_create tool's input.
type SessionCreateInput struct {
	Name       string            `json:"name,omitempty" jsonschema:"a unique name to address the session by"`
	Shell      string            `json:"shell,omitempty" jsonschema:"the shell: /bin/sh (default), /bin/bash or zsh"`
	WorkingDir string            `json:"working_dir,omitempty" jsonschema:"the starting directory (default /tmp)"`
	Env        map[string]string `json:"env,omitempty" jsonschema:"environment variables of the session"`
}

func (s *server) sessionCreate(ctx context.Context, _ *mcp.CallToolRequest, in SessionCreateInput) (*mcp.CallToolResult, any, error) {
	info, err := s.api.SessionCreate(s.ctx(ctx), protocol.SessionCreateParams{Name: in.Name, Shell: in.Shell, WorkingDir: in.WorkingDir, Env: in.Env})
	if err != nil {
		return toolError(err), nil, nil
	}
	return result(fmt.Sprintf("session %s (%s) created: %s in %s", info.SessionID, info.Name, info.Shell, info.WorkingDir), info), nil, nil
}

// SessionForkInput is the session_fork tool's input.
type SessionForkInput struct {
	Session string `json:"session" jsonschema:"the session to fork (id or name): its directory, variables, functions, aliases and options are copied; it is not changed"`
	Name    string `json:"name,omitempty" jsonschema:"a unique name for the new session"`
}

func (s *server) sessionFork(ctx context.Context, _ *mcp.CallToolRequest, in SessionForkInput) (*mcp.CallToolResult, any, error) {
	if in.Session == "" {
		return toolError(protocol.Errorf(protocol.CodeInvalidParams, "session is required: the session to fork")), nil, nil
	}
	info, err := s.api.SessionFork(s.ctx(ctx), protocol.SessionForkParams{SessionID: in.Session, Name: in.Name})
	if err != nil {
		return toolError(err), nil, nil
	}
	name := info.Name
	if name == "" {
		name = info.SessionID
	}
	return result(fmt.Sprintf("session %s forked from %s: %s in %s, with its variables, functions, aliases and options; run commands in it with run {session: %q}", name, in.Session, info.Shell, info.WorkingDir, name), info), nil, nil
}

// SessionListInput is the session_list tool's (empty) input.
type SessionListInput struct{}

func (s *server) sessionList(ctx context.Context, _ *mcp.CallToolRequest, _ SessionListInput) (*mcp.CallToolResult, any, error) {
	l, err := s.api.SessionList(s.ctx(ctx), protocol.SessionListParams{})
	if err != nil {
		return toolError(err), nil, nil
	}
	var b strings.Builder
	for _, in := range l.Sessions {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", in.SessionID, in.Name, in.State, in.WorkingDir)
	}
	if b.Len() == 0 {
		b.WriteString("no sessions; run creates \"default\" on first use\n")
	}
	return result(b.String(), l), nil, nil
}

// SessionDestroyInput is the session_destroy tool's input.
type SessionDestroyInput struct {
	Session string `json:"session" jsonschema:"session id or name"`
	Force   bool   `json:"force,omitempty" jsonschema:"destroy even while a command runs"`
}

func (s *server) sessionDestroy(ctx context.Context, _ *mcp.CallToolRequest, in SessionDestroyInput) (*mcp.CallToolResult, any, error) {
	r, err := s.api.SessionDestroy(s.ctx(ctx), protocol.SessionDestroyParams{SessionID: in.Session, Force: in.Force})
	if err != nil {
		return toolError(err), nil, nil
	}
	return result("session "+in.Session+" destroyed", r), nil, nil
}

// ReadBackgroundInput is the read_background tool's input.
type ReadBackgroundInput struct {
	Session  string `json:"session,omitempty" jsonschema:"session id or name (default: default)"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"byte offset to read from (the previous answer gives the next one)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes (default 32768)"`
}

func (s *server) readBackground(ctx context.Context, _ *mcp.CallToolRequest, in ReadBackgroundInput) (*mcp.CallToolResult, any, error) {
	limit := in.MaxBytes
	if limit <= 0 {
		limit = textCap
	}
	r, err := s.api.SessionOutput(s.ctx(ctx), protocol.SessionOutputParams{SessionID: orDefault(in.Session), Offset: in.Offset, Limit: limit, Render: "text"})
	if err != nil {
		return toolError(err), nil, nil
	}
	var b strings.Builder
	if r.LostBytes > 0 {
		fmt.Fprintf(&b, "[bytes %d–%d are no longer kept; reading from %d]\n", r.Offset-r.LostBytes, r.Offset, r.Offset)
	}
	if r.Data == "" {
		b.WriteString("nothing was printed outside commands")
	}
	b.WriteString(r.Data)
	if !strings.HasSuffix(b.String(), "\n") {
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "[bytes %d–%d; the next read starts at offset %d]", r.Offset, r.Next, r.Next)
	return result(b.String(), r), nil, nil
}

// ResizeInput is the resize tool's input.
type ResizeInput struct {
	Session string `json:"session,omitempty" jsonschema:"session id or name (default: default)"`
	Rows    int    `json:"rows" jsonschema:"rows of the terminal"`
	Cols    int    `json:"cols" jsonschema:"columns of the terminal"`
}

func (s *server) resize(ctx context.Context, _ *mcp.CallToolRequest, in ResizeInput) (*mcp.CallToolResult, any, error) {
	info, err := s.api.SessionResize(s.ctx(ctx), protocol.SessionResizeParams{SessionID: orDefault(in.Session), Rows: &in.Rows, Cols: &in.Cols})
	if err != nil {
		return toolError(err), nil, nil
	}
	return result(fmt.Sprintf("session %s (%s) is now %d columns by %d rows", info.SessionID, info.Name, info.Cols, info.Rows), info), nil, nil
}
