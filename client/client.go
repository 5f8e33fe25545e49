// Package client is trl's Go client (docs/clients.md). Over the Unix socket it
// speaks JSON-RPC 2.0 through github.com/sourcegraph/jsonrpc2 (a plain
// newline-delimited object stream); over HTTP it POSTs to /rpc with the
// bearer token. Notifications of a stream are routed, in the order they
// arrive, by a synchronous handler to the Stream call that owns them.
//
// Errors the daemon answers are *Error values matchable with errors.Is
// against the sentinels (errors.Is(err, client.ErrSessionNotFound)), and
// as a *protocol.Error with errors.As. A context cancelled while Run or
// Stream waits sends exec.cancel (SIGINT) for the command.
//
// The Client also implements protocol.API (api.go): the daemon's typed
// calls, the same ones the runtime serves in-process. Those never send
// exec.cancel on their own: a cancelled context only stops waiting, and
// the command goes on.
package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/trl-project/trl/protocol"
)

// The wire types are trl's own (package protocol).
type (
	// Status is the status of docs/protocol.md, "Interactive programs": exec.run's result, exec.input's and
	// exec.wait's.
	Status = protocol.ExecStatus
	// SessionInfo describes a session.
	SessionInfo = protocol.SessionInfo
	// Screen is a session's screen (session.screen).
	Screen = protocol.Screen
	// ExitNotification ends a stream.
	ExitNotification = protocol.ExitNotification
)

