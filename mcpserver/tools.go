package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/trl-project/trl/protocol"
)

// RunInput is the run tool's input.
type RunInput struct {
	Command  string            `json:"command" jsonschema:"the shell command line to run, e.g. 'cd repo && make test'"`
	Session  string            `json:"session,omitempty" jsonschema:"session id or name; default: the session named default, created on first use"`
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
	params := map[string]any{"command": in.Command, "yield_ms": min(step, yield).Milliseconds(), "render": "text"}
	if in.Session != "" {
		params["session_id"] = in.Session
	}
	if in.TimeoutS > 0 {
		params["timeout_s"] = in.TimeoutS
	}
	if in.Stdin != nil {
		params["stdin"] = *in.Stdin
	}
	if len(in.Env) > 0 {
		params["env"] = in.Env
	}
	raw, err := s.call(context.WithoutCancel(ctx), protocol.MethodExecRun, params)
	if err != nil {
		return toolError(err), nil, nil
	}
	return s.answer(ctx, req, raw, yield)
}

// answer follows a status to its end, an input prompt or the yield, and
// turns it into the tool's result.
func (s *server) answer(ctx context.Context, req *mcp.CallToolRequest, raw json.RawMessage, yield interface{ Milliseconds() int64 }) (*mcp.CallToolResult, any, error) {
	var st status
	if err := json.Unmarshal(raw, &st); err != nil {
		return toolError(err), nil, nil
	}
	var out output
	out.add(st)
	st, raw = s.follow(ctx, req, st, raw, yieldOf(yield.Milliseconds(), defaultYield), &out)
	return result(out.text(st), raw), nil, nil
}

// SendInputInput is the send_input tool's input.
type SendInputInput struct {
	ExecID  string   `json:"exec_id,omitempty" jsonschema:"the command to type into (run returned it); default: the one running in session"`
	Session string   `json:"session,omitempty" jsonschema:"session id or name, when exec_id is not given"`
	Input   string   `json:"input,omitempty" jsonschema:"text typed as is; add keys [\"Enter\"] to submit a line"`
	Keys    []string `json:"keys,omitempty" jsonschema:"named keys typed after input: Enter, Tab, Escape, Backspace, Up, Down, Left, Right, C-c, C-d, F1..F12 …"`
	EOF     bool     `json:"eof,omitempty" jsonschema:"send end-of-file (Ctrl-D) last"`
	Secret  bool     `json:"secret,omitempty" jsonschema:"the text is a password: never echoed, logged or recorded"`
	YieldMS int64    `json:"yield_ms,omitempty" jsonschema:"return after this many milliseconds if the command neither asks again nor exits (default 10000, at most 55000)"`
}

func (s *server) sendInput(ctx context.Context, req *mcp.CallToolRequest, in SendInputInput) (*mcp.CallToolResult, any, error) {
	var items []any
	if in.Input != "" {
		items = append(items, in.Input)
	}
	for _, k := range in.Keys {
		items = append(items, map[string]any{"key": k})
	}
	if in.EOF {
		items = append(items, map[string]any{"eof": true})
	}
	if len(items) == 0 {
		return toolError(protocol.Errorf(protocol.CodeInvalidParams, "nothing to type: give input, keys or eof")), nil, nil
	}
	yield := yieldOf(in.YieldMS, defaultYield)
	params := map[string]any{"input": items, "secret": in.Secret, "render": "text", "yield_ms": min(step, yield).Milliseconds()}
	if in.ExecID != "" {
		params["exec_id"] = in.ExecID
	} else {
		params["session_id"] = in.Session
	}
	raw, err := s.call(context.WithoutCancel(ctx), protocol.MethodExecInput, params)
	if err != nil {
		return toolError(err), nil, nil
	}
	return s.answer(ctx, req, raw, yield)
}

// WaitInput is the wait tool's input.
type WaitInput struct {
	ExecID    string `json:"exec_id,omitempty" jsonschema:"the command to wait for; default: any running command"`
	TimeoutMS int64  `json:"timeout_ms,omitempty" jsonschema:"give up after this many milliseconds (default 30000, at most 55000); the command goes on"`
}

func (s *server) wait(ctx context.Context, req *mcp.CallToolRequest, in WaitInput) (*mcp.CallToolResult, any, error) {
	id := in.ExecID
	if id == "" {
		id = "any"
	}
	timeout := yieldOf(in.TimeoutMS, 30*defaultYield/10)
	raw, err := s.call(context.WithoutCancel(ctx), protocol.MethodExecWait, map[string]any{"exec_id": id, "timeout_ms": min(step, timeout).Milliseconds(), "render": "text"})
	if err != nil {
		return toolError(err), nil, nil
	}
	return s.answer(ctx, req, raw, timeout)
}

// ReadOutputInput is the read_output tool's input.
type ReadOutputInput struct {
	ExecID   string `json:"exec_id" jsonschema:"the command whose output to read"`
	Stream   string `json:"stream,omitempty" jsonschema:"stdout (default) or stderr"`
	Offset   int64  `json:"offset,omitempty" jsonschema:"byte offset to read from (statuses give stdout_offset and stderr_offset)"`
	MaxBytes int    `json:"max_bytes,omitempty" jsonschema:"at most this many bytes (default 32768)"`
}

