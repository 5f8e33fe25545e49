package client

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"

	"github.com/trl-project/trl/protocol"
)

// The Client is trl's typed API over the wire: the same calls, with the
// same types, that *runtime.Runtime serves in-process, so a front-end
// (trl mcp's bridge) runs on either. A cancelled context stops waiting
// for the answer; unlike Run and Stream, it never cancels the command.
// Errors the daemon answers are *Error, which errors.As and
// protocol.AsError read as a *protocol.Error of the same code.
var _ protocol.API = (*Client)(nil)

func (c *Client) SessionCreate(ctx context.Context, p protocol.SessionCreateParams) (protocol.SessionInfo, error) {
	return typed[protocol.SessionInfo](ctx, c, protocol.MethodSessionCreate, p)
}

func (c *Client) SessionList(ctx context.Context, p protocol.SessionListParams) (protocol.SessionListResult, error) {
	return typed[protocol.SessionListResult](ctx, c, protocol.MethodSessionList, p)
}

func (c *Client) SessionInfo(ctx context.Context, p protocol.SessionRef) (protocol.SessionInfo, error) {
	return typed[protocol.SessionInfo](ctx, c, protocol.MethodSessionInfo, p)
}

func (c *Client) SessionDestroy(ctx context.Context, p protocol.SessionDestroyParams) (protocol.SessionDestroyed, error) {
	return typed[protocol.SessionDestroyed](ctx, c, protocol.MethodSessionDestroy, p)
}

func (c *Client) SessionScreen(ctx context.Context, p protocol.SessionScreenParams) (protocol.Screen, error) {
	return typed[protocol.Screen](ctx, c, protocol.MethodSessionScreen, p)
}

func (c *Client) SessionResize(ctx context.Context, p protocol.SessionResizeParams) (protocol.SessionInfo, error) {
	return typed[protocol.SessionInfo](ctx, c, protocol.MethodSessionResize, p)
}

func (c *Client) SessionOutput(ctx context.Context, p protocol.SessionOutputParams) (protocol.SessionOutput, error) {
	return typed[protocol.SessionOutput](ctx, c, protocol.MethodSessionOutput, p)
}

func (c *Client) ExecRun(ctx context.Context, p protocol.ExecParams) (protocol.ExecStatus, error) {
	return typed[protocol.ExecStatus](ctx, c, protocol.MethodExecRun, p)
}

// ExecStream starts a command; the Follow delivers its output and exit.
func (c *Client) ExecStream(ctx context.Context, p protocol.ExecParams) (protocol.ExecStreamStarted, protocol.Follow, error) {
	var r protocol.ExecStreamStarted
	raw, f, err := c.Open(ctx, protocol.MethodExecStream, params{p})
	if err != nil {
		return r, nil, err
	}
	return r, f, json.Unmarshal(raw, &r)
}

func (c *Client) ExecRead(ctx context.Context, p protocol.ExecReadParams) (protocol.ExecReadResult, error) {
	return typed[protocol.ExecReadResult](ctx, c, protocol.MethodExecRead, p)
}

// ExecAttach follows a stream from the given offsets.
func (c *Client) ExecAttach(ctx context.Context, p protocol.ExecAttachParams) (protocol.ExecAttachResult, protocol.Follow, error) {
	var r protocol.ExecAttachResult
	raw, f, err := c.Open(ctx, protocol.MethodExecAttach, params{p})
	if err != nil {
		return r, nil, err
	}
	return r, f, json.Unmarshal(raw, &r)
}

func (c *Client) ExecCancel(ctx context.Context, p protocol.ExecCancelParams) (protocol.ExecCancelResult, error) {
	return typed[protocol.ExecCancelResult](ctx, c, protocol.MethodExecCancel, p)
}

func (c *Client) ExecInput(ctx context.Context, p protocol.ExecInputParams) (protocol.ExecStatus, error) {
	return typed[protocol.ExecStatus](ctx, c, protocol.MethodExecInput, p)
}

func (c *Client) ExecWait(ctx context.Context, p protocol.ExecWaitParams) (protocol.ExecStatus, error) {
	return typed[protocol.ExecStatus](ctx, c, protocol.MethodExecWait, p)
}

func (c *Client) ExecList(ctx context.Context, p protocol.ExecListParams) (protocol.ExecList, error) {
	return typed[protocol.ExecList](ctx, c, protocol.MethodExecList, p)
}

// ExecApprove decides a pending approval; the daemon accepts it only from
// an approver (a client dialed over HTTP with TRL_APPROVER_TOKEN).
func (c *Client) ExecApprove(ctx context.Context, p protocol.ExecApproveParams) (protocol.ExecApproveResult, error) {
	return typed[protocol.ExecApproveResult](ctx, c, protocol.MethodExecApprove, p)
}

