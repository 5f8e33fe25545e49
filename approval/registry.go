package approval

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Defaults of Options.
const (
	DefaultTimeout  = 5 * time.Minute
	DefaultRemember = 10 * time.Minute
)

// Options configure a Registry. Zero values are the defaults.
type Options struct {
	// Timeout is how long an approval waits for a person before it is
	// denied with reason "timed out"; 0 means 5 minutes.
	Timeout time.Duration
	// Remember is how long a decided approval still answers a retry of
	// its call; 0 means 10 minutes.
	Remember time.Duration
	// Clock is the time source; nil means the real one. Tests inject
	// one to pass five minutes without waiting for them.
	Clock Clock
}

// Clock is the registry's time source.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a scheduled call that can be stopped.
type Timer interface {
	Stop() bool
}

type realClock struct{}

func (realClock) Now() time.Time                            { return time.Now() }
func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Registry holds the approvals. Its methods are safe for concurrent use;
// none blocks on a subscriber or a waiter.
type Registry struct {
	timeout, remember time.Duration
	clock             Clock

	mu     sync.Mutex
	byID   map[string]*Pending
	byKey  map[string]*Pending
	subs   map[*Subscription]struct{}
	closed bool
}

// New returns an empty registry.
func New(o Options) *Registry {
	r := &Registry{
		timeout: cmp.Or(o.Timeout, DefaultTimeout), remember: cmp.Or(o.Remember, DefaultRemember),
		clock: o.Clock,
		byID:  map[string]*Pending{}, byKey: map[string]*Pending{}, subs: map[*Subscription]struct{}{},
	}
	if r.clock == nil {
		r.clock = realClock{}
	}
	return r
}

// Timeout is how long an approval waits before it is denied.
func (r *Registry) Timeout() time.Duration { return r.timeout }

// Ask returns the approval for req.Key, asking for a new one unless the
// key already has one pending or recently decided; created says whether
// this call asked (so that only it notifies and audits). The context is
// not kept: the approval outlives the caller, for its retries. It fails
// only when ctx is already done or the registry is closed.
func (r *Registry) Ask(ctx context.Context, req Request) (p *Pending, created bool, err error) {
	if err := context.Cause(ctx); err != nil {
		return nil, false, err
	}
	id := newID()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return nil, false, ErrClosed
	}
	if req.Key != "" {
		// A retry of the same call gets its approval; the key alone does
		// not: a person who approved one command never approved another
		// sent later under the same tool call id (through the gateway,
		// once the idempotency memo had forgotten the first call, a
		// second command ran on the first one's approval).
		if p := r.byKey[req.Key]; p != nil && p.req.Command == req.Command && p.req.Whole == req.Whole && p.req.Session == req.Session {
			return p, false, nil
		}
	}
	now := r.clock.Now()
	p = &Pending{id: id, req: req, asked: now, deadline: now.Add(r.timeout), done: make(chan struct{})}
	r.byID[id] = p
	if req.Key != "" {
		r.byKey[req.Key] = p
	}
	// The timer's callback takes the mutex, so it cannot decide before
	// the approval is registered and its timer recorded.
	p.timeout = r.clock.AfterFunc(r.timeout, func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.finish(p, Outcome{Decision: Deny, Reason: ReasonTimedOut, TimedOut: true})
	})
	r.publish(EventAsked, p)
	return p, true, nil
}

// Decide records a person's decision. An unknown id is ErrNotFound, an
// approval already decided (by a person or its timeout) ErrDecided.
func (r *Registry) Decide(id string, d Decision, reason, approver string) error {
	if d != Approve && d != Deny {
		return fmt.Errorf("%w, not %q", ErrBadDecision, d)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.byID[id]
	if p == nil {
		return fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	if p.decided {
		o := p.outcome
		by := o.Approver
		if by == "" {
			by = "trl"
		}
		return fmt.Errorf("%w: %s by %s (%s)", ErrDecided, o.Decision, by, o.Reason)
	}
	r.finish(p, Outcome{Decision: d, Reason: reason, Approver: approver})
	return nil
}

// finish decides p once; the caller holds r.mu.
func (r *Registry) finish(p *Pending, o Outcome) {
	if p.decided {
		return
	}
	o.DecidedAt = r.clock.Now()
	o.Waited = o.DecidedAt.Sub(p.asked)
	p.outcome, p.decided = o, true
	close(p.done)
	if p.timeout != nil {
		p.timeout.Stop()
	}
	if !r.closed {
		p.forget = r.clock.AfterFunc(r.remember, func() { r.drop(p) })
	}
	r.publish(EventDecided, p)
}

// drop forgets a decided approval: its id is no longer found and its key
// asks anew.
func (r *Registry) drop(p *Pending) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[p.id] == p {
		delete(r.byID, p.id)
	}
	if p.req.Key != "" && r.byKey[p.req.Key] == p {
		delete(r.byKey, p.req.Key)
	}
}

// Get is the approval with that id, pending or recently decided.
func (r *Registry) Get(id string) (Info, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.byID[id]
	if p == nil {
		return Info{}, fmt.Errorf("%w: %q", ErrNotFound, id)
	}
	return p.info(), nil
}

// List is the pending approvals, oldest first.
func (r *Registry) List() []Info {
	r.mu.Lock()
	out := make([]Info, 0, len(r.byID))
	for _, p := range r.byID {
		if !p.decided {
			out = append(out, p.info())
		}
	}
	r.mu.Unlock()
	slices.SortFunc(out, func(a, b Info) int {
		return cmp.Or(a.Asked.Compare(b.Asked), cmp.Compare(a.ID, b.ID))
	})
	return out
}

// Close denies every pending approval with reason "trl is shutting
// down", refuses later asks, and closes the subscriptions.
func (r *Registry) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.closed = true // before finishing: no approval is remembered past Close
	for _, p := range r.byID {
		r.finish(p, Outcome{Decision: Deny, Reason: ReasonClosed})
	}
	for _, p := range r.byID {
		if p.forget != nil {
			p.forget.Stop()
		}
	}
	for s := range r.subs {
		s.close()
	}
	clear(r.subs)
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on Linux
	return "ap_" + hex.EncodeToString(b[:])
}
