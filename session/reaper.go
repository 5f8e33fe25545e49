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
type reaper struct {
	mu      sync.Mutex
	waiters map[int]chan unix.WaitStatus
	early   map[int]unix.WaitStatus // statuses reaped before anyone waited
	kick    chan struct{}           // a child was started
}

var (
	theReaper     *reaper
	theReaperOnce sync.Once
)

// enableReaper turns the reaper on for this process; it stays on.
func enableReaper() error {
	var err error
	theReaperOnce.Do(func() {
		if err = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
			return
		}
		theReaper = &reaper{
			waiters: map[int]chan unix.WaitStatus{},
			early:   map[int]unix.WaitStatus{},
			kick:    make(chan struct{}, 1),
		}
		go theReaper.loop()
	})
	return err
}

// loop reaps every child of the process, forever: the reaper lives as long
// as the process does, like the kernel's own init.
func (r *reaper) loop() {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			// No children: wait until one is started.
			<-r.kick
			continue
		}
		r.mu.Lock()
		if ch, ok := r.waiters[pid]; ok {
			delete(r.waiters, pid)
			ch <- ws
		} else {
			r.early[pid] = ws
		}
		r.mu.Unlock()
	}
}

// started tells the reaper a child exists, and returns the channel its
// status will arrive on.
func (r *reaper) started(pid int) <-chan unix.WaitStatus {
	ch := make(chan unix.WaitStatus, 1)
	r.mu.Lock()
	if ws, ok := r.early[pid]; ok {
		delete(r.early, pid)
		ch <- ws
	} else {
		r.waiters[pid] = ch
	}
	// Statuses of processes nobody waits for (re-parented orphans) are
	// dropped here, so early does not grow.
	for p := range r.early {
		delete(r.early, p)
	}
	r.mu.Unlock()
	select {
	case r.kick <- struct{}{}:
	default:
	}
	return ch
}
