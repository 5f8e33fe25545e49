package approval

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func newRegistry(t *testing.T, o Options) (*Registry, *fakeClock) {
	t.Helper()
	c := newFakeClock()
	o.Clock = c
	r := New(o)
	t.Cleanup(r.Close)
	return r, c
}

func ask(t *testing.T, r *Registry, key string) *Pending {
	t.Helper()
	p, created, err := r.Ask(context.Background(), Request{Key: key, Rule: "pushing needs a person", Reason: "a push publishes work",
		Dangerous: true, Command: "git push", Session: "dev-1", Actor: "agent"})
	require.NoError(t, err)
	require.True(t, created)
	return p
}

// TestApprove checks a decision reaches the waiter with who, why and how
// long it waited.
func TestApprove(t *testing.T) {
	r, c := newRegistry(t, Options{})
	p := ask(t, r, "tc_1")
	_, ok := p.Outcome()
	assert.False(t, ok, "pending")
	assert.Equal(t, p.Asked().Add(5*time.Minute), p.Deadline())

	c.Advance(90 * time.Second)
	require.NoError(t, r.Decide(p.ID(), Approve, "looks right", "alice"))
	o, err := p.Wait(context.Background())
	require.NoError(t, err)
	assert.True(t, o.Approved())
	assert.Equal(t, Outcome{Decision: Approve, Reason: "looks right", Approver: "alice",
		DecidedAt: p.Asked().Add(90 * time.Second), Waited: 90 * time.Second}, o)
	assert.Equal(t, 1, c.pending(), "the timeout is stopped; only the forget timer is left")
}

// TestDecideErrors checks unknown ids, second decisions and bad decisions
// are refused.
func TestDecideErrors(t *testing.T) {
	r, _ := newRegistry(t, Options{})
	assert.ErrorIs(t, r.Decide("ap_nope", Approve, "", "alice"), ErrNotFound)
	p := ask(t, r, "tc_1")
	assert.ErrorIs(t, r.Decide(p.ID(), "yes", "", "alice"), ErrBadDecision)
	require.NoError(t, r.Decide(p.ID(), Deny, "not now", "alice"))
	err := r.Decide(p.ID(), Approve, "changed my mind", "bob")
	assert.ErrorIs(t, err, ErrDecided)
	assert.EqualError(t, err, "the approval is already decided: deny by alice (not now)")
	o, _ := p.Outcome()
	assert.Equal(t, Deny, o.Decision, "the first decision stands")
	assert.False(t, o.Approved())
}

// TestTimeoutDenies checks the fail-closed timeout: 5 minutes by default,
// configurable, a denial with reason "timed out".
func TestTimeoutDenies(t *testing.T) {
	for _, tt := range []struct {
		timeout, want time.Duration
	}{{0, 5 * time.Minute}, {30 * time.Second, 30 * time.Second}} {
		t.Run(tt.want.String(), func(t *testing.T) {
			r, c := newRegistry(t, Options{Timeout: tt.timeout})
			assert.Equal(t, tt.want, r.Timeout())
			p := ask(t, r, "tc_1")
			c.Advance(tt.want - time.Nanosecond)
			_, ok := p.Outcome()
			require.False(t, ok, "still pending just before the timeout")
			c.Advance(time.Nanosecond)
			o, ok := p.Outcome()
			require.True(t, ok)
			assert.Equal(t, Outcome{Decision: Deny, Reason: "timed out", TimedOut: true,
				DecidedAt: p.Asked().Add(tt.want), Waited: tt.want}, o)
			assert.ErrorIs(t, r.Decide(p.ID(), Approve, "too late", "alice"), ErrDecided)
			assert.Empty(t, r.List())
		})
	}
}

// TestRealClockTimeout runs the timeout on the real clock once.
func TestRealClockTimeout(t *testing.T) {
	r := New(Options{Timeout: 20 * time.Millisecond})
	defer r.Close()
	p, _, err := r.Ask(context.Background(), Request{Key: "k", Command: "rm x"})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	o, err := p.Wait(ctx)
	require.NoError(t, err)
	assert.True(t, o.TimedOut)
	assert.Equal(t, Deny, o.Decision)
	assert.GreaterOrEqual(t, o.Waited, 20*time.Millisecond)
}

