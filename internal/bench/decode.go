package bench

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeOutput decodes an exec.output notification line without
// encoding/json, which scans every byte three times (validate, rescan,
// unquote) and on a 2-core machine would spend more CPU than the daemon
// it measures. It understands exactly the shape the daemon writes —
// {"method":"exec.output","params":{...}} with string and integer fields,
// optionally with "jsonrpc":"2.0" first — and reports ok=false for
// anything else, which the caller then decodes with encoding/json.
func decodeOutput(line []byte) (n *Note, ok bool) {
	p := parser{b: bytes.TrimRight(line, "\r\n")}
	n = &Note{}
	if !p.byte('{') {
		return nil, false
	}
	for first := true; ; first = false {
		if p.byte('}') {
			return n, p.done() && n.Method == "exec.output"
		}
		if !first && !p.byte(',') {
			return nil, false
		}
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return nil, false
		}
		switch key {
		case "jsonrpc":
			if v, ok := p.str(); !ok || v != "2.0" {
				return nil, false
			}
		case "method":
			if n.Method, ok = p.str(); !ok {
				return nil, false
			}
		case "params":
			if !p.params(n) {
				return nil, false
			}
		default:
			return nil, false
		}
	}
}

type parser struct {
	b []byte
	i int
}

func (p *parser) done() bool { return p.i == len(p.b) }

func (p *parser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *parser) params(n *Note) bool {
	if !p.byte('{') {
		return false
	}
	for first := true; ; first = false {
		if p.byte('}') {
			return true
		}
		if !first && !p.byte(',') {
			return false
		}
		key, ok := p.str()
		if !ok || !p.byte(':') {
			return false
		}
		switch key {
		case "stream_id":
			n.StreamID, ok = p.str()
		case "stream":
			n.Stream, ok = p.str()
		case "data":
			n.Data, ok = p.str()
		case "seq":
			n.Seq, ok = p.int()
		case "offset":
			n.Offset, ok = p.int()
		case "lost_bytes":
			n.LostBytes, ok = p.int()
		default:
			return false
		}
		if !ok {
			return false
		}
	}
}

func (p *parser) int() (int64, bool) {
	start := p.i
	for p.i < len(p.b) && (p.b[p.i] >= '0' && p.b[p.i] <= '9' || p.b[p.i] == '-') {
		p.i++
	}
	v, err := strconv.ParseInt(string(p.b[start:p.i]), 10, 64)
	return v, err == nil
}

// str decodes a JSON string. Runs without escapes are found with
// IndexByte and copied whole.
func (p *parser) str() (string, bool) {
	if !p.byte('"') {
		return "", false
	}
	rest := p.b[p.i:]
	end := bytes.IndexByte(rest, '"')
	if end < 0 {
		return "", false
	}
	if bytes.IndexByte(rest[:end], '\\') < 0 {
		p.i += end + 1
		return string(rest[:end]), true
	}
	out := make([]byte, 0, len(rest))
	i := 0
	for {
		// Look for the closing quote only up to the next backslash, so
		// that each byte is scanned once however many escapes there are.
		seg := rest[i:]
		j := bytes.IndexByte(seg, '\\')
		upto := seg
		if j >= 0 {
			upto = seg[:j]
		}
		if q := bytes.IndexByte(upto, '"'); q >= 0 {
			out = append(out, seg[:q]...)
			p.i += i + q + 1
			return string(out), true
		}
		if j < 0 {
			return "", false
		}
		out = append(out, seg[:j]...)
		i += j + 1
		if i >= len(rest) {
			return "", false
		}
		switch c := rest[i]; c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, w := hex4(rest[i+1:])
			if w < 0 {
				return "", false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				// A pair is two escapes; a lone half is U+FFFD, as
				// encoding/json decodes it.
				r2, w2 := rune(-1), -1
				if i+2 < len(rest) && rest[i+1] == '\\' && rest[i+2] == 'u' {
					r2, w2 = hex4(rest[i+3:])
				}
				if dec := utf16.DecodeRune(r, r2); w2 >= 0 && dec != utf8.RuneError {
					r = dec
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
		i++
	}
}

// hex4 decodes four hex digits; w is -1 when they are not.
func hex4(b []byte) (r rune, w int) {
	if len(b) < 4 {
		return 0, -1
	}
	v, err := strconv.ParseUint(string(b[:4]), 16, 32)
	if err != nil {
		return 0, -1
	}
	return rune(v), 4
}
