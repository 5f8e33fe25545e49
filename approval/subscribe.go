package approval

import "sync"

// EventKind says what happened to an approval.
type EventKind string

const (
	EventAsked   EventKind = "asked"
	EventDecided EventKind = "decided"
)

// Event is one change of the registry, for a live list of approvals.
type Event struct {
	Kind     EventKind
	Approval Info
	// Dropped is how many events before this one were dropped because
	// the subscriber was slow (the counts of the events it holds add up
	// to all it lost): it should List again.
	Dropped int
}

// Subscription receives the registry's events on C until Close (or the
// registry closes, which closes C). C is bounded: a subscriber that does
// not keep up loses its oldest events, never blocks the registry, and is
// told how many it lost.
type Subscription struct {
	C <-chan Event

	r       *Registry
	c       chan Event
	mu      sync.Mutex // orders the sends, so dropping the oldest makes room
	dropped int
	closed  bool
}

// Subscribe returns a subscription whose channel holds up to size events
// (at least 1).
func (r *Registry) Subscribe(size int) *Subscription {
	c := make(chan Event, max(size, 1))
	s := &Subscription{C: c, c: c, r: r}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		s.close()
		return s
	}
	r.subs[s] = struct{}{}
	return s
}

// Close ends the subscription and closes C.
func (s *Subscription) Close() {
	s.r.mu.Lock()
	delete(s.r.subs, s)
	s.r.mu.Unlock()
	s.close()
}

func (s *Subscription) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.c)
	}
}

// send never blocks: when C is full its oldest event is dropped.
func (s *Subscription) send(ev Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	for {
		ev.Dropped = s.dropped
		select {
		case s.c <- ev:
			s.dropped = 0
			return
		default:
		}
		select {
		case old := <-s.c:
			// The count the dropped event carried moves on with it.
			s.dropped += 1 + old.Dropped
		default:
		}
	}
}

// publish tells every subscriber; the caller holds r.mu.
func (r *Registry) publish(k EventKind, p *Pending) {
	if len(r.subs) == 0 {
		return
	}
	ev := Event{Kind: k, Approval: p.info()}
	for s := range r.subs {
		s.send(ev)
	}
}