// Error is an error the daemon answered: its code (docs/protocol.md), message and
// data (for COMMAND_FAILED, the command's result).
type Error struct {
	Code    string
	Message string
	Data    json.RawMessage
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// As makes the error a *protocol.Error for errors.As (protocol.AsError):
// the same code and message, and the data as the daemon sent it.
func (e *Error) As(target any) bool {
	t, ok := target.(**protocol.Error)
	if !ok {
		return false
	}
	pe := &protocol.Error{Code: protocol.Code(e.Code), Message: e.Message}
	if len(e.Data) > 0 {
		pe.Data = e.Data
	}
	*t = pe
	return true
}

// Is matches a sentinel of the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// Sentinels, one per error code, for errors.Is.
var (
	ErrSessionNotFound = &Error{Code: string(protocol.CodeSessionNotFound)}
	ErrSessionBusy     = &Error{Code: string(protocol.CodeSessionBusy)}
	ErrSessionExited   = &Error{Code: string(protocol.CodeSessionExited)}
	ErrCommandTimeout  = &Error{Code: string(protocol.CodeCommandTimeout)}
	ErrCommandFailed   = &Error{Code: string(protocol.CodeCommandFailed)}
	ErrInvalidParams   = &Error{Code: string(protocol.CodeInvalidParams)}
	ErrInvalidState    = &Error{Code: string(protocol.CodeInvalidState)}
	ErrMethodNotFound  = &Error{Code: string(protocol.CodeMethodNotFound)}
	ErrLimitExceeded   = &Error{Code: string(protocol.CodeLimitExceeded)}
	ErrStreamNotFound  = &Error{Code: string(protocol.CodeStreamNotFound)}
	ErrAuthFailed      = &Error{Code: string(protocol.CodeAuthFailed)}
	ErrShuttingDown    = &Error{Code: string(protocol.CodeShuttingDown)}
	ErrInternal        = &Error{Code: string(protocol.CodeInternal)}
	// ErrCommandDenied: the command policy refused the command (SPEC
	// §16); the Error's Data holds the rule and reason.
	ErrCommandDenied = &Error{Code: string(protocol.CodeCommandDenied)}
)

// caller is the transport: one call, or a request whose notifications
// follow its answer.
type caller interface {
	call(ctx context.Context, method string, params, result any) error
	open(ctx context.Context, method string, params any) (json.RawMessage, notes, error)
	close() error
}

// notes are one stream's notifications, in order.
type notes interface {
	// next returns the next notification; it fails when ctx ends or the
	// connection is lost.
	next(ctx context.Context) (note, error)
	// stop drops what is still to come.
	stop()
}

// Client talks to one trl daemon. It is safe for concurrent use.
type Client struct {
	c caller
}

// Close closes the connection.
func (c *Client) Close() error { return c.c.close() }

// Call runs any method and decodes its data into result (nil: ignored).
func (c *Client) Call(ctx context.Context, method string, params, result any) error {
	return c.c.call(ctx, method, params, result)
}

// SessionOptions are session.create's parameters; zero values mean the
// daemon's defaults.
type SessionOptions struct {
	Name       string            `json:"name,omitempty"`
	Shell      string            `json:"shell,omitempty"`
	WorkingDir string            `json:"working_dir,omitempty"`
	Env        map[string]string `json:"env,omitempty"`
	TimeoutS   float64           `json:"timeout_s,omitempty"`
	Rows       int               `json:"rows,omitempty"`
	Cols       int               `json:"cols,omitempty"`
	// State, when set, is applied to the new shell (see State).
	State *ShellState `json:"state,omitempty"`
}

// CreateSession starts a shell session.
func (c *Client) CreateSession(ctx context.Context, o SessionOptions) (*SessionInfo, error) {
	var in SessionInfo
	return &in, c.c.call(ctx, protocol.MethodSessionCreate, o, &in)
}

// Session describes the session with that id or name.
func (c *Client) Session(ctx context.Context, ref string) (*SessionInfo, error) {
	var in SessionInfo
	return &in, c.c.call(ctx, protocol.MethodSessionInfo, map[string]any{"session_id": ref}, &in)
}

// Sessions lists the sessions.
func (c *Client) Sessions(ctx context.Context) ([]SessionInfo, error) {
	var out struct {
		Sessions []SessionInfo `json:"sessions"`
	}
	return out.Sessions, c.c.call(ctx, protocol.MethodSessionList, map[string]any{}, &out)
}

// DestroySession ends a session and every process it started; force
// ends it even while a command runs.
func (c *Client) DestroySession(ctx context.Context, ref string, force bool) error {
	return c.c.call(ctx, protocol.MethodSessionDestroy, map[string]any{"session_id": ref, "force": force}, nil)
}

// RunRequest is a command to run (exec.run / exec.stream).
type RunRequest struct {
	Session        string            `json:"session_id,omitempty"`
	Command        string            `json:"command"`
	TimeoutS       float64           `json:"timeout_s,omitempty"`
	Stdin          *string           `json:"stdin,omitempty"`
	Env            map[string]string `json:"env,omitempty"`
	MaxOutputBytes int64             `json:"max_output_bytes,omitempty"`
	// YieldMS and Until (docs/protocol.md, "Interactive programs"): nil Until means ["input"]: Run answers
	// waiting_input at a prompt; an empty one waits for the exit only.
	YieldMS int64    `json:"yield_ms,omitempty"`
	Until   []string `json:"until,omitempty"`
	Render  string   `json:"render,omitempty"`
	// Check makes an exit other than 0 an error: ErrCommandFailed (and a
	// timeout ErrCommandTimeout), the command's status in its Data.
	Check bool `json:"check,omitempty"`
}

// MarshalJSON keeps an empty Until (wait for the exit only) apart from a
// nil one (the default).
func (r RunRequest) MarshalJSON() ([]byte, error) {
	type plain RunRequest
	m := map[string]any{}
	b, _ := json.Marshal(plain(r))
	_ = json.Unmarshal(b, &m)
	if r.Until != nil {
		m["until"] = r.Until
	}
	return json.Marshal(m)
}

// Run runs a command and returns its status: at its end, or earlier when
// it waits for input, meets an until event or yields. If ctx ends first,
// the command is interrupted (exec.cancel, SIGINT) and ctx's error is
// returned.
func (c *Client) Run(ctx context.Context, r RunRequest) (*Status, error) {
	var st Status
	err := c.c.call(ctx, protocol.MethodExecRun, r, &st)
	if ctx.Err() != nil {
		c.interrupt(r.Session, "")
		return nil, ctx.Err()
	}
	return &st, err
}

// interrupt sends exec.cancel for a command whose caller gave up.
func (c *Client) interrupt(session, execID string) {
	ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
	defer cancel()
	_, _ = c.Cancel(ctx, execID, session, "SIGINT")
}

// InputItem is one item of Input: Text, Key (Enter, Tab, C-c …), Paste,
// or EOF.
type InputItem struct {
	Text  string
	Key   string
	Paste string
	EOF   bool
}

// MarshalJSON is the wire form: a string, or {"key"}, {"paste"}, {"eof"}.
func (it InputItem) MarshalJSON() ([]byte, error) {
	switch {
	case it.Key != "":
		return json.Marshal(map[string]string{"key": it.Key})
	case it.Paste != "":
		return json.Marshal(map[string]string{"paste": it.Paste})
	case it.EOF:
		return json.Marshal(map[string]bool{"eof": true})
	}
	return json.Marshal(it.Text)
}

// Text, Key, Paste and EOF build input items.
func Text(s string) InputItem  { return InputItem{Text: s} }
func Key(k string) InputItem   { return InputItem{Key: k} }
func Paste(s string) InputItem { return InputItem{Paste: s} }
func EOF() InputItem           { return InputItem{EOF: true} }

// InputRequest types into a running command (exec.input).
type InputRequest struct {
	ExecID         string      `json:"exec_id,omitempty"`
	Session        string      `json:"session_id,omitempty"`
	Input          []InputItem `json:"input"`
	YieldMS        int64       `json:"yield_ms,omitempty"`
	RequireWaiting bool        `json:"require_waiting,omitempty"`
	Secret         bool        `json:"secret,omitempty"`
	Render         string      `json:"render,omitempty"`
}

// Input types the items and returns the status as soon as the program
// waits again or exits.
func (c *Client) Input(ctx context.Context, r InputRequest) (*Status, error) {
	var st Status
	return &st, c.c.call(ctx, protocol.MethodExecInput, r, &st)
}

// WaitRequest waits for a command (exec.wait): ExecID is an id or "any".
type WaitRequest struct {
	ExecID    string   `json:"exec_id,omitempty"`
	ExecIDs   []string `json:"exec_ids,omitempty"`
	TimeoutMS int64    `json:"timeout_ms,omitempty"`
	Until     []string `json:"until,omitempty"`
	Render    string   `json:"render,omitempty"`
}

// Wait answers the first command that exits or reaches an until event,
// or reason "yield" at the timeout.
func (c *Client) Wait(ctx context.Context, r WaitRequest) (*Status, error) {
	var st Status
	return &st, c.c.call(ctx, protocol.MethodExecWait, r, &st)
}

// Screen returns a session's screen as text.
func (c *Client) Screen(ctx context.Context, session string) (*Screen, error) {
	var s Screen
	return &s, c.c.call(ctx, protocol.MethodSessionScreen, map[string]any{"session_id": session}, &s)
}

// Resize sets a session's terminal size.
func (c *Client) Resize(ctx context.Context, session string, rows, cols int) error {
	return c.c.call(ctx, protocol.MethodSessionResize, map[string]any{"session_id": session, "rows": rows, "cols": cols}, nil)
}

// Cancel signals a running command, by exec id or (execID "") the one
// running in session; signal "" is SIGINT. It reports whether something
// was signalled.
func (c *Client) Cancel(ctx context.Context, execID, session, signal string) (bool, error) {
	p := map[string]any{}
	if execID != "" {
		p["exec_id"] = execID
	} else if session != "" {
		p["session_id"] = session
	}
	if signal != "" {
		p["signal"] = signal
	}
	var out protocol.ExecCancelResult
	err := c.c.call(ctx, protocol.MethodExecCancel, p, &out)
	return out.Canceled, err
}

// StreamHandlers receive a stream's output as it is produced, in order,
// on the goroutine that called Stream.
type StreamHandlers struct {
	Stdout, Stderr func(p []byte)
	// Waiting is told when the command begins to wait for terminal input
	// (exec.waiting); answer it with Input.
	Waiting func(in protocol.InputWait)
}

// Stream runs a command with exec.stream, hands its output to h as it
// arrives, and returns its exit. If ctx ends first, the command is
// interrupted (exec.cancel, SIGINT).
func (c *Client) Stream(ctx context.Context, r RunRequest, h StreamHandlers) (*ExitNotification, error) {
	raw, follow, err := c.Open(ctx, protocol.MethodExecStream, r)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, err
	}
	var started protocol.ExecStreamStarted
	_ = json.Unmarshal(raw, &started)
	var exit ExitNotification
	err = follow(ctx, func(method string, params any) error {
		switch n := params.(type) {
		case protocol.OutputNotification:
			f := h.Stdout
			if n.Stream == "stderr" {
				f = h.Stderr
			}
			if f != nil {
				f([]byte(n.Data))
			}
		case protocol.WaitingNotification:
			if h.Waiting != nil {
				h.Waiting(n.Input)
			}
		case protocol.ExitNotification:
			exit = n
		}
		return nil
	})
	if ctx.Err() != nil {
		c.interrupt("", started.StreamID)
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, err
	}
	return &exit, nil
}

