// Package callbacks is a copy-on-write list of callbacks: adding or
// removing one takes a lock; reading the list is one atomic load, so a
// hot path with nobody to call pays almost nothing.
package callbacks

import (
	"sync"
	"sync/atomic"
)

// List holds callbacks of type F. The zero value is an empty list.
type List[F any] struct {
	mu   sync.Mutex
	list atomic.Pointer[[]*F]
}

// Add adds f until remove is called; remove may be called more than once.
func (l *List[F]) Add(f F) (remove func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fp := &f
	var next []*F
	if cur := l.list.Load(); cur != nil {
		next = append(next, *cur...)
	}
	next = append(next, fp)
	l.list.Store(&next)
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		cur := l.list.Load()
		if cur == nil {
			return
		}
		var next []*F
		for _, g := range *cur {
			if g != fp {
				next = append(next, g)
			}
		}
		l.list.Store(&next)
	}
}

// Load returns the callbacks in the order added (nil when there are
// none). The slice is never changed: a callback added or removed later
// is in a new one.
func (l *List[F]) Load() []*F {
	if cur := l.list.Load(); cur != nil {
		return *cur
	}
	return nil
}