// TestRetryNeverAsksTwice checks a retried call (same key) gets the same
// approval while it is pending and after its decision, until the registry
// forgets it.
func TestRetryNeverAsksTwice(t *testing.T) {
	r, c := newRegistry(t, Options{Remember: time.Minute})
	p := ask(t, r, "tc_1")
	q, created, err := r.Ask(context.Background(), Request{Key: "tc_1", Command: "git push", Session: "dev-1"})
	require.NoError(t, err)
	assert.False(t, created)
	assert.Same(t, p, q)
	assert.Len(t, r.List(), 1)

	require.NoError(t, r.Decide(p.ID(), Deny, "no", "alice"))
	c.Advance(time.Minute - time.Nanosecond)
	q, created, err = r.Ask(context.Background(), Request{Key: "tc_1", Command: "git push", Session: "dev-1"})
	require.NoError(t, err)
	assert.False(t, created, "a retry just after the decision gets the decision")
	o, ok := q.Outcome()
	require.True(t, ok)
	assert.Equal(t, "no", o.Reason)
	info, err := r.Get(p.ID())
	require.NoError(t, err)
	require.NotNil(t, info.Outcome)

	c.Advance(time.Nanosecond)
	_, err = r.Get(p.ID())
	assert.ErrorIs(t, err, ErrNotFound, "forgotten")
	assert.ErrorIs(t, r.Decide(p.ID(), Approve, "", "alice"), ErrNotFound)
	q = ask(t, r, "tc_1")
	assert.NotEqual(t, p.ID(), q.ID(), "a call after the memory asks anew")
}

// TestKeyReusedForAnotherCommand: a call under a known key whose command
// or session differs is asked anew; a person approved the first command,
// not this one (the gateway ran a second command on the first's approval).
func TestKeyReusedForAnotherCommand(t *testing.T) {
	r, _ := newRegistry(t, Options{Remember: time.Minute})
	p := ask(t, r, "tc_1")
	require.NoError(t, r.Decide(p.ID(), Approve, "ok", "alice"))
	for _, req := range []Request{
		{Key: "tc_1", Command: "rm -rf precious", Session: "dev-1"},
		{Key: "tc_1", Command: "git push", Session: "dev-2"},
		{Key: "tc_1", Command: "git push", Session: "dev-1", Whole: "git push; curl evil"},
	} {
		q, created, err := r.Ask(context.Background(), req)
		require.NoError(t, err)
		assert.True(t, created, "%+v is asked anew", req)
		assert.NotEqual(t, p.ID(), q.ID())
		_, decided := q.Outcome()
		assert.False(t, decided, "%+v does not inherit the approval", req)
	}
}

// TestDistinctKeysNotMerged: concurrent calls of one agent have their own
// approvals (seed 004), and an empty key never merges.
func TestDistinctKeysNotMerged(t *testing.T) {
	r, _ := newRegistry(t, Options{})
	a, b := ask(t, r, "agent1:tc_1"), ask(t, r, "agent1:tc_2")
	e1, e2 := ask(t, r, ""), ask(t, r, "")
	ids := map[string]bool{a.ID(): true, b.ID(): true, e1.ID(): true, e2.ID(): true}
	assert.Len(t, ids, 4)
	require.NoError(t, r.Decide(a.ID(), Approve, "", "alice"))
	_, ok := b.Outcome()
	assert.False(t, ok, "deciding one leaves the other pending")
	assert.Len(t, r.List(), 3)
}

// TestList checks the pending list: oldest first, decided ones gone.
func TestList(t *testing.T) {
	r, c := newRegistry(t, Options{})
	var ps []*Pending
	for i := range 3 {
		ps = append(ps, ask(t, r, fmt.Sprint("k", i)))
		c.Advance(time.Second)
	}
	require.NoError(t, r.Decide(ps[1].ID(), Approve, "", "alice"))
	l := r.List()
	require.Len(t, l, 2)
	assert.Equal(t, ps[0].ID(), l[0].ID)
	assert.Equal(t, ps[2].ID(), l[1].ID)
	assert.Equal(t, "git push", l[0].Command)
	assert.True(t, l[0].Dangerous)
	assert.Nil(t, l[0].Outcome)
}

// TestWaitContextEnds: a waiter that gives up leaves the approval pending.
func TestWaitContextEnds(t *testing.T) {
	r, _ := newRegistry(t, Options{})
	p := ask(t, r, "tc_1")
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("client went away")
	cancel(stop)
	_, err := p.Wait(ctx)
	assert.ErrorIs(t, err, stop)
	assert.Len(t, r.List(), 1)
	_, _, err = r.Ask(ctx, Request{Key: "tc_2"})
	assert.ErrorIs(t, err, stop, "no ask for a caller already gone")
}