// Open sends a request whose notifications follow its answer
// (exec.stream, exec.attach): it returns the answer as sent and a Follow
// that delivers the notifications as protocol.OutputNotification and
// protocol.ExitNotification values until the exit. Call the Follow
// (once): until then the first notifications are kept for it.
func (c *Client) Open(ctx context.Context, method string, params any) (json.RawMessage, protocol.Follow, error) {
	raw, n, err := c.c.open(ctx, method, params)
	if err != nil {
		return nil, nil, err
	}
	return raw, follow(n), nil
}

// follow makes a protocol.Follow of a stream's notifications: each is
// decoded into its type and emitted; exec.exit ends it.
func follow(n notes) protocol.Follow {
	var once sync.Once
	return func(ctx context.Context, emit protocol.Emitter) error {
		first := false
		once.Do(func() { first = true })
		if !first {
			return errors.New("trl client: a stream's Follow runs once")
		}
		defer n.stop()
		for {
			m, err := n.next(ctx)
			if err != nil {
				return err
			}
			switch m.method {
			case protocol.NotifyExecOutput:
				err = relay[protocol.OutputNotification](m, emit)
			case protocol.NotifyExecWaiting:
				err = relay[protocol.WaitingNotification](m, emit)
			case protocol.NotifyExecApproval:
				err = relay[protocol.ApprovalNotification](m, emit)
			case protocol.NotifyExecExit:
				return relay[protocol.ExitNotification](m, emit)
			}
			if err != nil {
				return err
			}
		}
	}
}

// relay decodes a notification's params as a T and emits it.
func relay[T any](m note, emit protocol.Emitter) error {
	var v T
	if err := json.Unmarshal(m.params, &v); err != nil {
		return fmt.Errorf("trl client: unreadable %s: %w", m.method, err)
	}
	return emit(m.method, v)
}

// wireError turns a JSON-RPC error's data into an *Error.
func wireError(message string, data []byte) error {
	var d struct {
		Code string `json:"code"`
	}
	if len(data) > 0 {
		_ = json.Unmarshal(data, &d)
	}
	if d.Code == "" {
		d.Code = string(protocol.CodeInternal)
	}
	return &Error{Code: d.Code, Message: message, Data: data}
}

var errClosed = errors.New("trl client: connection closed")
