package session

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// nsRoot is a descriptor of the root directory of an isolated session's
// mount namespace, opened on the namespace's thread before the shell
// starts (namespace.go). The file methods resolve the session's paths
// from it (files.FS.Within): the daemon's own /tmp is not the session's.
// A descriptor, rather than /proc/PID/root of the shell, cannot come to
// name another process's tree when the shell's pid is reused. It is
// closed when the shell is reaped or the session closed.
type nsRoot struct {
	mu sync.Mutex
	f  *os.File
}

// openHere opens "/" as the calling thread sees it.
func (r *nsRoot) openHere() error {
	fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.f = os.NewFile(uintptr(fd), "/")
	r.mu.Unlock()
	return nil
}

func (r *nsRoot) drop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f != nil {
		r.f.Close()
		r.f = nil
	}
}

// RootDir is a new descriptor of the root directory of the session's
// mount namespace, for a session that has one of its own (isolated);
// own is false for a session that shares the daemon's. The caller closes
// it. Once the shell has been reaped the namespace is gone: ErrExited.
func (s *Session) RootDir() (f *os.File, own bool, err error) {
	if s.lease == nil {
		return nil, false, nil
	}
	s.root.mu.Lock()
	defer s.root.mu.Unlock()
	if s.root.f == nil {
		return nil, true, errorf(ErrExited, "session %s's shell has exited; its files can no longer be reached", s.id)
	}
	fd, err := unix.FcntlInt(s.root.f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return nil, true, err
	}
	return os.NewFile(uintptr(fd), "/"), true, nil
}
