package protocol

import (
	"bytes"
	"encoding/json"
)

// Dialect is the envelope a request came in, and so the one its response
// and notifications go out in.
type Dialect int

const (
	// TRL is seed 001's envelope: {"id","method","params"} answered by
	// {"id","ok","data"|"error"}.
	TRL Dialect = iota
	// JSONRPC is JSON-RPC 2.0, chosen by "jsonrpc":"2.0" in the request.
	JSONRPC
)

// Request is one decoded request.
type Request struct {
	Dialect Dialect
	// ID is the request's id exactly as the client wrote it (a JSON string
	// or number), echoed back byte for byte; nil when the request had none
	// (or, in TRL, had null). A JSON-RPC request with an explicit "id":null
	// keeps ID == "null": it is not a notification and is answered.
	ID     json.RawMessage
	Method string
	// Params is the raw params object; nil when absent or null.
	Params json.RawMessage
}

// IsNotification reports whether the request expects no response: a
// JSON-RPC 2.0 request without an id.
func (r *Request) IsNotification() bool { return r.Dialect == JSONRPC && r.ID == nil }

var null = json.RawMessage("null")

// wireRequest is the union of both dialects' request fields.
type wireRequest struct {
	JSONRPC *json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage  `json:"id"`
	Method  *json.RawMessage `json:"method"`
	Params  json.RawMessage  `json:"params"`
}

// Decode parses one message. When the message is not a usable request it
// returns a partial Request (dialect, and id when one could be read) with
// the *Error to answer it with.
func Decode(msg []byte) (*Request, *Error) {
	req := &Request{Dialect: TRL}
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 || msg[0] != '{' {
		if bytes.Contains(msg, []byte(`"jsonrpc"`)) {
			req.Dialect = JSONRPC
		}
		return req, ParseError("message is not a JSON object; send one JSON object per request, e.g. {\"id\":1,\"method\":\"system.ping\"}")
	}
	var w wireRequest
	if err := json.Unmarshal(msg, &w); err != nil {
		if bytes.Contains(msg, []byte(`"jsonrpc"`)) {
			req.Dialect = JSONRPC
		}
		return req, ParseError("message is not valid JSON: %v", err)
	}
	if w.JSONRPC != nil {
		req.Dialect = JSONRPC
	}
	switch {
	case len(w.ID) == 0:
		// No id: answered with id null in TRL; a notification in JSON-RPC.
	case string(w.ID) == "null":
		if req.Dialect == JSONRPC {
			// JSON-RPC 2.0: only a request *without* an id member is a
			// notification; "id":null is a request answered with id null.
			req.ID = null
		}
	case w.ID[0] == '"' || w.ID[0] == '-' || (w.ID[0] >= '0' && w.ID[0] <= '9'):
		// Echoed byte for byte, except that invalid UTF-8 (which can only
		// sit inside a string) becomes U+FFFD so every line we write is
		// UTF-8, as SPEC §3 asks.
		req.ID = bytes.ToValidUTF8(w.ID, []byte("\uFFFD"))
	default:
		return req, InvalidRequest(`"id" must be a string or a number, got %s`, clip(w.ID))
	}
	// After the id is read, so that the answer carries it: a client with
	// requests in flight could not match an answer with id null. The
	// message is scanned once; params again only when it holds a
	// duplicate, to say where.
	if k, dup := duplicateKey(msg); dup {
		if pk, inParams := duplicateKey(w.Params); inParams {
			return req, Errorf(CodeInvalidParams, "key %q appears twice in one object of params; send each key once", clipString(pk))
		}
		if k == "id" {
			req.ID = nil // which one the client meant cannot be told
		}
		return req, InvalidRequest("key %q appears twice in one object; send each key once", clipString(k))
	}
	if w.JSONRPC != nil && string(*w.JSONRPC) != `"2.0"` {
		return req, InvalidRequest(`"jsonrpc" must be "2.0", got %s`, clip(*w.JSONRPC))
	}
	if w.Method == nil {
		return req, InvalidRequest(`request has no "method"; e.g. {"id":1,"method":"system.ping"}`)
	}
	if err := json.Unmarshal(*w.Method, &req.Method); err != nil || req.Method == "" {
		return req, InvalidRequest(`"method" must be a non-empty string, got %s`, clip(*w.Method))
	}
	if len(w.Params) > 0 && string(w.Params) != "null" {
		if w.Params[0] != '{' {
			return req, Errorf(CodeInvalidParams, `"params" must be a JSON object, got %s`, clip(w.Params))
		}
		req.Params = w.Params
	}
	return req, nil
}

