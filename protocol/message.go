package protocol

import (
	"bytes"
	"io"
	"strconv"
	"sync"
	"unicode/utf8"
)

// Message is one encoded message ready to send: a response or a
// notification. A message whose payload carries command output (an
// ExecStatus, as a result or as an error's data, or an ExecReadResult,
// whose page may be 16 MiB) is encoded while it is
// written, in pieces of about 64 KiB, so however large the output — 64 MiB
// of NUL bytes encodes as 384 MiB — it is never held encoded whole. Every
// other message is held as bytes.
type Message struct {
	head    []byte
	space   [64]byte      // holds head when it is short: one allocation less
	payload fieldsEncoder // nil: head is the whole message
	open    bool          // payload's fields follow head without a '{'
	tail    string
}

// fieldsEncoder is a payload encoded by hand, without reflection: its
// fields, between the braces the caller writes.
type fieldsEncoder interface {
	encodeFields(e *encoder)
}

// Line is a Message of bytes already encoded (one line, ending in "\n").
func Line(b []byte) *Message { return &Message{head: b} }

// WriteTo writes the message to w. Its only errors are w's.
func (m *Message) WriteTo(w io.Writer) (int64, error) {
	if m.payload == nil {
		n, err := w.Write(m.head)
		return int64(n), err
	}
	bp := pieces.Get().(*[]byte)
	e := encoder{w: w, buf: (*bp)[:0]}
	m.encode(&e)
	e.flush()
	if cap(e.buf) <= pieceCap {
		*bp = e.buf
		pieces.Put(bp)
	}
	return e.n, e.err
}

// Len is the message's length in bytes, or -1 when it is encoded while
// written (a result carrying command output).
func (m *Message) Len() int {
	if m.payload != nil {
		return -1
	}
	return len(m.head)
}

// Bytes returns the whole message, encoded at once into one buffer.
func (m *Message) Bytes() []byte {
	if m.payload == nil {
		return m.head
	}
	e := encoder{buf: make([]byte, 0, len(m.head)+len(m.tail)+payloadSize(m.payload))}
	m.encode(&e)
	return e.buf
}

func (m *Message) encode(e *encoder) {
	e.raw(m.head)
	if !m.open {
		e.buf = append(e.buf, '{')
	}
	m.payload.encodeFields(e)
	e.buf = append(e.buf, '}')
	e.buf = append(e.buf, m.tail...)
}

// payloadSize guesses a payload's encoded size, so that Bytes allocates
// once for plain text.
func payloadSize(p fieldsEncoder) int {
	switch p := p.(type) {
	case *ExecStatus:
		return len(p.Stdout) + len(p.Stdout)/16 + len(p.Stderr) + len(p.Stderr)/16 + len(p.Cwd) + 512
	case *ExecReadResult:
		return len(p.Data) + len(p.Data)/16 + 256
	case *FSReadResult:
		return len(p.Data) + len(p.Data)/16 + len(p.Path) + 256
	}
	return 512
}

// Result is the success response to req carrying data. Its error says
// that data cannot be encoded as JSON; nothing was written then.
func Result(req *Request, data any) (*Message, error) {
	m := &Message{tail: "}\n"}
	head := m.space[:0]
	if req.Dialect == JSONRPC {
		head = append(head, `{"jsonrpc":"2.0","id":`...)
		head = append(head, idOrNull(req.ID)...)
		head = append(head, `,"result":`...)
	} else {
		head = append(head, `{"id":`...)
		head = append(head, idOrNull(req.ID)...)
		head = append(head, `,"ok":true,"data":`...)
	}
	if p := asFields(data); p != nil {
		m.head, m.payload = head, p
		return m, nil
	}
	body, err := marshal(data)
	if err != nil {
		return nil, err
	}
	line := make([]byte, 0, len(head)+len(body)+2)
	m.head = append(append(append(line, head...), body...), "}\n"...)
	return m, nil
}

