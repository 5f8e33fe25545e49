package session

import (
	"sync"
	"time"
)

// followUps is a session's schedule of the delayed work of signal.go and
// end.go, all of it run by one goroutine, the follower (see the top of
// signal.go for what is scheduled and why it is the session's). The
// follower runs while something is scheduled: it is started by the first
// follow-up, and returns once none is left — each has run, or its line is
// over (a follow-up only ever acts for the line it was made for) — or the
// session has ended; Close waits for it. Its lock guards the schedule
// only and is never held while a follow-up runs.
type followUps struct {
	mu      sync.Mutex
	queue   []followUp
	wake    chan struct{} // 1-buffered: the schedule changed or a line ended
	running chan struct{} // closed when the running follower returns; nil when none runs
	closed  bool          // Close has begun: nothing more is scheduled
}

// followUp is one piece of delayed work for job's line. do runs with no
// lock held; a positive result schedules it again that much later.
type followUp struct {
	at  time.Time
	job *Line
	do  func() time.Duration
}

// follow schedules do to run d from now (at once if d <= 0) for job's
// line, starting the follower if none runs. Nothing is scheduled once
// the session has ended.
func (s *Session) follow(job *Line, d time.Duration, do func() time.Duration) {
	f := &s.fu
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed || s.ended.Err() != nil {
		return
	}
	f.queue = append(f.queue, followUp{at: time.Now().Add(d), job: job, do: do})
	if f.running != nil {
		f.poke()
		return
	}
	if f.wake == nil {
		f.wake = make(chan struct{}, 1)
	}
	f.running = make(chan struct{})
	go s.follower(f.running)
}

// poke wakes the follower to look at its schedule again.
func (f *followUps) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// lineEnded tells the follower that a line is over: what was scheduled
// for it is dropped, and the follower returns if nothing else is left.
func (s *Session) lineEnded() {
	f := &s.fu
	f.mu.Lock()
	if f.running != nil {
		f.poke()
	}
	f.mu.Unlock()
}

// stopFollowing is Close's: nothing more is scheduled, and it returns once
// the follower (which the session's end has woken) has returned.
func (s *Session) stopFollowing() {
	f := &s.fu
	f.mu.Lock()
	f.closed = true
	running := f.running
	if running != nil {
		f.poke()
	}
	f.mu.Unlock()
	if running != nil {
		<-running
	}
}

// follower runs the scheduled follow-ups in the order they are due, one
// at a time, until none is left or the session ends.
func (s *Session) follower(done chan struct{}) {
	f := &s.fu
	defer close(done)
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		u, wait, ok := f.next(s)
		if !ok {
			return
		}
		if wait > 0 {
			t.Reset(wait)
			select {
			case <-t.C:
			case <-f.wake:
			case <-s.ended.Done():
			}
			t.Stop()
			continue
		}
		if again := u.do(); again > 0 {
			u.at = time.Now().Add(again)
			f.mu.Lock()
			f.queue = append(f.queue, u)
			f.mu.Unlock()
		}
	}
}

// next drops the follow-ups of lines that are over and returns the one due
// first, taken off the schedule if it is due now, or how long until it
// is. It reports false, marking the follower gone, when nothing is left
// to run or the session has ended.
func (f *followUps) next(s *Session) (followUp, time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.queue[:0]
	for _, u := range f.queue {
		select {
		case <-u.job.done:
		default:
			kept = append(kept, u)
		}
	}
	clear(f.queue[len(kept):])
	f.queue = kept
	if len(f.queue) == 0 || f.closed || s.ended.Err() != nil {
		f.queue = nil
		f.running = nil
		return followUp{}, 0, false
	}
	first := 0
	for i, u := range f.queue {
		if u.at.Before(f.queue[first].at) {
			first = i
		}
	}
	u := f.queue[first]
	if wait := time.Until(u.at); wait > 0 {
		return followUp{}, wait, true
	}
	f.queue = append(f.queue[:first], f.queue[first+1:]...)
	return u, 0, true
}
