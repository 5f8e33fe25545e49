package exec

import (
	"sync"
	"time"
)

// RegistryOptions configure the registry of commands. Zero values mean
// the defaults.
type RegistryOptions struct {
	// Window is the bytes of recent output each stream keeps (8 MiB).
	Window int
	// Retain is how long a finished command stays addressable (10 min).
	Retain time.Duration
	// MaxFinished caps finished commands kept (256); the oldest go first.
	MaxFinished int
	// MaxRetainedBytes caps the memory finished commands' output holds
	// together (256 MiB); the oldest go first, the newest is kept
	// whatever its size. Without it 256 finished streams of a full 8 MiB
	// window each held 2.9 GB.
	MaxRetainedBytes int64
	// Now is the clock retention is measured by (nil: time.Now); tests
	// drive expiry with their own instead of sleeping.
	Now func() time.Time
}

// Registry is the one registry of commands by exec_id: the running ones,
// the one each session runs, and the finished ones for a bounded time
// and number.
type Registry struct {
	opts RegistryOptions
	// pending counts Jobs being started or ended; Wait waits for them.
	pending sync.WaitGroup

	mu       sync.Mutex
	byID     map[string]*Job
	running  map[string]*Job // by session id
	finished []finishedJob   // oldest first
	// finishedBytes is what the finished Jobs' output holds.
	finishedBytes int64
	started       int64
	// sweep, when armed, expires the finished Jobs once the oldest is
	// past Retain, whether or not anything asks the registry (a daemon
	// gone quiet after a burst kept every retained output: 984 MB for 50
	// of 20 MB). Only on the real clock (realClock).
	sweep     *time.Timer
	realClock bool
}

// finishedJob is a retained Job, when it ended, on the registry's clock,
// and the memory its output holds.
type finishedJob struct {
	j     *Job
	at    time.Time
	bytes int64
}

// NewRegistry returns an empty registry.
func NewRegistry(opts RegistryOptions) *Registry {
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	realClock := opts.Now == nil
	if realClock {
		opts.Now = time.Now
	}
	if opts.Retain <= 0 {
		opts.Retain = 10 * time.Minute
	}
	if opts.MaxFinished <= 0 {
		opts.MaxFinished = 256
	}
	if opts.MaxRetainedBytes <= 0 {
		opts.MaxRetainedBytes = DefaultMaxRetained
	}
	return &Registry{opts: opts, byID: map[string]*Job{}, running: map[string]*Job{}, realClock: realClock}
}

// Options returns the registry's settings, defaults applied.
func (r *Registry) Options() RegistryOptions { return r.opts }

// starting counts a Job about to start: its end is waited for by Wait.
func (r *Registry) starting() { r.pending.Add(1) }

// notStarted undoes starting for a Job the shell refused.
func (r *Registry) notStarted() { r.pending.Done() }

// ended counts a Job's end as recorded, its Ended hook run.
func (r *Registry) ended() { r.pending.Done() }

// add registers a started Job. Its end cannot come first: lineDone waits
// for the Job to be ready, which it is only once added.
func (r *Registry) add(j *Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.started++
	r.byID[j.id] = j
	r.running[j.sessionID] = j
}

// retain moves an ended Job to the finished ones, dropping the oldest
// beyond the bounds.
func (r *Registry) retain(j *Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.opts.Now()
	if r.running[j.sessionID] == j {
		delete(r.running, j.sessionID)
	}
	held := int64(j.out.retained()) // the output is whole: the Job ended
	r.finished = append(r.finished, finishedJob{j, now, held})
	r.finishedBytes += held
	r.expire(now)
	r.armSweep()
}

// armSweep arms the sweep for when the oldest finished Job expires,
// unless it is armed or nothing is retained. Called with mu held.
func (r *Registry) armSweep() {
	if !r.realClock || r.sweep != nil || len(r.finished) == 0 {
		return
	}
	wait := max(r.opts.Retain-r.opts.Now().Sub(r.finished[0].at), 0) + time.Millisecond
	r.sweep = time.AfterFunc(wait, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.sweep = nil
		r.expire(r.opts.Now())
		r.armSweep()
	})
}

// expire forgets finished Jobs past Retain or beyond MaxFinished or
// MaxRetainedBytes, oldest first. Called with mu held.
func (r *Registry) expire(now time.Time) {
	n := 0
	for n < len(r.finished) && (len(r.finished)-n > r.opts.MaxFinished || now.Sub(r.finished[n].at) > r.opts.Retain ||
		(r.finishedBytes > r.opts.MaxRetainedBytes && n < len(r.finished)-1)) {
		if old := r.finished[n].j; r.byID[old.id] == old {
			delete(r.byID, old.id)
		}
		r.finishedBytes -= r.finished[n].bytes
		n++
	}
	if n > 0 {
		r.finished = append(r.finished[:0], r.finished[n:]...)
	}
}

// Get finds a running or retained Job by exec_id (a stream_id is one).
func (r *Registry) Get(id string) (*Job, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	if j, ok := r.byID[id]; ok {
		return j, nil
	}
	return nil, errorf(ErrStreamNotFound, "no command with exec_id %q; finished commands are kept %s (at most %d, and %d MiB of their output); exec.list shows them", clipID(id), r.opts.Retain, r.opts.MaxFinished, r.opts.MaxRetainedBytes>>20)
}

// Stream finds the window of a running or retained exec.stream command
// by its stream_id.
func (r *Registry) Stream(id string) (*Stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	if j, ok := r.byID[id]; ok {
		if st := j.Stream(); st != nil {
			return st, nil
		}
		return nil, errorf(ErrInvalid, "%s was started by exec.run, not exec.stream: read it with exec.read {\"exec_id\": %q}", j.id, j.id)
	}
	return nil, errorf(ErrStreamNotFound, "no stream %q; finished streams are kept for %s (at most %d, and %d MiB of their output)", clipID(id), r.opts.Retain, r.opts.MaxFinished, r.opts.MaxRetainedBytes>>20)
}

// Running returns the Job running in the session, or nil.
func (r *Registry) Running(sessionID string) *Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.running[sessionID]
}

// List returns the retained Jobs, oldest first, then the running ones.
func (r *Registry) List() []*Job {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.expire(r.opts.Now())
	js := make([]*Job, 0, len(r.byID))
	for _, f := range r.finished {
		js = append(js, f.j)
	}
	for _, j := range r.running {
		js = append(js, j)
	}
	return js
}

// Unreported returns the running Jobs and the finished ones that yielded
// and whose exit no status has carried, oldest first.
func (r *Registry) Unreported() []*Job {
	var js []*Job
	for _, j := range r.List() {
		if _, ended := j.Exit(); !ended {
			js = append(js, j)
			continue
		}
		if m := j.Marks(); m.Yielded && !m.Reported {
			js = append(js, j)
		}
	}
	return js
}

// Counts returns how many Jobs run, how many are addressable, and how
// many were ever started.
func (r *Registry) Counts() (running, addressable int, started int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running), len(r.byID), r.started
}

// Wait waits until every started Job has ended and its end is recorded,
// its Ended hook (the audit line) included.
func (r *Registry) Wait() { r.pending.Wait() }

func clipID(id string) string {
	if len(id) > 64 {
		return id[:64] + "…"
	}
	return id
}