// ErrorMessage is the error response to req (which may be a partial
// request from Decode, whose id may be nil).
func ErrorMessage(req *Request, e *Error) *Message {
	var b bytes.Buffer
	p := asFields(e.Data)
	if req.Dialect == JSONRPC {
		b.WriteString(`{"jsonrpc":"2.0","id":`)
		b.Write(idOrNull(req.ID))
		b.WriteString(`,"error":{"code":`)
		b.Write(mustMarshal(e.rpcNumber()))
		b.WriteString(`,"message":`)
		b.Write(mustMarshal(e.Message))
		b.WriteString(`,"data":`)
		if p != nil {
			// data is {"code":"COMMAND_FAILED", ...the status's fields}.
			b.WriteString(`{"code":`)
			b.Write(mustMarshal(string(e.Code)))
			b.WriteByte(',')
			return &Message{head: b.Bytes(), payload: p, open: true, tail: "}}\n"}
		}
		b.Write(rpcData(e))
		b.WriteString("}}\n")
		return &Message{head: b.Bytes()}
	}
	b.WriteString(`{"id":`)
	b.Write(idOrNull(req.ID))
	b.WriteString(`,"ok":false,"error":`)
	if p != nil {
		b.WriteString(`{"code":`)
		b.Write(mustMarshal(string(e.Code)))
		b.WriteString(`,"message":`)
		b.Write(mustMarshal(e.Message))
		b.WriteString(`,"data":`)
		return &Message{head: b.Bytes(), payload: p, tail: "}}\n"}
	}
	body, err := marshal(e)
	if err != nil {
		// Data that cannot be encoded must not turn "error" into a string:
		// keep the {"code","message"} shape and say what went wrong.
		body = mustMarshal(&Error{Code: e.Code, Message: e.Message, Data: map[string]string{"encoding_error": err.Error()}})
	}
	b.Write(body)
	b.WriteString("}\n")
	return &Message{head: b.Bytes()}
}

// asFields returns v's hand-written encoder, or nil when v is encoded by
// reflection.
func asFields(v any) fieldsEncoder {
	switch v := v.(type) {
	case ExecStatus:
		return &v
	case *ExecStatus:
		if v != nil {
			return v
		}
	case ExecReadResult:
		return &v
	case *ExecReadResult:
		if v != nil {
			return v
		}
	case FSReadResult:
		return &v
	case *FSReadResult:
		if v != nil {
			return v
		}
	}
	return nil
}

// Sizes of the pieces a streamed message is written in.
const (
	flushAt    = 64 << 10 // write the buffer out once it holds this much
	pieceBytes = 8 << 10  // raw bytes of a string encoded per step (≤ 6× on the wire)
)

// pieceCap holds one flush's worth and the longest piece added after it.
const pieceCap = flushAt + 6*pieceBytes + 1024

var pieces = sync.Pool{New: func() any { b := make([]byte, 0, pieceCap); return &b }}

// encoder appends JSON to buf. With w set it writes buf out whenever buf
// passes flushAt, so a message is written in pieces; without w, buf ends
// up holding the whole message.
type encoder struct {
	buf []byte
	w   io.Writer
	n   int64
	err error
}

func (e *encoder) flush() {
	if e.err == nil && len(e.buf) > 0 {
		var n int
		n, e.err = e.w.Write(e.buf)
		e.n += int64(n)
	}
	e.buf = e.buf[:0]
}

func (e *encoder) raw(b []byte) { e.buf = append(e.buf, b...) }

func (e *encoder) key(k string) { e.buf = append(e.buf, k...) }

func (e *encoder) int(n int64) { e.buf = strconv.AppendInt(e.buf, n, 10) }

func (e *encoder) bool(v bool) { e.buf = strconv.AppendBool(e.buf, v) }

// value encodes a small value by reflection (it cannot fail for the
// types given to it here).
func (e *encoder) value(v any) { e.buf = append(e.buf, mustMarshal(v)...) }