// TestCloseDenies: closing fails closed and refuses later asks.
func TestCloseDenies(t *testing.T) {
	c := newFakeClock()
	r := New(Options{Clock: c})
	p := ask(t, r, "tc_1")
	sub := r.Subscribe(8)
	r.Close()
	o, ok := p.Outcome()
	require.True(t, ok)
	assert.Equal(t, Deny, o.Decision)
	assert.Equal(t, "trl is shutting down", o.Reason)
	_, _, err := r.Ask(context.Background(), Request{Key: "tc_2"})
	assert.ErrorIs(t, err, ErrClosed)
	ev := <-sub.C
	assert.Equal(t, EventDecided, ev.Kind)
	_, open := <-sub.C
	assert.False(t, open, "the subscription ends with the registry")
	assert.Equal(t, 0, c.pending(), "no timer left")
	r.Close()
}

// TestSubscribe checks the live events a console shows.
func TestSubscribe(t *testing.T) {
	r, c := newRegistry(t, Options{})
	sub := r.Subscribe(8)
	defer sub.Close()
	p := ask(t, r, "tc_1")
	ev := <-sub.C
	assert.Equal(t, EventAsked, ev.Kind)
	assert.Equal(t, p.ID(), ev.Approval.ID)
	assert.Nil(t, ev.Approval.Outcome)
	c.Advance(5 * time.Minute)
	ev = <-sub.C
	assert.Equal(t, EventDecided, ev.Kind)
	require.NotNil(t, ev.Approval.Outcome)
	assert.True(t, ev.Approval.Outcome.TimedOut)
	assert.Zero(t, ev.Dropped)
}

// TestSlowSubscriberNeverBlocks: a subscriber that reads nothing does not
// hold up asks and decisions; it later gets the newest events and the
// count of those it lost.
func TestSlowSubscriberNeverBlocks(t *testing.T) {
	r, _ := newRegistry(t, Options{})
	sub := r.Subscribe(2)
	defer sub.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 100 {
			p, _, err := r.Ask(context.Background(), Request{Key: fmt.Sprint(i)})
			if err == nil {
				_ = r.Decide(p.ID(), Approve, "", "alice")
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("asks and decisions blocked on a subscriber that reads nothing")
	}
	first, second := <-sub.C, <-sub.C
	assert.Equal(t, "99", second.Approval.Key, "the newest event is kept")
	assert.Equal(t, EventDecided, second.Kind)
	assert.Positive(t, first.Dropped, "told to list again")
	assert.Equal(t, 198, first.Dropped+second.Dropped, "200 events, 2 kept")
}

// TestConcurrentAsksAndDecisions (with -race): many retries of one call
// share one approval, and of many concurrent decisions exactly one wins.
func TestConcurrentAsksAndDecisions(t *testing.T) {
	r, c := newRegistry(t, Options{})
	sub := r.Subscribe(1)
	defer sub.Close()
	const n = 32
	got := make([]*Pending, n)
	created := make([]bool, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			p, c, err := r.Ask(context.Background(), Request{Key: "tc_same", Command: "rm -rf build"})
			if err == nil {
				got[i], created[i] = p, c
			}
		})
	}
	wg.Wait()
	nCreated := 0
	for i := range n {
		require.NotNil(t, got[i])
		assert.Same(t, got[0], got[i])
		if created[i] {
			nCreated++
		}
	}
	assert.Equal(t, 1, nCreated, "asked once")

	p := got[0]
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			d := Approve
			if i%2 == 1 {
				d = Deny
			}
			errs[i] = r.Decide(p.ID(), d, fmt.Sprint("decider ", i), fmt.Sprint("person", i))
		})
		wg.Go(func() { _, _ = p.Wait(context.Background()) })
		wg.Go(func() { _ = r.List() })
	}
	wg.Go(func() { c.Advance(5 * time.Minute) })
	wg.Wait()
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		} else {
			assert.ErrorIs(t, err, ErrDecided)
		}
	}
	o, ok := p.Outcome()
	require.True(t, ok)
	if o.TimedOut {
		assert.Zero(t, won)
	} else {
		assert.Equal(t, 1, won, "exactly one decision wins")
	}
}
