package protocol

import (
	"strconv"
	"unicode/utf8"
)

// encodeOutput writes an exec.output notification without reflection: it
// is the one message sent per chunk of a stream's output, so its cost is
// the stream's throughput. The result is what the general encoder would
// produce, up to the choice among equivalent JSON escapes.
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

// plain reports whether the 8 bytes at s[i:] need no escaping: ASCII, not
// a control character, not '"' or '\\'. It tests the whole word at once.
func plain(s string, i int) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
	zero := func(v uint64) uint64 { return (v - lo) &^ v & hi } // a byte of v is 0
	return w&hi == 0 && zero(w^(lo*'"')) == 0 && zero(w^(lo*'\\')) == 0 && (w-lo*0x20)&^w&hi == 0
}

// appendString appends s as a JSON string: invalid UTF-8 becomes U+FFFD,
// and U+2028/U+2029 are escaped, as encoding/json does.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		for i+8 <= len(s) && plain(s, i) {
			i += 8
		}
		if i >= len(s) {
			break
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
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
	b = append(b, s[start:]...)
	return append(b, '"')
}