// str encodes s as a JSON string. When writing to w, s is encoded in
// pieces cut at character starts (a cut never splits a character into two
// U+FFFD), and the buffer is written out between pieces.
func (e *encoder) str(s string) {
	e.buf = append(e.buf, '"')
	for len(s) > 0 {
		n := len(s)
		if e.w != nil && n > pieceBytes {
			n = pieceBytes
			for k := 0; k < utf8.UTFMax-1 && !utf8.RuneStart(s[n]); k++ {
				n--
			}
		}
		e.buf = appendStringBody(e.buf, s[:n])
		s = s[n:]
		if e.w != nil && len(e.buf) >= flushAt {
			e.flush()
		}
	}
	e.buf = append(e.buf, '"')
}

// encodeFields encodes an ExecStatus as encoding/json would (same fields,
// same order, same escapes), without reflection: it is every exec.run's
// result, and the one message whose size follows the command's output.
func (st *ExecStatus) encodeFields(e *encoder) {
	e.key(`"stdout":`)
	e.str(st.Stdout)
	e.key(`,"stderr":`)
	e.str(st.Stderr)
	e.key(`,"exit_code":`)
	if st.ExitCode == nil {
		e.key("null")
	} else {
		e.int(int64(*st.ExitCode))
	}
	e.key(`,"duration_ms":`)
	e.int(st.DurationMS)
	e.key(`,"timed_out":`)
	e.bool(st.TimedOut)
	e.key(`,"canceled":`)
	e.bool(st.Canceled)
	e.key(`,"truncated":`)
	e.bool(st.Truncated)
	e.key(`,"stdout_bytes":`)
	e.int(st.StdoutBytes)
	e.key(`,"stderr_bytes":`)
	e.int(st.StderrBytes)
	e.key(`,"cwd":`)
	e.str(st.Cwd)
	if st.StdoutOmitted != nil {
		e.key(`,"stdout_omitted":`)
		e.value(st.StdoutOmitted)
	}
	if st.StderrOmitted != nil {
		e.key(`,"stderr_omitted":`)
		e.value(st.StderrOmitted)
	}
	if st.SessionExited {
		e.key(`,"session_exited":true`)
	}
	if st.SessionEndCause != "" {
		e.key(`,"session_end_cause":`)
		e.str(st.SessionEndCause)
	}
	if st.EndCause != "" {
		e.key(`,"end_cause":`)
		e.str(st.EndCause)
	}
	if st.NewSession {
		e.key(`,"new_session":true`)
	}
	if st.Note != "" {
		e.key(`,"note":`)
		e.str(st.Note)
	}
	e.key(`,"exec_id":`)
	e.str(st.ExecID)
	e.key(`,"session_id":`)
	e.str(st.SessionID)
	e.key(`,"state":`)
	e.str(st.State)
	e.key(`,"reason":`)
	e.str(st.Reason)
	e.key(`,"stdout_offset":`)
	e.int(st.StdoutOffset)
	e.key(`,"stderr_offset":`)
	e.int(st.StderrOffset)
	e.key(`,"input":`)
	if st.Input == nil {
		e.key("null")
	} else {
		e.value(st.Input)
	}
	e.key(`,"alt_screen":`)
	e.bool(st.AltScreen)
	e.key(`,"screen":`)
	if st.Screen == nil {
		e.key("null")
	} else {
		e.value(st.Screen)
	}
	if st.Approval != nil {
		e.key(`,"approval":`)
		e.value(st.Approval)
	}
}

// encodeFields encodes an ExecReadResult as encoding/json would: a page of
// exec.read may be 16 MiB of output, which must not be encoded whole.
func (r *ExecReadResult) encodeFields(e *encoder) {
	e.key(`"complete":`)
	e.bool(r.Complete)
	e.key(`,"data":`)
	e.str(r.Data)
	if r.ExecID != "" {
		e.key(`,"exec_id":`)
		e.str(r.ExecID)
	}
	e.key(`,"length":`)
	e.int(int64(r.Length))
	e.key(`,"lost_bytes":`)
	e.int(r.LostBytes)
	e.key(`,"offset":`)
	e.int(r.Offset)
	e.key(`,"stream":`)
	e.str(r.Stream)
	if r.StreamID != "" {
		e.key(`,"stream_id":`)
		e.str(r.StreamID)
	}
}