func (s *server) readOutput(ctx context.Context, _ *mcp.CallToolRequest, in ReadOutputInput) (*mcp.CallToolResult, any, error) {
	limit := in.MaxBytes
	if limit <= 0 {
		limit = textCap
	}
	raw, err := s.call(ctx, protocol.MethodExecRead, map[string]any{"exec_id": in.ExecID, "stream": in.Stream, "offset": in.Offset, "limit": limit, "render": "text"})
	if err != nil {
		return toolError(err), nil, nil
	}
	var r struct {
		Data     string `json:"data"`
		Offset   int64  `json:"offset"`
		Length   int    `json:"length"`
		Complete bool   `json:"complete"`
	}
	_ = json.Unmarshal(raw, &r)
	more := "the end of what is kept"
	if !r.Complete {
		more = fmt.Sprintf("more from offset %d", r.Offset+int64(r.Length))
	}
	return result(fmt.Sprintf("%s\n[bytes %d–%d; %s]", r.Data, r.Offset, r.Offset+int64(r.Length), more), raw), nil, nil
}

// ScreenInput is the screen tool's input.
type ScreenInput struct {
	Session string `json:"session,omitempty" jsonschema:"session id or name (default: default)"`
}

func (s *server) screen(ctx context.Context, _ *mcp.CallToolRequest, in ScreenInput) (*mcp.CallToolResult, any, error) {
	ref := in.Session
	if ref == "" {
		ref = "default"
	}
	raw, err := s.call(ctx, protocol.MethodSessionScreen, map[string]any{"session_id": ref})
	if err != nil {
		return toolError(err), nil, nil
	}
	var scr protocol.Screen
	_ = json.Unmarshal(raw, &scr)
	txt := strings.Join(scr.Lines, "\n") + fmt.Sprintf("\n[%dx%d, cursor at row %d col %d%s]", scr.Cols, scr.Rows, scr.Cursor.Row+1, scr.Cursor.Col+1, map[bool]string{true: ", full-screen program", false: ""}[scr.AltScreen])
	return result(txt, raw), nil, nil
}

// CancelInput is the cancel tool's input.
type CancelInput struct {
	ExecID  string `json:"exec_id,omitempty" jsonschema:"the command to interrupt; default: the one running in session"`
	Session string `json:"session,omitempty" jsonschema:"session id or name, when exec_id is not given (default: default)"`
	Signal  string `json:"signal,omitempty" jsonschema:"SIGINT (default, as Ctrl-C), SIGTERM or SIGKILL"`
}

func (s *server) cancel(ctx context.Context, _ *mcp.CallToolRequest, in CancelInput) (*mcp.CallToolResult, any, error) {
	params := map[string]any{}
	if in.ExecID != "" {
		params["exec_id"] = in.ExecID
	} else if in.Session != "" {
		params["session_id"] = in.Session
	}
	if in.Signal != "" {
		params["signal"] = in.Signal
	}
	raw, err := s.call(ctx, protocol.MethodExecCancel, params)
	if err != nil {
		return toolError(err), nil, nil
	}
	var r struct {
		Canceled bool   `json:"canceled"`
		Signal   string `json:"signal"`
	}
	_ = json.Unmarshal(raw, &r)
	txt := "nothing was running"
	if r.Canceled {
		txt = "sent " + r.Signal + "; wait shows how it ended"
	}
	return result(txt, raw), nil, nil
}

// SessionCreateInput is the session_create tool's input.
type SessionCreateInput struct {
	Name       string            `json:"name,omitempty" jsonschema:"a unique name to address the session by"`
	Shell      string            `json:"shell,omitempty" jsonschema:"the shell: /bin/sh (default), /bin/bash or zsh"`
	WorkingDir string            `json:"working_dir,omitempty" jsonschema:"the starting directory (default /tmp)"`
	Env        map[string]string `json:"env,omitempty" jsonschema:"environment variables of the session"`
}

func (s *server) sessionCreate(ctx context.Context, _ *mcp.CallToolRequest, in SessionCreateInput) (*mcp.CallToolResult, any, error) {
	raw, err := s.call(ctx, protocol.MethodSessionCreate, in)
	if err != nil {
		return toolError(err), nil, nil
	}
	var info protocol.SessionInfo
	_ = json.Unmarshal(raw, &info)
	return result(fmt.Sprintf("session %s (%s) created: %s in %s", info.SessionID, info.Name, info.Shell, info.WorkingDir), raw), nil, nil
}

// SessionListInput is the session_list tool's (empty) input.
type SessionListInput struct{}

func (s *server) sessionList(ctx context.Context, _ *mcp.CallToolRequest, _ SessionListInput) (*mcp.CallToolResult, any, error) {
	raw, err := s.call(ctx, protocol.MethodSessionList, map[string]any{})
	if err != nil {
		return toolError(err), nil, nil
	}
	var l struct {
		Sessions []protocol.SessionInfo `json:"sessions"`
	}
	_ = json.Unmarshal(raw, &l)
	var b strings.Builder
	for _, in := range l.Sessions {
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\n", in.SessionID, in.Name, in.State, in.WorkingDir)
	}
	if b.Len() == 0 {
		b.WriteString("no sessions; run creates \"default\" on first use\n")
	}
	return result(b.String(), raw), nil, nil
}

// SessionDestroyInput is the session_destroy tool's input.
type SessionDestroyInput struct {
	Session string `json:"session" jsonschema:"session id or name"`
	Force   bool   `json:"force,omitempty" jsonschema:"destroy even while a command runs"`
}

func (s *server) sessionDestroy(ctx context.Context, _ *mcp.CallToolRequest, in SessionDestroyInput) (*mcp.CallToolResult, any, error) {
	raw, err := s.call(ctx, protocol.MethodSessionDestroy, map[string]any{"session_id": in.Session, "force": in.Force})
	if err != nil {
		return toolError(err), nil, nil
	}
	return result("session "+in.Session+" destroyed", raw), nil, nil
}