func clipString(s string) string { return clip([]byte(s)) }

// clip shortens raw JSON quoted in an error message.
func clip(raw []byte) string {
	const max = 64
	if len(raw) > max {
		return string(raw[:max]) + "…"
	}
	return string(raw)
}

// EncodeResult encodes a success response to req carrying data.
func EncodeResult(req *Request, data any) ([]byte, error) {
	m, err := Result(req, data)
	if err != nil {
		return nil, err
	}
	return m.Bytes(), nil
}

// EncodeError encodes an error response to req (which may be a partial
// request from Decode, whose id may be nil).
func EncodeError(req *Request, e *Error) []byte { return ErrorMessage(req, e).Bytes() }

// rpcData is a JSON-RPC error's data: {"code":"SESSION_NOT_FOUND", ...}
// with the fields of e.Data merged in when it is an object.
func rpcData(e *Error) []byte {
	code := mustMarshal(string(e.Code))
	if e.Data == nil {
		return append(append([]byte(`{"code":`), code...), '}')
	}
	extra := mustMarshal(e.Data)
	if string(extra) == "{}" {
		return append(append([]byte(`{"code":`), code...), '}')
	}
	if len(extra) > 2 && extra[0] == '{' {
		out := append([]byte(`{"code":`), code...)
		out = append(out, ',')
		return append(out, extra[1:]...)
	}
	out := append([]byte(`{"code":`), code...)
	out = append(out, `,"detail":`...)
	out = append(out, extra...)
	return append(out, '}')
}

// EncodeNotification encodes a server notification (no id) in dialect d.
func EncodeNotification(d Dialect, method string, params any) ([]byte, error) {
	return AppendNotification(nil, d, method, params)
}

// Notifier encodes the notifications of one request, in order, into one
// reused buffer: a stream sends thousands of them.
type Notifier struct {
	d   Dialect
	buf []byte
}

// NewNotifier returns a Notifier for a request of dialect d.
func NewNotifier(d Dialect) *Notifier { return &Notifier{d: d} }

// Encode returns the notification's line, valid until the next call.
func (n *Notifier) Encode(method string, params any) ([]byte, error) {
	line, err := AppendNotification(n.buf[:0], n.d, method, params)
	if err == nil && cap(line) <= 1<<20 { // do not keep a huge buffer
		n.buf = line
	}
	return line, err
}

// AppendNotification is EncodeNotification appending to dst.
func AppendNotification(dst []byte, d Dialect, method string, params any) ([]byte, error) {
	if n, ok := params.(OutputNotification); ok && method == NotifyExecOutput {
		return encodeOutput(dst, d, &n), nil
	}
	body, err := marshal(params)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.Grow(len(body) + len(method) + 48)
	if d == JSONRPC {
		b.WriteString(`{"jsonrpc":"2.0","method":`)
	} else {
		b.WriteString(`{"method":`)
	}
	b.Write(mustMarshal(method))
	b.WriteString(`,"params":`)
	b.Write(body)
	b.WriteString("}\n")
	return append(dst, b.Bytes()...), nil
}

func idOrNull(id json.RawMessage) []byte {
	if id == nil {
		return null
	}
	return id
}

// marshal encodes v without HTML escaping, so output bytes such as '<' and
// '&' reach the client as themselves. Invalid UTF-8 in strings becomes
// U+FFFD, as SPEC §3 asks.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(b.Bytes(), "\n"), nil
}

func mustMarshal(v any) []byte {
	b, err := marshal(v)
	if err != nil {
		b, _ = marshal(err.Error())
	}
	return b
}
