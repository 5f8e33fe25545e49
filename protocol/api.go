package protocol

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// API is trl's work as typed Go calls: the runtime implements it
// in-process, and the Go client over a socket or HTTP. Every front-end
// (the JSON-RPC method table, MCP, the console, the gateway adapter, the
// recorder) calls it with these types; JSON lives at the wire only.
//
// Who calls travels in the context (WithCaller): the transport and actor
// for metrics and the audit log, and the isolation key an in-process
// caller may set.
type API interface {
	SessionCreate(ctx context.Context, p SessionCreateParams) (SessionInfo, error)
	SessionList(ctx context.Context, p SessionListParams) (SessionListResult, error)
	SessionInfo(ctx context.Context, p SessionRef) (SessionInfo, error)
	SessionDestroy(ctx context.Context, p SessionDestroyParams) (SessionDestroyed, error)
	SessionScreen(ctx context.Context, p SessionScreenParams) (Screen, error)
	SessionResize(ctx context.Context, p SessionResizeParams) (SessionInfo, error)
	SessionOutput(ctx context.Context, p SessionOutputParams) (SessionOutput, error)
	SessionState(ctx context.Context, p SessionRef) (ShellState, error)
	SessionFork(ctx context.Context, p SessionForkParams) (SessionInfo, error)

	ExecRun(ctx context.Context, p ExecParams) (ExecStatus, error)
	// ExecStream starts a command and returns at once; the returned
	// Follow sends its output and exit as notifications.
	ExecStream(ctx context.Context, p ExecParams) (ExecStreamStarted, Follow, error)
	ExecRead(ctx context.Context, p ExecReadParams) (ExecReadResult, error)
	ExecAttach(ctx context.Context, p ExecAttachParams) (ExecAttachResult, Follow, error)
	ExecCancel(ctx context.Context, p ExecCancelParams) (ExecCancelResult, error)
	ExecInput(ctx context.Context, p ExecInputParams) (ExecStatus, error)
	ExecWait(ctx context.Context, p ExecWaitParams) (ExecStatus, error)
	ExecList(ctx context.Context, p ExecListParams) (ExecList, error)
	ExecApprove(ctx context.Context, p ExecApproveParams) (ExecApproveResult, error)

	FSRead(ctx context.Context, p FSReadParams) (FSReadResult, error)
	FSWrite(ctx context.Context, p FSWriteParams) (FSWriteResult, error)
	FSEdit(ctx context.Context, p FSEditParams) (FSEditResult, error)
	FSList(ctx context.Context, p FSListParams) (FSListResult, error)
	FSStat(ctx context.Context, p FSPathParams) (FSEntry, error)
	FSMkdir(ctx context.Context, p FSMkdirParams) (FSPathResult, error)
	FSRemove(ctx context.Context, p FSRemoveParams) (FSRemoveResult, error)
	FSMove(ctx context.Context, p FSMoveParams) (FSMoveResult, error)

	SystemPing(ctx context.Context, p PingParams) (PingResult, error)
	SystemStats(ctx context.Context, p StatsParams) (StatsResult, error)
}

// Follow sends a request's notifications through emit until they are
// done or ctx ends (the client went away; what it watches goes on).
type Follow func(ctx context.Context, emit Emitter) error

// Parameters of the methods that take none (an empty object, or absent).
type (
	SessionListParams struct{}
	PingParams        struct{}
	StatsParams       struct{}
)

