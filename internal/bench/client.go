package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// caller is one client connection that makes calls one at a time: the
// socket Conn (either dialect) or HTTPClient.
type caller interface {
	Call(method string, params, out any) error
	Close() error
}

// CallError is a response with ok:false (or a JSON-RPC error).
type CallError struct {
	Code    string
	Message string
}

func (e *CallError) Error() string { return e.Code + ": " + e.Message }

// Note is a server notification: exec.output or exec.exit.
type Note struct {
	Method string `json:"-"`
	// At is when the client read it.
	At          time.Time `json:"-"`
	StreamID    string    `json:"stream_id"`
	Seq         int64     `json:"seq"`
	Stream      string    `json:"stream"`
	Data        string    `json:"data"`
	Offset      int64     `json:"offset"`
	LostBytes   int64     `json:"lost_bytes"`
	ExitCode    int       `json:"exit_code"`
	Canceled    bool      `json:"canceled"`
	TimedOut    bool      `json:"timed_out"`
	StdoutBytes int64     `json:"stdout_bytes"`
}

// message is any line the daemon writes, in either dialect. Decoding it in
// one pass keeps the client's own cost low and equal for every method.
type message struct {
	ID     json.RawMessage `json:"id"`
	OK     *bool           `json:"ok"`
	Data   json.RawMessage `json:"data"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Data    struct {
			Code string `json:"code"`
		} `json:"data"`
	} `json:"error"`
	Method string `json:"method"`
	Params *Note  `json:"params"`
}

// result returns the payload of a response, or its error.
func (m *message) result(out any) error {
	if m.Error != nil {
		code := m.Error.Data.Code
		if code == "" {
			code = string(bytes.Trim(m.Error.Code, `"`))
		}
		return &CallError{Code: code, Message: m.Error.Message}
	}
	payload := m.Data
	if m.Result != nil {
		payload = m.Result
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(payload, out)
}

type request struct {
	JSONRPC string `json:"jsonrpc,omitempty"`
	ID      int    `json:"id"`
	Method  string `json:"method"`
	Params  any    `json:"params,omitempty"`
}

// Conn is one socket connection. It is synchronous, with no reader
// goroutine: a call writes its request and reads lines until its response
// arrives, queueing notifications on the way, so a measured round trip
// holds no goroutine hand-off of the client's own.
type Conn struct {
	conn    net.Conn
	r       *bufio.Reader
	jsonrpc bool
	next    int
	notes   []*Note
	line    []byte
}

// Dial connects to the daemon's socket. With jsonrpc the connection
// speaks the JSON-RPC 2.0 dialect.
func Dial(socket string, jsonrpc bool) (*Conn, error) {
	c, err := net.Dial("unix", socket)
	if err != nil {
		return nil, err
	}
	return &Conn{conn: c, r: bufio.NewReaderSize(c, 256<<10), jsonrpc: jsonrpc}, nil
}

// Close closes the connection.
func (c *Conn) Close() error { return c.conn.Close() }

// Deadline bounds every read and write on the connection from now on, so
// that a daemon that stops answering fails a measurement rather than
// hanging it.
func (c *Conn) Deadline(d time.Duration) { c.conn.SetDeadline(time.Now().Add(d)) }

// Send writes a request and returns its id.
func (c *Conn) Send(method string, params any) (int, error) {
	c.next++
	req := request{ID: c.next, Method: method, Params: params}
	if c.jsonrpc {
		req.JSONRPC = "2.0"
	}
	b, err := json.Marshal(req)
	if err != nil {
		return 0, err
	}
	_, err = c.conn.Write(append(b, '\n'))
	return c.next, err
}

// Wait reads until the response to id and decodes its payload into out.
func (c *Conn) Wait(id int, out any) error {
	want := strconv.Itoa(id)
	for {
		m, err := c.read()
		if err != nil {
			return err
		}
		if m.Method != "" && m.ID == nil && m.Params != nil {
			c.notes = append(c.notes, m.Params)
			continue
		}
		if string(m.ID) != want {
			return fmt.Errorf("response to request %s while waiting for %s", m.ID, want)
		}
		return m.result(out)
	}
}

// Call is Send then Wait.
func (c *Conn) Call(method string, params, out any) error {
	id, err := c.Send(method, params)
	if err != nil {
		return err
	}
	return c.Wait(id, out)
}

// Next returns the next notification.
func (c *Conn) Next() (*Note, error) {
	if len(c.notes) > 0 {
		n := c.notes[0]
		c.notes = c.notes[1:]
		return n, nil
	}
	m, err := c.read()
	if err != nil {
		return nil, err
	}
	if m.Method == "" || m.Params == nil {
		return nil, fmt.Errorf("unexpected response %s while waiting for a notification", m.ID)
	}
	return m.Params, nil
}

func (c *Conn) read() (*message, error) {
	c.line = c.line[:0]
	for {
		part, err := c.r.ReadSlice('\n')
		c.line = append(c.line, part...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			if err == io.EOF {
				err = errors.New("the daemon closed the connection")
			}
			return nil, err
		}
		break
	}
	at := time.Now()
	if n, ok := decodeOutput(c.line); ok {
		n.At = at
		return &message{Method: n.Method, Params: n}, nil
	}
	var m message
	if err := json.Unmarshal(c.line, &m); err != nil {
		return nil, fmt.Errorf("daemon wrote a line that is not JSON (%v): %.200q", err, c.line)
	}
	if m.Params != nil {
		m.Params.Method, m.Params.At = m.Method, at
	}
	return &m, nil
}

// HTTPClient posts each call to the daemon's /rpc over one keep-alive
// connection.
type HTTPClient struct {
	url   string
	token string
	hc    *http.Client
	next  int
}

// NewHTTPClient returns a client for the daemon listening on addr
// (host:port) that authenticates with token.
func NewHTTPClient(addr, token string) *HTTPClient {
	tr := &http.Transport{MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
	return &HTTPClient{url: "http://" + addr + "/rpc", token: token, hc: &http.Client{Transport: tr, Timeout: time.Minute}}
}

// Call posts one request and decodes its response.
func (h *HTTPClient) Call(method string, params, out any) error {
	h.next++
	b, err := json.Marshal(request{ID: h.next, Method: method, Params: params})
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, h.url, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+h.token)
	resp, err := h.hc.Do(req)
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	var m message
	if err := json.Unmarshal(body, &m); err != nil || (m.OK == nil && m.Error == nil && m.Result == nil) {
		return fmt.Errorf("POST /rpc: HTTP %d: %.200q", resp.StatusCode, body)
	}
	return m.result(out)
}

// Close drops the keep-alive connection.
func (h *HTTPClient) Close() error {
	h.hc.CloseIdleConnections()
	return nil
}
