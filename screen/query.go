package screen

import "bytes"

// hasQuery reports whether tail+p may hold a terminal query a program
// waits on (DSR "CSI 5 n" / "CSI 6 n" / "CSI ? 6 n", primary and secondary
// device attributes "CSI c" / "CSI > c", the colour queries "OSC 10;?" and
// "OSC 11;?"), so Write parses at once and the
// answer goes out without waiting for a reader. False positives only cost
// an early parse.
func hasQuery(tail, p []byte) bool {
	if bytes.IndexByte(p, 'n') < 0 && bytes.IndexByte(p, 'c') < 0 && bytes.IndexByte(p, '?') < 0 {
		return false
	}
	if bytes.IndexByte(p, 0x1b) < 0 && bytes.IndexByte(tail, 0x1b) < 0 {
		return false
	}
	if len(tail) > 0 {
		j := make([]byte, 0, len(tail)+min(len(p), 8))
		j = append(append(j, tail...), p[:min(len(p), 8)]...)
		if scanQuery(j) {
			return true
		}
	}
	return scanQuery(p)
}

func scanQuery(b []byte) bool {
	if bytes.Contains(b, []byte("\x1b]10;?")) || bytes.Contains(b, []byte("\x1b]11;?")) {
		return true
	}
	for {
		i := bytes.Index(b, []byte("\x1b["))
		if i < 0 {
			return false
		}
		b = b[i+2:]
		j := 0
		if j < len(b) && (b[j] == '?' || b[j] == '>' || b[j] == '=') {
			j++
		}
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == ';') {
			j++
		}
		if j < len(b) && (b[j] == 'n' || b[j] == 'c') {
			return true
		}
	}
}
