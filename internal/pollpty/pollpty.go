// Package pollpty opens PTY pairs whose master is served by the Go
// runtime's poller: reads park a goroutine, not a thread, Close unblocks
// them, and a reader may read through SyscallConn without blocking (so it
// can hold a lock across a read and the hand-over of what it read).
package pollpty

import (
	"fmt"
	"os"
	"syscall"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// Open returns a PTY pair with a non-blocking master. creack/pty hands
// out a blocking master, so its fd is duplicated, made non-blocking, and
// wrapped anew.
func Open() (ptm, pts *os.File, err error) {
	m, pts, err := pty.Open()
	if err != nil {
		return nil, nil, fmt.Errorf("open pty: %w", err)
	}
	defer m.Close()
	rc, err := m.SyscallConn()
	if err != nil {
		pts.Close()
		return nil, nil, err
	}
	dup := -1
	var dupErr error
	rc.Control(func(fd uintptr) {
		dup, dupErr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	})
	if dupErr == nil {
		dupErr = unix.SetNonblock(dup, true)
	}
	if dupErr != nil {
		if dup >= 0 {
			unix.Close(dup)
		}
		pts.Close()
		return nil, nil, fmt.Errorf("open pty: %w", dupErr)
	}
	return os.NewFile(uintptr(dup), "/dev/ptmx"), pts, nil
}

// Unread reports whether the fd behind rc (a PTY master or a pipe) holds
// bytes nobody has read yet.
func Unread(rc syscall.RawConn) bool {
	if rc == nil {
		return false
	}
	n := 0
	_ = rc.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ)
	})
	return n > 0
}
