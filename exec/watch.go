package exec

import (
	"sync"
	"time"

	"github.com/trl-project/trl/session"
)

// promptCap bounds the last line a Watch keeps per stream: a prompt is
// short, and a long line without a newline is not one a person answers.
const promptCap = 512

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
	next   chan struct{} // closed at the next output; nil when nobody waits
}

// NewWatch returns a Watch that hands every write on to inner.
func NewWatch(inner session.Sink) *Watch {
	return &Watch{inner: inner, last: time.Now()}
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
	if w.next != nil {
		close(w.next)
		w.next = nil
	}
	w.mu.Unlock()
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
	Prompt                   string
	StdoutBytes, StderrBytes int64
}

// Activity returns what the Watch has seen so far.
func (w *Watch) Activity() Activity {
	w.mu.Lock()
	defer w.mu.Unlock()
	return Activity{Last: w.last, Prompt: string(w.tails[w.stream]), StdoutBytes: w.totals[0], StderrBytes: w.totals[1]}
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
