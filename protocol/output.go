package protocol

import (
	"encoding/binary"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// encodeOutput writes an exec.output notification without reflection: it
// is the one message sent per chunk of a stream's output, so its cost is
// the stream's throughput. The result is what the general encoder would
// produce, byte for byte (TestExecStatusEncodesAsReflection, FuzzOutputEncoding).
func encodeOutput(b []byte, d Dialect, n *OutputNotification) []byte {
	b = slicesGrow(b, len(n.Data)+len(n.Data)/16+128)
	if d == JSONRPC {
		b = append(b, `{"jsonrpc":"2.0","method":"exec.output","params":{"stream_id":`...)
	} else {
		b = append(b, `{"method":"exec.output","params":{"stream_id":`...)
	}
	b = appendString(b, n.StreamID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, n.Seq, 10)
	b = append(b, `,"stream":`...)
	b = appendString(b, n.Stream)
	b = append(b, `,"data":`...)
	b = appendString(b, n.Data)
	b = append(b, `,"offset":`...)
	b = strconv.AppendInt(b, n.Offset, 10)
	if n.LostBytes != 0 {
		b = append(b, `,"lost_bytes":`...)
		b = strconv.AppendInt(b, n.LostBytes, 10)
	}
	return append(b, "}}\n"...)
}

func slicesGrow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	grown := make([]byte, len(b), len(b)+n)
	copy(grown, b)
	return grown
}

const hexDigits = "0123456789abcdef"

// skipPlain returns the first i' ≥ i, stepping 8 bytes at a time, where
// the word at s[i':] holds a byte that may need escaping (not ASCII, a
// control character, '"' or '\\'), or where fewer than 8 bytes are left.
func skipPlain(s string, i int) int {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	b := unsafe.Slice(unsafe.StringData(s), len(s))
	for ; i+16 <= len(b); i += 16 {
		w, v := binary.LittleEndian.Uint64(b[i:]), binary.LittleEndian.Uint64(b[i+8:])
		wq, wb, vq, vb := w^(lo*'"'), w^(lo*'\\'), v^(lo*'"'), v^(lo*'\\')
		if (w|v|(wq-lo)&^wq|(wb-lo)&^wb|(w-lo*0x20)&^w|(vq-lo)&^vq|(vb-lo)&^vb|(v-lo*0x20)&^v)&hi != 0 {
			break
		}
	}
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q, bs := w^(lo*'"'), w^(lo*'\\')
		// (v-lo)&^v&hi is non-zero when a byte of v is 0; (w-lo*0x20)&^w&hi
		// when a byte of w is below 0x20.
		if (w|(q-lo)&^q|(bs-lo)&^bs|(w-lo*0x20)&^w)&hi != 0 {
			break
		}
	}
	return i
}

// appendString appends s as a JSON string: invalid UTF-8 becomes U+FFFD,
// and U+2028/U+2029 are escaped, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	b = appendStringBody(b, s)
	return append(b, '"')
}

// appendStringBody appends s escaped for a JSON string, without quotes.
func appendStringBody(b []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); {
		i = skipPlain(s, i)
		// Look at the word skipPlain stopped at byte by byte, then go
		// back to skipping whole words.
		for end := min(i+8, len(s)); i < end; {
			c := s[i]
			if c < utf8.RuneSelf {
				if c >= 0x20 && c != '"' && c != '\\' {
					i++
					continue
				}
				b = append(b, s[start:i]...)
				b = appendEscape(b, c)
				i++
				start = i
				continue
			}
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case r == utf8.RuneError && size == 1:
				b = append(b, s[start:i]...)
				b = append(b, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				b = append(b, s[start:i]...)
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			default:
				i += size
				continue
			}
			i += size
			start = i
		}
	}
	return append(b, s[start:]...)
}

// appendEscape appends the JSON escape of ASCII byte c, as encoding/json
// writes it.
func appendEscape(b []byte, c byte) []byte {
	switch c {
	case '"', '\\':
		return append(b, '\\', c)
	case '\n':
		return append(b, '\\', 'n')
	case '\r':
		return append(b, '\\', 'r')
	case '\t':
		return append(b, '\\', 't')
	case '\b':
		return append(b, '\\', 'b')
	case '\f':
		return append(b, '\\', 'f')
	}
	return append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
}
