package procs

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeProcs records what the Governor sets, in place of
// runtime.GOMAXPROCS (a test must not change its own process's).
type fakeProcs struct {
	mu  sync.Mutex
	now int
	log []int
}

func (f *fakeProcs) set(n int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.now
	f.now = n
	f.log = append(f.log, n)
	return old
}

func (f *fakeProcs) get() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeProcs) sets() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.log)
}

const quiet = 50 * time.Millisecond

func newFake(t *testing.T) (*Governor, *fakeProcs) {
	f := &fakeProcs{now: 4}
	g := newGovernor(4, quiet, f.set, time.Now)
	require.NotNil(t, g)
	t.Cleanup(g.Stop)
	return g, f
}

// TestOneRequestAtATimeStaysNarrow: requests one after another never
// widen the process, and cost no GOMAXPROCS call.
func TestOneRequestAtATimeStaysNarrow(t *testing.T) {
	g, f := newFake(t)
	assert.Equal(t, 1, f.get(), "narrow from the start")
	for range 100 {
		g.Enter()
		g.EnterCommand()
		g.LeaveCommand()
		g.Leave()
	}
	time.Sleep(2 * quiet)
	assert.Equal(t, 1, f.get())
	assert.Equal(t, 1, f.sets(), "only the first narrowing")
}

// TestOverlapWidensAtOnce: a second request in flight, or a followed
// stream, gives every P back before it goes on; the process narrows
// again only once nothing has overlapped for the quiet period.
func TestOverlapWidensAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name         string
		enter, leave func(*Governor)
	}{
		{"a second request", func(g *Governor) { g.Enter(); g.Enter() }, func(g *Governor) { g.Leave(); g.Leave() }},
		{"a second command", func(g *Governor) { g.EnterCommand(); g.EnterCommand() }, func(g *Governor) { g.LeaveCommand(); g.LeaveCommand() }},
		{"a stream", (*Governor).EnterStream, (*Governor).LeaveStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, f := newFake(t)
			tc.enter(g)
			assert.Equal(t, 4, f.get(), "wide while work overlaps")
			time.Sleep(2 * quiet)
			assert.Equal(t, 4, f.get(), "not narrowed while work still overlaps")
			// Taken before the leave that starts the quiet period, so the
			// narrowing cannot come less than quiet after it (taken after,
			// it flaked by microseconds: 49.65 ms against 50).
			left := time.Now()
			tc.leave(g)
			g.Enter() // a lone request after: no overlap
			g.Leave()
			assert.Equal(t, 4, f.get(), "still wide just after")
			require.Eventually(t, func() bool { return f.get() == 1 }, 5*time.Second, time.Millisecond)
			assert.GreaterOrEqual(t, time.Since(left), quiet, "narrowed only after the quiet period")
		})
	}
}

// TestQuietPeriodRestartsWithOverlap: overlapping work inside the quiet
// period puts the narrowing off until a whole quiet period has passed
// without it.
func TestQuietPeriodRestartsWithOverlap(t *testing.T) {
	g, f := newFake(t)
	g.EnterStream()
	g.LeaveStream()
	time.Sleep(quiet / 2)
	g.EnterStream()
	g.LeaveStream()
	last := time.Now()
	require.Eventually(t, func() bool { return f.get() == 1 }, 5*time.Second, time.Millisecond)
	assert.GreaterOrEqual(t, time.Since(last), quiet)
	assert.Equal(t, []int{1, 4, 1}, f.log, "widened once for both, narrowed once")
}

// TestStopGivesEveryPBack: Stop widens for good; later work changes
// nothing. A nil Governor (one P, or GOMAXPROCS set by hand) does nothing.
func TestStopGivesEveryPBack(t *testing.T) {
	g, f := newFake(t)
	g.Stop()
	assert.Equal(t, 4, f.get())
	g.Enter()
	g.Leave()
	time.Sleep(2 * quiet)
	assert.Equal(t, 4, f.get())

	var none *Governor
	none.Enter()
	none.EnterStream()
	none.Leave()
	none.LeaveStream()
	none.Stop()
	assert.Nil(t, newGovernor(1, quiet, f.set, time.Now), "one P: nothing to govern")
	t.Setenv("GOMAXPROCS", "2")
	assert.Nil(t, New(quiet), "GOMAXPROCS set by hand is left alone")
}

// TestCountsDoNotWaitForTheSet: a GOMAXPROCS change in progress (which
// waits for a garbage collection under way) holds up only the request
// that made it; other requests count themselves in and out at once.
func TestCountsDoNotWaitForTheSet(t *testing.T) {
	release := make(chan struct{})
	var mu sync.Mutex
	blocking := false
	set := func(n int) int {
		mu.Lock()
		b := blocking
		mu.Unlock()
		if b {
			<-release
		}
		return 0
	}
	g := newGovernor(4, quiet, set, time.Now)
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer g.Stop()
	defer unblock() // before Stop, on every way out
	mu.Lock()
	blocking = true
	mu.Unlock()
	widened := make(chan struct{})
	go func() { g.EnterStream(); close(widened) }() // widens: blocks in set
	time.Sleep(50 * time.Millisecond)
	counted := make(chan struct{})
	go func() { g.Enter(); g.Leave(); close(counted) }()
	select {
	case <-counted:
	case <-time.After(2 * time.Second):
		t.Fatal("a request's Enter waited behind a GOMAXPROCS change")
	}
	mu.Lock()
	blocking = false
	mu.Unlock()
	unblock()
	<-widened
	g.LeaveStream()
}
