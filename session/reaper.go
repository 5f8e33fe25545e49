package session

import (
	"sync"

	"golang.org/x/sys/unix"
)

// The reaper makes the daemon the child subreaper of everything its shells
// start (PR_SET_CHILD_SUBREAPER): a process that leaves its session — a
// double fork, `setsid cmd &`, `nohup cmd &` whose shell is gone — is
// re-parented to the daemon instead of to init, and the daemon reaps it,
// so no zombie is left behind. One goroutine owns wait4(-1) for the whole
// process and hands each shell's status to the session that waits for it.
//
// It must be the only thing that waits for children in the process: once
// enabled, nothing else may use os/exec's Wait or os.Process.Wait.
//
// It also learns when a shell is stopped (WUNTRACED): a shell that stopped
// itself (`kill -STOP $$`, `suspend`) would never answer again, and its
// session is told so that it can end with that cause.
type reaper struct {
	mu      sync.Mutex
	waiters map[int]waiter
	kick    chan struct{} // a child was started
}

type waiter struct {
	status  chan unix.WaitStatus
	stopped func(unix.Signal) // must not block
}

var (
	theReaper     *reaper
	theReaperErr  error
	theReaperOnce sync.Once
)

// enableReaper turns the reaper on for this process; it stays on. Every
// call returns the first call's outcome.
func enableReaper() error {
	theReaperOnce.Do(func() {
		if theReaperErr = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); theReaperErr != nil {
			return
		}
		theReaper = &reaper{
			waiters: map[int]waiter{},
			kick:    make(chan struct{}, 1),
		}
		go theReaper.loop()
	})
	return theReaperErr
}

// loop reaps every child of the process, forever: the reaper lives as long
// as the process does, like the kernel's own init.
func (r *reaper) loop() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, unix.WUNTRACED, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			// No children: wait until one is started.
			<-r.kick
			continue
		}
		// Statuses nobody waits for (re-parented orphans) are dropped.
		r.mu.Lock()
		if w, ok := r.waiters[pid]; ok {
			if ws.Stopped() {
				if w.stopped != nil {
					w.stopped(ws.StopSignal())
				}
			} else {
				delete(r.waiters, pid)
				w.status <- ws
			}
		}
		r.mu.Unlock()
	}
}

// spawn runs start, which starts one child and returns its pid, and
// returns the channel the child's status will arrive on. stopped, if not
// nil, is called (without blocking) each time the child is stopped.
func (r *reaper) spawn(stopped func(unix.Signal), start func() (int, error)) (<-chan unix.WaitStatus, error) {
	r.mu.Lock()
	pid, err := start()
	if err != nil {
		r.mu.Unlock()
		return nil, err
	}
	ch := make(chan unix.WaitStatus, 1)
	r.waiters[pid] = waiter{status: ch, stopped: stopped}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return ch, nil
}
