package gateway

import (
	"container/list"
	"crypto/sha256"
	"sync"
	"time"
)

// memo is one call's answer, shared by every request with its toolCallId.
// done is closed once status and body are set.
type memo struct {
	key         [sha256.Size]byte
	fingerprint [sha256.Size]byte
	done        chan struct{}
	status      int
	body        []byte

	finished time.Time
	elem     *list.Element // in memoStore.order once finished and kept
}

func newMemo() *memo { return &memo{done: make(chan struct{})} }

// memoStore remembers answers by (tenant, toolCallId) for a while, so a
// gateway's retry gets the first answer instead of running the command
// again. Answers still being computed are kept until they finish; finished
// ones are dropped oldest first when they are older than ttl or when there
// are more than maxEntries of them or maxBytes of bodies.
type memoStore struct {
	ttl        time.Duration
	maxEntries int
	maxBytes   int64

	mu    sync.Mutex
	byKey map[[sha256.Size]byte]*memo
	order *list.List // finished memos, oldest first
	bytes int64
}

func newMemoStore(ttl time.Duration, maxEntries int, maxBytes int64) *memoStore {
	return &memoStore{ttl: ttl, maxEntries: maxEntries, maxBytes: maxBytes,
		byKey: map[[sha256.Size]byte]*memo{}, order: list.New()}
}

// memoKey hashes the key, so a long toolCallId costs no more than a short one.
func memoKey(tenant, toolCallID string) [sha256.Size]byte {
	return sha256.Sum256([]byte(joinKey(tenant, toolCallID)))
}

// begin returns the memo for key: a new one (first is true: the caller
// computes the answer and calls finish), or the one already there, finished
// or not. conflict is set when that one was asked with another fingerprint.
func (s *memoStore) begin(key, fingerprint [sha256.Size]byte, now time.Time) (m *memo, first, conflict bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire(now)
	if m, ok := s.byKey[key]; ok {
		return m, false, m.fingerprint != fingerprint
	}
	m = newMemo()
	m.key, m.fingerprint = key, fingerprint
	s.byKey[key] = m
	return m, true, false
}

// finish sets m's answer and wakes its waiters. A kept answer is
// remembered; one that is not (the command never ran: busy, shutting down)
// is forgotten, so a retry runs it.
func (s *memoStore) finish(m *memo, status int, body []byte, keep bool, now time.Time) {
	m.status, m.body, m.finished = status, body, now
	close(m.done)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !keep {
		if s.byKey[m.key] == m {
			delete(s.byKey, m.key)
		}
		return
	}
	m.elem = s.order.PushBack(m)
	s.bytes += memoSize(m)
	for s.order.Len() > s.maxEntries || s.bytes > s.maxBytes {
		s.drop(s.order.Front().Value.(*memo))
	}
	s.expire(now)
}

// expire drops finished memos older than ttl. Called with s.mu held.
func (s *memoStore) expire(now time.Time) {
	for e := s.order.Front(); e != nil; e = s.order.Front() {
		m := e.Value.(*memo)
		if now.Sub(m.finished) < s.ttl {
			return
		}
		s.drop(m)
	}
}

func (s *memoStore) drop(m *memo) {
	s.order.Remove(m.elem)
	s.bytes -= memoSize(m)
	if s.byKey[m.key] == m {
		delete(s.byKey, m.key)
	}
}

func memoSize(m *memo) int64 { return int64(len(m.body)) + 128 }

// len returns how many memos are held, finished or not.
func (s *memoStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.byKey)
}
