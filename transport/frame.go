package transport

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// DefaultMaxMessageBytes is the message size cap used when none is given.
const DefaultMaxMessageBytes = 16 << 20

// readBufferSize is the framer's read-ahead. Together with the message
// buffer (at most max bytes) it bounds the framer's memory.
const readBufferSize = 64 << 10

// ErrTooLarge is returned by Framer.Next for a message longer than the
// framer's cap. The framer has already skipped to the end of the line the
// limit was crossed on, so the next call reads the following line.
var ErrTooLarge = errors.New("transport: message too large")

// Framer splits a byte stream into messages: JSON values separated by
// newlines, where one value may span several lines (a pretty-printed request
// piped into stdio). It tracks bracket depth outside strings instead of
// parsing, so framing stays cheap and never knows what a request means; the
// caller decodes each message and answers malformed ones.
type Framer struct {
	r   *bufio.Reader
	max int
	// err is the first read error, kept because a terminal on stdin
	// would block for a second ^D if read again after EOF.
	err error
}

// NewFramer returns a framer reading r that refuses messages longer than max
// bytes (DefaultMaxMessageBytes when max <= 0).
func NewFramer(r io.Reader, max int) *Framer {
	if max <= 0 {
		max = DefaultMaxMessageBytes
	}
	return &Framer{r: bufio.NewReaderSize(r, readBufferSize), max: max}
}

// Next returns the next message. A line that does not open a JSON object or
// array is returned whole, without its newline, for the caller to answer as
// malformed; so is a value left unfinished at end of input or cut short by
// a newline inside a string. Blank lines are skipped. Next returns
// ErrTooLarge for an oversized message (and can be called again), io.EOF at
// the end of input, or the reader's error. The returned slice is the
// caller's to keep.
func (f *Framer) Next() ([]byte, error) {
	first, err := f.skipSpace()
	if err != nil {
		return nil, err
	}
	if first == '{' || first == '[' {
		return f.value()
	}
	return f.line()
}

// chunk returns the bytes buffered so far, reading more when none are.
// The caller consumes what it used with f.r.Discard.
func (f *Framer) chunk() ([]byte, error) {
	if f.err != nil {
		return nil, f.err
	}
	if f.r.Buffered() == 0 {
		if _, err := f.r.Peek(1); err != nil {
			f.err = err
			return nil, err
		}
	}
	b, _ := f.r.Peek(f.r.Buffered())
	return b, nil
}

// skipSpace consumes whitespace, blank lines included, and returns the next
// byte without consuming it.
func (f *Framer) skipSpace() (byte, error) {
	for {
		b, err := f.chunk()
		if err != nil {
			return 0, err
		}
		i := 0
		for i < len(b) && isSpace(b[i]) {
			i++
		}
		f.r.Discard(i)
		if i < len(b) {
			return b[i], nil
		}
	}
}

// value reads one JSON object or array, ending where its depth returns to 0.
// Depth is counted only outside strings, and a backslash in a string hides
// the next byte, so `"}"` and `"\""` do not end the value early.
// A newline inside a string ends the message early (it is malformed).
func (f *Framer) value() ([]byte, error) {
	var msg []byte
	depth, inString, escaped := 0, false, false
	// lineStart is set after a newline outside strings while the value is
	// still open; checked, once the line has been looked at.
	lineStart, checked := false, false
	for {
		b, err := f.chunk()
		if err != nil {
			return f.unfinished(msg, err)
		}
		end, pause, nl := -1, -1, -1
	scan:
		for i, c := range b {
			if lineStart && !isSpace(c) {
				lineStart = false
				if c == '{' && !checked {
					// Possibly a new request after an unfinished one.
					pause = i
					break scan
				}
				checked = false
			}
			switch {
			case inString:
				switch {
				case escaped:
					escaped = false
				case c == '\\':
					escaped = true
				case c == '"':
					inString = false
				case c == '\n':
					// JSON strings cannot hold a raw newline, so this
					// message is malformed: end it here rather than let
					// an unclosed quote swallow the lines that follow.
					end = i
					break scan
				}
			case c == '"':
				inString = true
			case c == '\n':
				lineStart = true
				if depth > 0 && len(msg)+i < prefixCheckMax {
					nl = i // look at what the value holds so far
					break scan
				}
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				depth--
				if depth == 0 {
					end = i + 1
					break scan
				}
			}
		}
		n := len(b)
		if end >= 0 {
			n = end
		} else if pause >= 0 {
			n = pause
		} else if nl >= 0 {
			n = nl + 1
		}
		if len(msg)+n > f.max {
			return nil, f.tooLarge(len(msg))
		}
		msg = f.grow(msg, n)
		msg = append(msg, b[:n]...)
		f.r.Discard(n)
		if end >= 0 {
			return msg, nil
		}
		if nl >= 0 && invalidPrefix(msg) {
			// Already malformed whatever follows: answer it now, not
			// when the next request arrives.
			return bytes.TrimRight(msg, " \t\r\n"), nil
		}
		if pause >= 0 {
			if f.completeObjectAhead() {
				// The open value was abandoned: answer it as malformed
				// and let the next call read the new request.
				return bytes.TrimRight(msg, " \t\r\n"), nil
			}
			checked, lineStart = true, true
		}
	}
}