func (c *Client) SystemPing(ctx context.Context, p protocol.PingParams) (protocol.PingResult, error) {
	return typed[protocol.PingResult](ctx, c, protocol.MethodSystemPing, p)
}

func (c *Client) SystemStats(ctx context.Context, p protocol.StatsParams) (protocol.StatsResult, error) {
	return typed[protocol.StatsResult](ctx, c, protocol.MethodSystemStats, p)
}

// typed makes one call with p's fields as the params and decodes the
// answer into R.
func typed[R any](ctx context.Context, c *Client, method string, p any) (R, error) {
	var r R
	err := c.c.call(ctx, method, params{p}, &r)
	return r, err
}

// params writes a protocol params struct as the daemon reads it: a field
// at its zero value is left out (absent means the default, and an empty
// session_id is refused where absent is not), a set pointer is kept even
// when it points at zero (yield_ms: 0, until: []), and exec.input's
// items take their wire form (a string, {"key"}, {"paste"}, {"eof"}).
type params struct{ v any }

func (p params) MarshalJSON() ([]byte, error) {
	v := reflect.ValueOf(p.v)
	if v.Kind() != reflect.Struct {
		return json.Marshal(p.v)
	}
	t := v.Type()
	var b bytes.Buffer
	b.WriteByte('{')
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fv := v.Field(i)
		if fv.IsZero() || (fv.Kind() == reflect.Map || fv.Kind() == reflect.Slice) && fv.Len() == 0 {
			continue
		}
		val := fv.Interface()
		if l, ok := val.(protocol.InputList); ok {
			val = inputWire(l)
		}
		enc, err := json.Marshal(val)
		if err != nil {
			return nil, err
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		key, _ := json.Marshal(name)
		b.Write(key)
		b.WriteByte(':')
		b.Write(enc)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// inputWire is exec.input's items in their wire form.
func inputWire(l protocol.InputList) []any {
	out := make([]any, 0, len(l))
	for _, it := range l {
		switch {
		case it.Text != nil:
			out = append(out, *it.Text)
		case it.Key != "":
			out = append(out, struct {
				Key string `json:"key"`
			}{it.Key})
		case it.Paste != nil:
			out = append(out, struct {
				Paste string `json:"paste"`
			}{*it.Paste})
		case it.EOF:
			out = append(out, struct {
				EOF bool `json:"eof"`
			}{true})
		}
	}
	return out
}

// The file methods as protocol.API declares them (docs/files.md); ReadFile,
// WriteFile and the others in files.go are the convenient forms.

func (c *Client) FSRead(ctx context.Context, p protocol.FSReadParams) (protocol.FSReadResult, error) {
	return typed[protocol.FSReadResult](ctx, c, protocol.MethodFSRead, p)
}

func (c *Client) FSWrite(ctx context.Context, p protocol.FSWriteParams) (protocol.FSWriteResult, error) {
	return typed[protocol.FSWriteResult](ctx, c, protocol.MethodFSWrite, p)
}

func (c *Client) FSEdit(ctx context.Context, p protocol.FSEditParams) (protocol.FSEditResult, error) {
	return typed[protocol.FSEditResult](ctx, c, protocol.MethodFSEdit, p)
}

func (c *Client) FSList(ctx context.Context, p protocol.FSListParams) (protocol.FSListResult, error) {
	return typed[protocol.FSListResult](ctx, c, protocol.MethodFSList, p)
}

func (c *Client) FSStat(ctx context.Context, p protocol.FSPathParams) (protocol.FSEntry, error) {
	return typed[protocol.FSEntry](ctx, c, protocol.MethodFSStat, p)
}

func (c *Client) FSMkdir(ctx context.Context, p protocol.FSMkdirParams) (protocol.FSPathResult, error) {
	return typed[protocol.FSPathResult](ctx, c, protocol.MethodFSMkdir, p)
}

func (c *Client) FSRemove(ctx context.Context, p protocol.FSRemoveParams) (protocol.FSRemoveResult, error) {
	return typed[protocol.FSRemoveResult](ctx, c, protocol.MethodFSRemove, p)
}

func (c *Client) FSMove(ctx context.Context, p protocol.FSMoveParams) (protocol.FSMoveResult, error) {
	return typed[protocol.FSMoveResult](ctx, c, protocol.MethodFSMove, p)
}

// SessionState reads a session's shell state (docs/state.md).
func (c *Client) SessionState(ctx context.Context, p protocol.SessionRef) (protocol.ShellState, error) {
	return typed[protocol.ShellState](ctx, c, protocol.MethodSessionState, p)
}

// SessionFork starts a session with another's state (docs/state.md).
func (c *Client) SessionFork(ctx context.Context, p protocol.SessionForkParams) (protocol.SessionInfo, error) {
	return typed[protocol.SessionInfo](ctx, c, protocol.MethodSessionFork, p)
}
