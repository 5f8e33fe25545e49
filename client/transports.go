package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
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

// maxPending bounds the notifications kept for a stream nobody follows
// yet (its Follow has not been called). Once it is followed, a full
// queue holds the connection's reader back instead: the daemon then
// slows the command's stream, as for any slow reader.
const maxPending = 4096

// Dial connects to a daemon's Unix socket (such as /tmp/trl-default.sock).
// When the connection is lost (the daemon restarted), the calls in flight
// fail and the next call dials the socket again.
func Dial(ctx context.Context, socket string) (*Client, error) {
	s := &socketCaller{socket: socket, subs: map[string]*sub{}, early: map[string][]note{}}
	conn, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.conn = conn
	return &Client{c: s}, nil
}

// socketCaller is JSON-RPC 2.0 over the socket with sourcegraph/jsonrpc2.
type socketCaller struct {
	socket string

	mu     sync.Mutex
	conn   *jsonrpc2.Conn
	closed bool
	subs   map[string]*sub
	// early holds notifications that came before their stream's answer
	// was read (the daemon writes the answer first, but the answer is
	// taken by the caller's goroutine, the notifications by the reader).
	early map[string][]note
}

func (s *socketCaller) dial(ctx context.Context) (*jsonrpc2.Conn, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", s.socket)
	if err != nil {
		return nil, fmt.Errorf("trl client: dial %s: %w", s.socket, err)
	}
	return jsonrpc2.NewConn(context.Background(), jsonrpc2.NewPlainObjectStream(nc), jsonrpc2.HandlerWithError(s.handle).SuppressErrClosed(), jsonrpc2.SetLogger(quiet)), nil
}

// quiet is the connections' logger: the client says nothing on its
// program's stderr. What jsonrpc2 would print there is an answer that
// came after its caller gave up (expected: Run interrupts the command and
// returns, and the command's answer follows) or a broken connection, which
// every caller sees as an error.
var quiet = log.New(io.Discard, "", 0)

func alive(c *jsonrpc2.Conn) bool {
	select {
	case <-c.DisconnectNotify():
		return false
	default:
		return true
	}
}

// connection returns the live connection, dialing the socket again when
// the last one was lost. No lock is held while dialing: of two callers
// that redial at once, one connection is kept and the other closed.
func (s *socketCaller) connection(ctx context.Context) (*jsonrpc2.Conn, error) {
	s.mu.Lock()
	c, closed := s.conn, s.closed
	s.mu.Unlock()
	if closed {
		return nil, errClosed
	}
	if alive(c) {
		return c, nil
	}
	nc, err := s.dial(ctx)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		nc.Close()
		return nil, errClosed
	case s.conn != c && alive(s.conn):
		won := s.conn
		s.mu.Unlock()
		nc.Close()
		return won, nil
	}
	s.conn = nc
	s.mu.Unlock()
	return nc, nil
}

type note struct {
	method string
	params json.RawMessage
}

// sub is one stream's queue of notifications, filled by the connection's
// reader and emptied by its Follow.
type sub struct {
	mu        sync.Mutex
	q         []note
	following bool
	ended     bool // exec.exit was queued
	gone      bool // the Follow returned: drop what comes
	ready     chan struct{}
	space     chan struct{}
	closed    <-chan struct{}
	remove    func()
}

func newSub(closed <-chan struct{}, remove func()) *sub {
	return &sub{ready: make(chan struct{}, 1), space: make(chan struct{}, 1), closed: closed, remove: remove}
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// push queues one notification; it runs on the connection's reader.
func (sb *sub) push(n note) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	for len(sb.q) >= maxPending && !sb.gone && n.method != protocol.NotifyExecExit {
		if !sb.following {
			return // nobody follows yet: keep the first maxPending
		}
		sb.mu.Unlock()
		select {
		case <-sb.space:
		case <-sb.closed:
		}
		sb.mu.Lock()
		select {
		case <-sb.closed:
			return
		default:
		}
	}
	if sb.gone || sb.ended {
		return
	}
	sb.q = append(sb.q, n)
	if n.method == protocol.NotifyExecExit {
		sb.ended = true
	}
	signal(sb.ready)
}