// prefixCheckMax bounds the messages whose every line is checked as a JSON
// prefix (each check scans the message so far): a person typing or pasting
// a request into stdio; longer ones are answered at their end.
const prefixCheckMax = 16 << 10

// invalidPrefix reports whether msg, an unfinished JSON value, is already
// malformed: encoding/json stops at a bad byte, while a good prefix only
// runs out ("unexpected end of JSON input").
func invalidPrefix(msg []byte) bool {
	var v json.RawMessage
	err := json.Unmarshal(msg, &v)
	var se *json.SyntaxError
	return errors.As(err, &se) && se.Error() != "unexpected end of JSON input"
}

// completeObjectAhead reports whether the line at the read position is, on
// its own, a complete JSON object: a new request following one that was
// never closed (`{"id":1,"method":` then a good line). Inside a genuinely
// multi-line request a line that is a whole object by itself is rare (an
// array element on its own line without a comma); a line longer than the
// read buffer is taken as a continuation.
func (f *Framer) completeObjectAhead() bool {
	for {
		b, _ := f.r.Peek(f.r.Buffered())
		if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
			return json.Valid(b[:nl])
		}
		if f.r.Buffered() == f.r.Size() {
			return false
		}
		if _, err := f.r.Peek(f.r.Buffered() + 1); err != nil {
			b, _ := f.r.Peek(f.r.Buffered())
			return json.Valid(b)
		}
	}
}

// line reads up to the next newline: a message that is not a JSON object or
// array, returned so the caller can answer it with a parse error.
func (f *Framer) line() ([]byte, error) {
	var msg []byte
	for {
		b, err := f.chunk()
		if err != nil {
			return f.unfinished(msg, err)
		}
		nl := bytes.IndexByte(b, '\n')
		n := len(b)
		if nl >= 0 {
			n = nl
		}
		if len(msg)+n > f.max {
			return nil, f.tooLarge(len(msg))
		}
		msg = f.grow(msg, n)
		msg = append(msg, b[:n]...)
		if nl >= 0 {
			f.r.Discard(n + 1)
			return bytes.TrimRight(msg, " \t\r"), nil
		}
		f.r.Discard(n)
	}
}

// unfinished handles a read error in the middle of a message: at end of
// input the partial message is returned (malformed, for the caller to
// answer) and io.EOF comes on the next call.
func (f *Framer) unfinished(msg []byte, err error) ([]byte, error) {
	if err == io.EOF && len(msg) > 0 {
		return bytes.TrimRight(msg, " \t\r\n"), nil
	}
	return nil, err
}

// tooLarge drops the message: it consumes the bytes that still fit under
// the cap and then everything up to and including the next newline, so the
// framer resynchronises on the following line without buffering the rest.
func (f *Framer) tooLarge(have int) error {
	f.r.Discard(f.max - have)
	for {
		b, err := f.chunk()
		if err != nil {
			break
		}
		if nl := bytes.IndexByte(b, '\n'); nl >= 0 {
			f.r.Discard(nl + 1)
			break
		}
		f.r.Discard(len(b))
	}
	return ErrTooLarge
}

// grow makes room for n more bytes without letting append's doubling take
// the buffer's capacity past the cap.
func (f *Framer) grow(msg []byte, n int) []byte {
	if cap(msg)-len(msg) >= n {
		return msg
	}
	c := max(2*cap(msg), len(msg)+n, 512)
	c = min(c, f.max)
	grown := make([]byte, len(msg), c)
	copy(grown, msg)
	return grown
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\n' || c == '\r' || c == '\t'
}