// Caller is who makes a call, carried in its context.
type Caller struct {
	// Transport names the front-end for the metrics: "unix", "http",
	// "stdio", "mcp", "console", "gateway", ...
	Transport string
	// Actor names who asked, for the audit log: the socket peer's uid
	// and pid, an HTTP remote address, "console", "mcp".
	Actor string
	// IsolationKey is set only by in-process callers (the gateway, with
	// its tenant and workspace), never from the wire: under `trl serve
	// --isolate`, sessions created with one key share one uid.
	IsolationKey string
	// Approver is set by a front-end that authenticated a person allowed
	// to decide approvals (HTTP with TRL_APPROVER_TOKEN, the console with
	// --console-approve): never from the agent's token or the socket.
	Approver bool
	// ApprovalKey, set by an in-process caller (the gateway, with its
	// toolCallId), makes a retried call share the first call's approval:
	// a person is never asked twice for one call.
	ApprovalKey string
	// InputEnded, set by stdio, is done once its input has ended: nothing
	// more can be typed into a command that waits for input. (A socket
	// connection's end of input is not it: another connection can still
	// type into a command by exec_id.)
	InputEnded context.Context
}

type callerKey struct{}

// WithCaller returns ctx carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the Caller ctx carries (the zero Caller if none).
func CallerFrom(ctx context.Context) Caller {
	c, _ := ctx.Value(callerKey{}).(Caller)
	return c
}

// Signal names a signal: "SIGINT", "INT", "TERM", ... or a number ("9").
// On the wire it is a string or a number.
type Signal string

// UnmarshalJSON accepts a string or a number.
func (s *Signal) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var v string
		if err := json.Unmarshal(b, &v); err != nil {
			return err
		}
		*s = Signal(v)
		return nil
	}
	if string(b) == "null" {
		*s = ""
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return Errorf(CodeInvalidParams, "signal must be a name such as \"SIGINT\" or a number, got %s", clip(b))
	}
	if _, err := strconv.Atoi(n.String()); err != nil {
		return Errorf(CodeInvalidParams, "signal %s is not a signal name (SIGINT, TERM, KILL, HUP, ...) or a number from 1 to 64", clip(b))
	}
	*s = Signal(n.String())
	return nil
}

// Number is the signal s names, given as a name ("SIGINT", "INT", case
// ignored) or a number; empty means SIGINT. A name or number that is no
// signal is INVALID_PARAMS.
func (s Signal) Number() (unix.Signal, error) {
	if s == "" {
		return unix.SIGINT, nil
	}
	if n, err := strconv.Atoi(string(s)); err == nil {
		if n >= 1 && n <= 64 {
			return unix.Signal(n), nil
		}
		return 0, Errorf(CodeInvalidParams, "signal %d is not a signal name (SIGINT, TERM, KILL, HUP, ...) or a number from 1 to 64", n)
	}
	name := strings.ToUpper(strings.TrimSpace(string(s)))
	if !strings.HasPrefix(name, "SIG") {
		name = "SIG" + name
	}
	if sig := unix.SignalNum(name); sig != 0 {
		return sig, nil
	}
	return 0, Errorf(CodeInvalidParams, "signal %s is not a signal name (SIGINT, TERM, KILL, HUP, ...) or a number from 1 to 64", clipString(strconv.Quote(string(s))))
}

// InputList is exec.input's input: on the wire a string, or a list of
// strings and {"key"}, {"paste"}, {"eof": true} objects.
type InputList []InputItem

// UnmarshalJSON accepts a string or a list.
func (l *InputList) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = nil
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var one InputItem
		if err := json.Unmarshal(b, &one); err != nil {
			return Errorf(CodeInvalidParams, "input: %v", err)
		}
		*l = InputList{one}
		return nil
	}
	var list []InputItem
	if err := json.Unmarshal(b, &list); err != nil {
		return Errorf(CodeInvalidParams, "input must be a string or a list of strings and {\"key\"}, {\"paste\"}, {\"eof\": true} objects: %v", err)
	}
	if list == nil {
		list = []InputItem{}
	}
	*l = list
	return nil
}

// Text is an InputItem typed as is.
func Text(s string) InputItem { return InputItem{Text: &s} }

// Key is an InputItem naming a key ("Enter", "C-c", ...).
func Key(name string) InputItem { return InputItem{Key: name} }
