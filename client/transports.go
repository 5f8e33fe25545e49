package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"github.com/trl-project/trl/protocol"
)

// cancelTimeout bounds the exec.cancel a given-up call sends.
const cancelTimeout = 5 * time.Second

// maxPending bounds the notifications kept for a stream whose exec.stream
// answer the caller has not taken yet.
const maxPending = 4096

// Dial connects to a daemon's Unix socket (such as /tmp/trl-default.sock).
func Dial(ctx context.Context, socket string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return nil, fmt.Errorf("trl client: dial %s: %w", socket, err)
	}
	s := &socketCaller{subs: map[string]*sub{}, pending: map[string][]note{}}
	s.conn = jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(nc), jsonrpc2.HandlerWithError(s.handle).SuppressErrClosed())
	return &Client{c: s}, nil
}

// socketCaller is JSON-RPC 2.0 over the socket with sourcegraph/jsonrpc2.
type socketCaller struct {
	conn *jsonrpc2.Conn

	mu      sync.Mutex
	subs    map[string]*sub
	pending map[string][]note
}

type note struct {
	method string
	params json.RawMessage
}

// sub is one Stream call's share of the notifications.
type sub struct {
	deliver func(method string, params json.RawMessage) bool
	done    chan struct{}
	ended   bool
}

// handle receives the daemon's notifications on the connection's reader,
// one at a time and in order, and routes them by stream_id.
func (s *socketCaller) handle(_ context.Context, _ *jsonrpc2.Conn, req *jsonrpc2.Request) (any, error) {
	if !req.Notif || req.Params == nil {
		return nil, nil
	}
	var id struct {
		StreamID string `json:"stream_id"`
	}
	if json.Unmarshal(*req.Params, &id) != nil || id.StreamID == "" {
		return nil, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sb := s.subs[id.StreamID]; sb != nil {
		s.feed(id.StreamID, sb, note{req.Method, *req.Params})
		return nil, nil
	}
	if q := s.pending[id.StreamID]; len(q) < maxPending {
		s.pending[id.StreamID] = append(q, note{req.Method, append(json.RawMessage(nil), *req.Params...)})
	}
	return nil, nil
}

// feed delivers one notification; called with mu held.
func (s *socketCaller) feed(id string, sb *sub, n note) {
	if sb.ended {
		return
	}
	if sb.deliver(n.method, n.params) {
		sb.ended = true
		close(sb.done)
		delete(s.subs, id)
	}
}

func (s *socketCaller) call(ctx context.Context, method string, params, result any) error {
	var raw json.RawMessage
	if err := s.conn.Call(ctx, method, params, &raw); err != nil {
		return convert(err)
	}
	if result == nil || len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, result)
}

func (s *socketCaller) stream(ctx context.Context, params any, started func(json.RawMessage) error, deliver func(string, json.RawMessage) bool) error {
	var raw json.RawMessage
	if err := s.conn.Call(ctx, protocol.MethodExecStream, params, &raw); err != nil {
		return convert(err)
	}
	if err := started(raw); err != nil {
		return err
	}
	var st struct {
		StreamID string `json:"stream_id"`
	}
	_ = json.Unmarshal(raw, &st)
	sb := &sub{deliver: deliver, done: make(chan struct{})}
	s.mu.Lock()
	s.subs[st.StreamID] = sb
	for _, n := range s.pending[st.StreamID] {
		s.feed(st.StreamID, sb, n)
	}
	delete(s.pending, st.StreamID)
	s.mu.Unlock()
	select {
	case <-sb.done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.subs, st.StreamID)
		s.mu.Unlock()
		return ctx.Err()
	case <-s.conn.DisconnectNotify():
		return errClosed
	}
}

func (s *socketCaller) close() error { return s.conn.Close() }

// convert turns jsonrpc2's error into an *Error.
func convert(err error) error {
	var je *jsonrpc2.Error
	if errors.As(err, &je) {
		var data []byte
		if je.Data != nil {
			data = *je.Data
		}
		return wireError(je.Message, data)
	}
	if errors.Is(err, jsonrpc2.ErrClosed) {
		return errClosed
	}
	return err
}

// DialHTTP returns a client of a daemon's HTTP listener (base such as
// http://127.0.0.1:8765) with its bearer token. Each call is one POST to
// /rpc; a stream reads the response's lines as they come.
func DialHTTP(base, token string) *Client {
	return &Client{c: &httpCaller{url: strings.TrimRight(base, "/") + "/rpc", token: token, hc: &http.Client{}}}
}

type httpCaller struct {
	url, token string
	hc         *http.Client
}

type rpcMessage struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func (h *httpCaller) post(ctx context.Context, method string, params any) (*http.Response, error) {
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.hc.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, &Error{Code: string(protocol.CodeAuthFailed), Message: "the daemon refused the bearer token"}
	}
	return resp, nil
}

// first reads the response message from r.
func first(r *bufio.Reader) (*rpcMessage, error) {
	line, err := r.ReadBytes('\n')
	if err != nil && len(line) == 0 {
		return nil, fmt.Errorf("trl client: no answer: %w", err)
	}
	var m rpcMessage
	if err := json.Unmarshal(line, &m); err != nil {
		return nil, fmt.Errorf("trl client: unreadable answer %q: %w", clip(line), err)
	}
	if m.Error != nil {
		return nil, wireError(m.Error.Message, m.Error.Data)
	}
	return &m, nil
}

func (h *httpCaller) call(ctx context.Context, method string, params, result any) error {
	resp, err := h.post(ctx, method, params)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	m, err := first(bufio.NewReader(io.LimitReader(resp.Body, 1<<30)))
	if err != nil {
		return err
	}
	if result == nil || len(m.Result) == 0 {
		return nil
	}
	return json.Unmarshal(m.Result, result)
}

func (h *httpCaller) stream(ctx context.Context, params any, started func(json.RawMessage) error, deliver func(string, json.RawMessage) bool) error {
	resp, err := h.post(ctx, protocol.MethodExecStream, params)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	m, err := first(r)
	if err != nil {
		return err
	}
	if err := started(m.Result); err != nil {
		return err
	}
	for {
		line, err := r.ReadBytes('\n')
		if len(line) > 0 {
			var n rpcMessage
			if json.Unmarshal(line, &n) == nil && n.Method != "" && deliver(n.Method, n.Params) {
				return nil
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("trl client: the stream ended before its exit: %w", err)
		}
	}
}

func (h *httpCaller) close() error {
	h.hc.CloseIdleConnections()
	return nil
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}
