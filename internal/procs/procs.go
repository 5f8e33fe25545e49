// Package procs narrows the daemon to one processor while it serves one
// request at a time, and widens it again as soon as work overlaps.
//
// A daemon answering one agent's commands one after another runs one
// goroutine at a time: the request's, then the session's reader that sees
// the command end, then the request's again. With more than one P, Go's
// scheduler wakes an idle thread at each such hand-off (wakep) to look for
// work there is none of, and the goroutines move between CPUs, taking the
// CPU the shell and the client need. On a 2-vCPU VM that was a quarter of
// an exec.run's latency (BENCHMARKS.md, "one P while one request runs").
// With one P a hand-off stays on the thread that made it.
//
// Parallel work gets every P back at once: a second request in flight, a
// second command running (each session's output is read by its own
// goroutine), or a stream being followed (its reader and its writer to the
// client run side by side). The Governor narrows again only after a quiet period with
// neither, so a burst of parallel clients does not flap between the two.
package procs

import (
	"os"
	goruntime "runtime"
	"sync"
	"time"
)

// DefaultQuiet is how long work must not have overlapped before the
// Governor narrows the process to one P again.
const DefaultQuiet = time.Second

// Governor sets GOMAXPROCS from the work in flight. Its methods may be
// called on a nil Governor, which does nothing.
type Governor struct {
	wide  int              // GOMAXPROCS for overlapping work
	quiet time.Duration    // see DefaultQuiet
	set   func(n int) int  // runtime.GOMAXPROCS
	now   func() time.Time // time.Now

	mu     sync.Mutex
	count  [kinds]int // work in flight, by kind
	narrow bool       // GOMAXPROCS should be 1 (apply makes it so)
	// busyAt is when work last overlapped (or stopped overlapping).
	busyAt  time.Time
	timer   *time.Timer // armed to narrow; nil when not
	stopped bool

	// setMu orders apply's calls; applied is what the last one set.
	setMu   sync.Mutex
	applied int
}

// New returns a Governor for this process, or nil when there is nothing
// to govern: the process has one P, or its GOMAXPROCS was set by hand
// (the environment variable), which the Governor leaves alone.
func New(quiet time.Duration) *Governor {
	if os.Getenv("GOMAXPROCS") != "" {
		return nil
	}
	return newGovernor(goruntime.GOMAXPROCS(0), quiet, goruntime.GOMAXPROCS, time.Now)
}

func newGovernor(wide int, quiet time.Duration, set func(int) int, now func() time.Time) *Governor {
	if wide <= 1 {
		return nil
	}
	if quiet <= 0 {
		quiet = DefaultQuiet
	}
	g := &Governor{wide: wide, quiet: quiet, set: set, now: now, applied: wide, narrow: true}
	g.apply()
	return g
}

// apply sets GOMAXPROCS to what the Governor's state says now. It runs
// outside mu: runtime.GOMAXPROCS stops the world, and first waits for a
// garbage collection under way (20 ms at worst in a test with a large
// heap), which no request's Enter or Leave should wait behind. setMu
// orders the calls, and each sets the state as it is when it runs, so
// the last change wins.
func (g *Governor) apply() {
	g.setMu.Lock()
	defer g.setMu.Unlock()
	g.mu.Lock()
	n := g.wide
	if g.narrow {
		n = 1
	}
	g.mu.Unlock()
	if n != g.applied {
		g.set(n)
		g.applied = n
	}
}

// Wide is the GOMAXPROCS the Governor gives overlapping work.
func (g *Governor) Wide() int { return g.wide }

// The kinds of work counted.
const (
	calls    = iota // requests in flight
	commands        // commands running
	streams         // streams being followed
	kinds
)

// Enter counts a request that begins; Leave, one that ended.
func (g *Governor) Enter() { g.change(calls, 1) }

// Leave counts a request that ended.
func (g *Governor) Leave() { g.change(calls, -1) }

// EnterCommand counts a command that starts; LeaveCommand, one that ended.
func (g *Governor) EnterCommand() { g.change(commands, 1) }

// LeaveCommand counts a command that ended.
func (g *Governor) LeaveCommand() { g.change(commands, -1) }

// EnterStream counts a stream whose output is being followed; LeaveStream,
// one no longer followed.
func (g *Governor) EnterStream() { g.change(streams, 1) }

// LeaveStream counts a stream no longer followed.
func (g *Governor) LeaveStream() { g.change(streams, -1) }

// Stop gives the process every P back for good (at shutdown).
func (g *Governor) Stop() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.stopped = true
	if g.timer != nil {
		g.timer.Stop()
		g.timer = nil
	}
	g.narrow = false
	g.mu.Unlock()
	g.apply()
}

// overlapping reports whether work in flight can use more than one P.
// Called with mu held.
func (g *Governor) overlapping() bool {
	return g.count[calls] > 1 || g.count[commands] > 1 || g.count[streams] > 0
}

// change adds delta to the count of kind and widens or arms the
// narrowing as the work in flight now says.
func (g *Governor) change(kind, delta int) {
	if g == nil {
		return
	}
	g.mu.Lock()
	was := g.overlapping()
	g.count[kind] += delta
	widen := false
	switch {
	case g.stopped:
	case g.overlapping():
		g.busyAt = g.now()
		widen, g.narrow = g.narrow, false
	default:
		if was {
			g.busyAt = g.now()
		}
		g.armNarrow(g.quiet)
	}
	g.mu.Unlock()
	if widen {
		g.apply()
	}
}

// armNarrow arms the timer that narrows the process after d, unless it
// is narrow already or the timer is armed. Called with mu held.
func (g *Governor) armNarrow(d time.Duration) {
	if g.narrow || g.timer != nil || g.stopped {
		return
	}
	g.timer = time.AfterFunc(d, g.quietEnough)
}

// quietEnough narrows the process if no work has overlapped for the
// quiet period, and otherwise waits out the rest of it.
func (g *Governor) quietEnough() {
	g.mu.Lock()
	g.timer = nil
	if g.stopped || g.narrow || g.overlapping() {
		g.mu.Unlock()
		return // the end of the overlapping work arms it again
	}
	if since := g.now().Sub(g.busyAt); since < g.quiet {
		g.armNarrow(g.quiet - since)
		g.mu.Unlock()
		return
	}
	g.narrow = true
	g.mu.Unlock()
	g.apply()
}
