// Package rawio makes the system calls of a command's round trip without
// telling Go's scheduler: a read of the client's request, the line written
// to the shell, the shell's records, the answer. Only calls that wait for
// no other process are made this way: on a descriptor that is
// non-blocking, or with a flag that makes the one call so (MSG_DONTWAIT,
// RWF_NOWAIT), or an ioctl that reads a terminal's modes or restarts its
// output.
//
// Two kinds may still sleep briefly inside the kernel, for kernel work
// already under way, never for a process: a read of a PTY master that
// finds nothing first waits for the terminal's worker to pass on output
// already written (n_tty_read flushes it before it answers EAGAIN, which
// is what makes a drain complete), and a terminal ioctl takes the line
// discipline's and the modes' locks, which another holds only while it
// changes them. Their callers accept that.
//
// Why: every ordinary system call (syscall.Syscall) first tells the
// scheduler it may block, and when the whole daemon was idle, as it is
// while a shell runs a command, that wakes the runtime's monitor thread
// (sysmon) out of its deep sleep, which then polls every 20 µs until it
// sees the daemon idle again. On a small VM whose idle vCPUs halt, each of
// those wake-ups takes a CPU the shell or the client needed: with the
// round trip's calls made raw, `exec.run true` took 10–25 µs less in `trl
// bench`, 30–40 µs less for a plain client of a daemon writing no audit
// line (BENCHMARKS.md, ninth session). A raw call holds its thread and P
// for its length (and a garbage collection's stop waits for it), which is
// why a call that may wait for a process must never be made here. The race detector is told
// of each read and write as package syscall tells it (race.go).
package rawio

import (
	"io"
	"os"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read reads fd once. fd must be non-blocking: EAGAIN is returned as such.
func Read(fd int, p []byte) (int, error) {
	n, err := transfer(unix.SYS_READ, fd, p)
	raceRead(p[:n])
	return n, err
}

// write writes fd once. fd must be non-blocking.
func write(fd int, p []byte) (int, error) {
	raceWrote(p)
	return transfer(unix.SYS_WRITE, fd, p)
}

// transfer is read(2) or write(2) (trap) of p on fd.
func transfer(trap uintptr, fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)))
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// SendNoWait sends what it can of p on the socket fd without waiting for
// room (MSG_DONTWAIT, MSG_NOSIGNAL), whether or not fd itself blocks: it
// returns how much went, 0 with EAGAIN when none could.
func SendNoWait(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	raceWrote(p)
	n, _, e := unix.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// WriteNoWait writes what it can of p to fd without waiting (pwritev2
// with RWF_NOWAIT, at the file's own offset). Pipes, sockets and
// terminals take it; a regular file on most filesystems says
// EOPNOTSUPP, and the caller writes the ordinary way.
func WriteNoWait(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	raceWrote(p)
	iov := unix.Iovec{Base: &p[0]}
	iov.SetLen(len(p))
	// The file's own offset, as write(2): -1, in the two halves the
	// call takes (a 64-bit kernel reads it from the low one alone).
	off := int64(-1)
	n, _, e := unix.RawSyscall6(unix.SYS_PWRITEV2, uintptr(fd), uintptr(unsafe.Pointer(&iov)), 1,
		uintptr(off), uintptr(off>>32), unix.RWF_NOWAIT)
	if e != 0 {
		return 0, e
	}
	return int(n), nil
}

// IoctlPtr is ioctl(fd, req, arg) for a request that waits for no process
// (one that reads a terminal's modes or size; see the package doc).
func IoctlPtr(fd int, req uint, arg unsafe.Pointer) error {
	if _, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(arg)); e != 0 {
		return e
	}
	return nil
}

// IoctlInt is ioctl(fd, req, v) for a request that waits for no process
// (one that restarts a terminal's output).
func IoctlInt(fd int, req uint, v int) error {
	if _, _, e := unix.RawSyscall(unix.SYS_IOCTL, uintptr(fd), uintptr(req), uintptr(v)); e != 0 {
		return e
	}
	return nil
}

// GetRlimit reads process pid's limit of resource.
func GetRlimit(pid, resource int, lim *unix.Rlimit) error {
	if _, _, e := unix.RawSyscall6(unix.SYS_PRLIMIT64, uintptr(pid), uintptr(resource), 0, uintptr(unsafe.Pointer(lim)), 0, 0); e != 0 {
		return e
	}
	return nil
}

// Conn reads and writes a descriptor Go's poller serves (a socket, a
// non-blocking pipe) through its syscall.RawConn: each call is raw, and
// when one would block the goroutine parks on the poller as os.File's and
// net.Conn's do. Read deadlines and Close work as they do there.
type Conn struct{ rc syscall.RawConn }

// NewConn serves rc.
func NewConn(rc syscall.RawConn) *Conn { return &Conn{rc: rc} }

// Read reads at least one byte, or returns io.EOF at end of input, or the
// error (the poller's when the descriptor is closed or its deadline passes).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	var n int
	var err error
	if perr := c.rc.Read(func(fd uintptr) bool {
		for {
			n, err = Read(int(fd), p)
			switch err {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // the poller waits for input
			case nil:
				if n == 0 {
					err = io.EOF
				}
			}
			return true
		}
	}); perr != nil {
		return 0, perr
	}
	return n, err
}

// Write writes all of p, parking on the poller while the descriptor has no
// room, and returns how much it wrote and the first error.
func (c *Conn) Write(p []byte) (int, error) {
	written := 0
	var err error
	for written < len(p) && err == nil {
		if perr := c.rc.Write(func(fd uintptr) bool {
			for {
				var n int
				n, err = write(int(fd), p[written:])
				switch err {
				case unix.EINTR:
					continue
				case unix.EAGAIN:
					err = nil
					return false // the poller waits for room
				}
				written += n
				return true
			}
		}); perr != nil {
			return written, perr
		}
	}
	return written, err
}

// Writer writes to a file that may block (the daemon's stderr: a pipe to
// a log collector, a socket): each Write goes with one raw call that
// never waits (WriteNoWait) when the file takes all of it at once, as it
// almost always does, and otherwise the rest goes through the file's own
// Write, which the runtime knows may wait. Writes are serialized, so one
// never splits another.
type Writer struct {
	mu sync.Mutex
	f  *os.File
	rc syscall.RawConn
}

// NewWriter returns a Writer for f when f is a pipe, a socket or a
// character device, the kinds RWF_NOWAIT serves, and f itself otherwise
// (a regular file: buffered writes cannot be asked not to wait).
func NewWriter(f *os.File) io.Writer {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&(os.ModeNamedPipe|os.ModeSocket|os.ModeCharDevice) == 0 {
		return f
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	return &Writer{f: f, rc: rc}
}

// Write writes all of p.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var n int
	var err error
	if w.rc != nil {
		if cerr := w.rc.Control(func(fd uintptr) { n, err = WriteNoWait(int(fd), p) }); cerr != nil {
			return 0, cerr
		}
		if err == nil && n == len(p) {
			return n, nil
		}
		if err != nil && err != unix.EAGAIN && err != unix.EINTR {
			// A device that cannot be asked (EOPNOTSUPP), a kernel
			// without pwritev2: the ordinary way from now on, which
			// also says what went wrong.
			w.rc = nil
		}
	}
	m, err := w.f.Write(p[n:])
	return n + m, err
}
