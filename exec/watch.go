package exec

import (
	"bytes"
	"sync"
	"time"

	"github.com/trl-project/trl/session"
)

// promptCap bounds the last line a Watch keeps per stream: a prompt is
// short, and a long line without a newline is not one a person answers.
const promptCap = 512

// lineCap bounds the last line of both streams together (the prompt a
// waiting command shows): room for a prompt wrapped over several rows,
// colours included.
const lineCap = 4096

// Watch is a Sink in front of another that remembers what waiting for a
// command needs (SPEC §8): when output last arrived, on which stream, the
// text after each stream's last newline (the prompt), and a channel that
// is closed at the next output for whoever waits. Nobody waiting costs one
// lock and a few stores per write.
type Watch struct {
	inner session.Sink

	mu     sync.Mutex
	last   time.Time
	stream session.Stream
	totals [2]int64
	tails  [2][]byte
	// line is the text after the last newline of either stream, in the
	// order the bytes arrived: what a person sees before the cursor when
	// the command waits (the session delivers a stderr write after the
	// terminal output written before it, see session/output.go).
	line []byte
	// sinceHome counts the newlines written since the cursor was last
	// placed by absolute position (CSI H, CSI f, CSI 2J); -1 before any.
	// A raw-mode program that did so and then painted down to the
	// bottom row draws a screen (top without the alternate screen).
	sinceHome int
	next      chan struct{} // closed at the next output; nil when nobody waits
}

// NewWatch returns a Watch that hands every write on to inner.
func NewWatch(inner session.Sink) *Watch {
	return &Watch{inner: inner, last: time.Now(), sinceHome: -1}
}

// Output implements session.Sink.
func (w *Watch) Output(s session.Stream, p []byte) {
	w.inner.Output(s, p)
	now := time.Now()
	w.mu.Lock()
	w.last = now
	w.stream = s
	w.totals[s] += int64(len(p))
	t := w.tails[s]
	if i := lastNewline(p); i >= 0 {
		t = append(t[:0], p[i+1:]...)
	} else {
		t = append(t, p...)
	}
	if len(t) > promptCap {
		t = append(t[:0], t[len(t)-promptCap:]...)
	}
	w.tails[s] = t
	w.line = appendLine(w.line, p)
	if h := lastHome(p); h >= 0 {
		w.sinceHome = bytes.Count(p[h:], newline)
	} else if w.sinceHome >= 0 {
		w.sinceHome += bytes.Count(p, newline)
	}
	if w.next != nil {
		close(w.next)
		w.next = nil
	}
	w.mu.Unlock()
}

// appendLine is line after p arrives: what follows p's last newline, or
// line and p; cut to its last lineCap bytes.
func appendLine(line, p []byte) []byte {
	if i := lastNewline(p); i >= 0 {
		line, p = line[:0], p[i+1:]
	}
	if len(p) >= lineCap {
		return append(line[:0], p[len(p)-lineCap:]...)
	}
	if over := len(line) + len(p) - lineCap; over > 0 {
		line = append(line[:0], line[over:]...)
	}
	return append(line, p...)
}

var newline = []byte{'\n'}

// lastHome is the offset of the last sequence in p that places the
// cursor by absolute position or clears the screen (CSI Ps;Ps H or f,
// CSI 2 J), or -1. A sequence split across writes is missed. It scans
// forward from escape to escape with bytes.IndexByte, which skips the
// text between them a word at a time: every byte a command writes
// passes here, and a byte-by-byte scan was 6% of the daemon's CPU in
// `trl bench`'s exec.stream step.
func lastHome(p []byte) int {
	last := -1
	for i := 0; ; {
		j := bytes.IndexByte(p[i:], 0x1b)
		if j < 0 {
			return last
		}
		i += j
		if home(p[i:]) {
			last = i
		}
		i++
	}
}

// home reports whether p begins with a sequence lastHome looks for.
func home(p []byte) bool {
	if len(p) < 2 || p[1] != '[' {
		return false
	}
	j := 2
	for j < len(p) && (p[j] >= '0' && p[j] <= '9' || p[j] == ';') {
		j++
	}
	if j == len(p) {
		return false
	}
	switch p[j] {
	case 'H', 'f':
		return true
	case 'J':
		return string(p[2:j]) == "2"
	}
	return false
}

func lastNewline(p []byte) int {
	for i := len(p) - 1; i >= 0; i-- {
		if p[i] == '\n' {
			return i
		}
	}
	return -1
}

// Activity is what a Watch has seen.
type Activity struct {
	// Last is when output last arrived (the command's start before any).
	Last time.Time
	// Prompt is the text after the last newline of the stream that wrote
	// last.
	Prompt string
	// Line is the text after the last newline of both streams together,
	// in arrival order (at most 4 KiB).
	Line string
	// SinceHome is the number of newlines written since the cursor was
	// last placed by absolute position, -1 if it never was.
	SinceHome                int
	StdoutBytes, StderrBytes int64
}

// Activity returns what the Watch has seen so far.
func (w *Watch) Activity() Activity {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Activity{Last: w.last, Prompt: string(w.tails[w.stream]), Line: string(w.line), SinceHome: w.sinceHome, StdoutBytes: w.totals[0], StderrBytes: w.totals[1]}
}

// Last returns when output last arrived (the start before any): the one
// fact a wait needs at every look, without copying the prompt.
func (w *Watch) Last() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last
}

// Next returns a channel closed when the next output arrives.
func (w *Watch) Next() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.next == nil {
		w.next = make(chan struct{})
	}
	return w.next
}