// next takes the next notification.
func (sb *sub) next(ctx context.Context) (note, error) {
	for {
		sb.mu.Lock()
		sb.following = true
		if len(sb.q) > 0 {
			n := sb.q[0]
			sb.q = sb.q[1:]
			sb.mu.Unlock()
			signal(sb.space)
			return n, nil
		}
		sb.mu.Unlock()
		select {
		case <-sb.ready:
		case <-ctx.Done():
			return note{}, ctx.Err()
		case <-sb.closed:
			return note{}, errClosed
		}
	}
}

func (sb *sub) stop() {
	sb.mu.Lock()
	sb.gone = true
	sb.q = nil
	sb.mu.Unlock()
	signal(sb.space)
	sb.remove()
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
	n := note{req.Method, append(json.RawMessage(nil), *req.Params...)}
	s.mu.Lock()
	sb := s.subs[id.StreamID]
	if sb == nil {
		if q := s.early[id.StreamID]; len(q) < maxPending || n.method == protocol.NotifyExecExit {
			s.early[id.StreamID] = append(q, n)
		}
		s.mu.Unlock()
		return nil, nil
	}
	s.mu.Unlock()
	sb.push(n)
	return nil, nil
}

func (s *socketCaller) call(ctx context.Context, method string, params, result any) error {
	conn, err := s.connection(ctx)
	if err != nil {
		return err
	}
	var raw json.RawMessage
	if err := conn.Call(ctx, method, params, &raw); err != nil {
		return convert(err)
	}
	if result == nil || len(raw) == 0 {
		return nil
	}
	return json.Unmarshal(raw, result)
}

func (s *socketCaller) open(ctx context.Context, method string, params any) (json.RawMessage, notes, error) {
	conn, err := s.connection(ctx)
	if err != nil {
		return nil, nil, err
	}
	var raw json.RawMessage
	if err := conn.Call(ctx, method, params, &raw); err != nil {
		return nil, nil, convert(err)
	}
	var st struct {
		StreamID string `json:"stream_id"`
	}
	if json.Unmarshal(raw, &st) != nil || st.StreamID == "" {
		return nil, nil, fmt.Errorf("trl client: %s answered without a stream_id: %s", method, clip(raw))
	}
	id := st.StreamID
	var sb *sub
	sb = newSub(conn.DisconnectNotify(), func() {
		s.mu.Lock()
		if s.subs[id] == sb {
			delete(s.subs, id)
		}
		s.mu.Unlock()
	})
	s.mu.Lock()
	s.subs[id] = sb
	early := s.early[id]
	delete(s.early, id)
	s.mu.Unlock()
	for _, n := range early {
		sb.push(n)
	}
	return raw, sb, nil
}

func (s *socketCaller) close() error {
	s.mu.Lock()
	s.closed = true
	c := s.conn
	s.mu.Unlock()
	return c.Close()
}

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
	base = strings.TrimSuffix(strings.TrimRight(base, "/"), "/rpc")
	return &Client{c: &httpCaller{url: base + "/rpc", token: token, hc: &http.Client{}}}
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
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      int             `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", 1, method, p})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+h.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/x-ndjson, application/json")
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

// open posts a streaming request. The request outlives ctx once its
// answer is read: from then on the Follow's context governs the body.
func (h *httpCaller) open(ctx context.Context, method string, params any) (json.RawMessage, notes, error) {
	reqCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	resp, err := h.post(reqCtx, method, params)
	if err != nil {
		stop()
		cancel()
		return nil, nil, err
	}
	r := bufio.NewReaderSize(resp.Body, 64<<10)
	m, err := first(r)
	if !stop() || err != nil {
		resp.Body.Close()
		cancel()
		if err == nil {
			err = ctx.Err()
		}
		return nil, nil, err
	}
	return m.Result, &httpNotes{r: r, body: resp.Body, cancel: cancel}, nil
}

// httpNotes reads a stream's notifications from the response's lines.
type httpNotes struct {
	r      *bufio.Reader
	body   io.Closer
	cancel context.CancelFunc
}

func (n *httpNotes) next(ctx context.Context) (note, error) {
	stop := context.AfterFunc(ctx, n.cancel)
	defer stop()
	for {
		line, err := n.r.ReadBytes('\n')
		if len(line) > 0 {
			var m rpcMessage
			if json.Unmarshal(line, &m) == nil && m.Method != "" {
				return note{m.Method, m.Params}, nil
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return note{}, ctx.Err()
			}
			return note{}, fmt.Errorf("trl client: the stream ended before its exit: %w", err)
		}
	}
}

func (n *httpNotes) stop() {
	n.cancel()
	n.body.Close()
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
