package exec

import (
	"sync"
	"time"

	"github.com/trl-project/trl/session"
)

// StreamOptions configure the stream registry. Zero values mean the
// defaults.
type StreamOptions struct {
	// Window is the bytes of recent output each stream keeps (8 MiB).
	Window int
	// Retain is how long a finished stream stays readable (10 min).
	Retain time.Duration
	// MaxFinished caps finished streams kept (256); the oldest go first.
	MaxFinished int
	// Now is the clock retention is measured by (nil: time.Now); tests
	// drive expiry with their own instead of sleeping.
	Now func() time.Time
}

// Streams is the registry of streams by id: running ones, and finished
// ones for a bounded time and number.
type Streams struct {
	opts StreamOptions

	mu       sync.Mutex
	byID     map[string]*Stream
	finished []finishedStream // oldest first
}

type finishedStream struct {
	id string
	at time.Time
}

// NewStreams returns an empty registry.
func NewStreams(opts StreamOptions) *Streams {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Retain <= 0 {
		opts.Retain = 10 * time.Minute
	}
	if opts.MaxFinished <= 0 {
		opts.MaxFinished = 256
	}
	return &Streams{opts: opts, byID: map[string]*Stream{}}
}

// New registers a stream for a command about to start in sessionID.
func (r *Streams) New(sessionID string) *Stream {
	s := newStream(newStreamID(), sessionID, r.opts.Window)
	r.mu.Lock()
	r.byID[s.ID] = s
	r.mu.Unlock()
	return s
}

// Finish records the command's end; the stream stays readable for Retain.
func (r *Streams) Finish(s *Stream, x Exit) {
	s.finish(x)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	r.finished = append(r.finished, finishedStream{id: s.ID, at: now})
	r.expire(now)
}

// Drop forgets a stream whose command never started.
func (r *Streams) Drop(s *Stream) {
	r.mu.Lock()
	delete(r.byID, s.ID)
	r.mu.Unlock()
}

// expire forgets finished streams past Retain or beyond MaxFinished.
// Called with mu held.
func (r *Streams) expire(now time.Time) {
	n := 0
	for n < len(r.finished) && (len(r.finished)-n > r.opts.MaxFinished || now.Sub(r.finished[n].at) > r.opts.Retain) {
		delete(r.byID, r.finished[n].id)
		n++
	}
	r.finished = append(r.finished[:0], r.finished[n:]...)
}

// Get finds a running or retained stream.
func (r *Streams) Get(id string) (*Stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	if s, ok := r.byID[id]; ok {
		return s, nil
	}
	return nil, errorf(ErrStreamNotFound, "no stream %q; finished streams are kept for %s (at most %d)", id, r.opts.Retain, r.opts.MaxFinished)
}

// Options returns the registry's settings, defaults applied.
func (r *Streams) Options() StreamOptions { return r.opts }

// Len returns the number of running and retained streams.
func (r *Streams) Len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byID)
}

// Close forgets every stream.
func (r *Streams) Close() {
	r.mu.Lock()
	r.byID = map[string]*Stream{}
	r.finished = nil
	r.mu.Unlock()
}

func newStreamID() string {
	return session.NewID("st-", 8)
}
