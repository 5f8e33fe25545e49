// Package clip keeps the head and the tail of a command's output within a
// byte budget, and says exactly what it left out between them. It is the
// one head+tail clipper of the text front-ends (the MCP tools, the gateway
// adapter): what a model reads is cut here, at line boundaries when the
// lines allow it, never inside a character.
package clip

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// Clip gathers text written to it in pieces and keeps its first and last
// Max/2 bytes, so memory stays bounded however much is written. The zero
// Clip with Max set is ready to use.
type Clip struct {
	Max int

	head     []byte
	tail     []byte // the most recent bytes: the tail, and the byte before it
	total    int64  // bytes written or skipped
	newlines int64  // newlines written
	lost     int64  // bytes skipped unseen
	closed   bool   // the head is done (full, or bytes were lost after it)
}

func (c *Clip) keep() int { return c.Max - c.Max/2 }

// Write adds s at the end.
func (c *Clip) Write(s string) {
	c.total += int64(len(s))
	c.newlines += int64(strings.Count(s, "\n"))
	if !c.closed {
		n := min(c.Max/2-len(c.head), len(s))
		c.head = append(c.head, s[:n]...)
		s = s[n:]
		if len(c.head) >= c.Max/2 {
			c.closed = true
		}
	}
	if s == "" {
		return
	}
	// One byte more than the tail: whether the tail starts a line.
	keep := c.keep() + 1
	if len(s) > keep {
		s = s[len(s)-keep:]
		c.tail = c.tail[:0]
	}
	c.tail = append(c.tail, s...)
	if len(c.tail) >= 2*keep {
		n := copy(c.tail, c.tail[len(c.tail)-keep:])
		c.tail = c.tail[:n]
	}
}

// Skip records n bytes that were lost unseen (a reader that fell behind,
// output no longer kept): they are counted as left out, their lines are
// not known.
func (c *Clip) Skip(n int64) {
	if n <= 0 {
		return
	}
	c.total += n
	c.lost += n
	c.closed = true
	c.tail = c.tail[:0]
}

// Cut is what a Clip kept and what it left out.
type Cut struct {
	Head, Tail string
	// Total is the bytes written and skipped.
	Total int64
	// Dropped bytes lie between Head and Tail, starting From bytes after
	// the first byte written.
	Dropped, From int64
	// DroppedLines counts the newlines among the dropped bytes; -1 when
	// some of them were never seen (Skip).
	DroppedLines int64
}

// Cut returns what is kept. When bytes are left out, the head ends at a
// line's end and the tail starts at a line's start if a line boundary
// lies in their outer half; otherwise they are cut between characters.
func (c *Clip) Cut() Cut {
	keep := c.keep()
	tail, prev := c.tail, byte('\n')
	if len(tail) > keep {
		prev = tail[len(tail)-keep-1]
		tail = tail[len(tail)-keep:]
	} else if len(c.head) > 0 {
		prev = c.head[len(c.head)-1]
	}
	if c.lost == 0 && c.total == int64(len(c.head)+len(tail)) {
		return Cut{Head: string(c.head) + string(tail), Total: c.total}
	}
	if c.lost > 0 {
		prev = 0 // what came before the tail is not known
	}
	head := c.head
	if i := bytes.LastIndexByte(head, '\n'); i >= 0 && i+1 >= len(head)/2 {
		head = head[:i+1]
	} else {
		head = TrimCutEnd(head)
	}
	if prev != '\n' {
		if i := bytes.IndexByte(tail, '\n'); i >= 0 && i < len(tail)/2 {
			tail = tail[i+1:]
		} else {
			tail = TrimCutStart(tail)
		}
	}
	k := Cut{Head: string(head), Tail: string(tail), Total: c.total, From: int64(len(head))}
	k.Dropped = c.total - int64(len(head)) - int64(len(tail))
	k.DroppedLines = -1
	if c.lost == 0 {
		k.DroppedLines = c.newlines - int64(bytes.Count(head, []byte{'\n'})) - int64(bytes.Count(tail, []byte{'\n'}))
	}
	return k
}

// String is the head, then mark (on a line of its own) when bytes were
// left out, then the tail.
func (k Cut) String(mark func(Cut) string) string {
	if k.Dropped == 0 {
		return k.Head + k.Tail
	}
	var b bytes.Buffer
	b.WriteString(k.Head)
	if k.Head != "" && k.Head[len(k.Head)-1] != '\n' {
		b.WriteByte('\n')
	}
	b.WriteString(mark(k))
	b.WriteString(k.Tail)
	return b.String()
}

// Text clips s, written whole, to max bytes.
func Text(s string, max int) Cut {
	c := Clip{Max: max}
	c.Write(s)
	return c.Cut()
}

// TrimCutEnd drops a multi-byte character cut off at the end of p: an
// incomplete sequence only, so a byte that is not UTF-8 (binary output)
// stays.
func TrimCutEnd(p []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(p); i++ {
		b := p[len(p)-i]
		if b < utf8.RuneSelf {
			return p
		}
		if utf8.RuneStart(b) {
			if r, _ := utf8.DecodeRune(p[len(p)-i:]); r == utf8.RuneError && !utf8.FullRune(p[len(p)-i:]) {
				return p[:len(p)-i]
			}
			return p
		}
	}
	return p
}

// TrimCutStart drops the continuation bytes of a character whose start
// was cut off: at most UTFMax-1 of them.
func TrimCutStart(p []byte) []byte {
	for i := 0; i < utf8.UTFMax-1 && len(p) > 0 && !utf8.RuneStart(p[0]); i++ {
		p = p[1:]
	}
	return p
}
