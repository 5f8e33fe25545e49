package transport

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// This file owns the socket's place in the file system: deciding whether
// an existing file may be replaced, binding with mode 0600, and removing
// only our own socket.

// ErrAlreadyListening is returned (wrapped) by ListenUnix when a live daemon
// answers on the socket path.
var ErrAlreadyListening = errors.New("another trl daemon is already listening")

// umaskMu serialises our umask changes so that two binds in this process
// cannot restore each other's umask wrongly.
var umaskMu sync.Mutex

const (
	// dialProbeTimeout bounds the check whether a daemon answers.
	dialProbeTimeout = time.Second
	// dirLockWait bounds the wait for another starting daemon.
	dirLockWait = 3 * time.Second
)

// bindSocket binds a listener at path with mode 0600 and returns it with the
// socket file's identity, which Close compares before removing the file.
//
// Starts are serialised by an flock on the directory, held only for this
// function: without it two daemons could both find a stale socket, the first
// bind a fresh one, and the second remove that live socket and bind its own.
// Between the lock holders, bind's EADDRINUSE still makes one winner against
// any other program creating the path.
func bindSocket(path string) (*net.UnixListener, fs.FileInfo, error) {
	unlock := lockDir(filepath.Dir(path))
	defer unlock()

	var lastErr error
	for range 2 {
		stale, err := inspectPath(path)
		if err != nil {
			return nil, nil, err
		}
		if stale != nil {
			if err := removeIfSame(path, stale); err != nil {
				return nil, nil, fmt.Errorf("removing the stale socket %s: %w", path, err)
			}
		}
		ln, err := listenPrivate(path)
		if err == nil {
			return finishBind(path, ln)
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, fmt.Errorf("listening on %s: %w", path, err)
		}
		// Something took the path since we looked: look again, which
		// names what it is (another daemon, usually).
		lastErr = err
	}
	return nil, nil, fmt.Errorf("listening on %s: %w; something keeps creating that path", path, lastErr)
}

// inspectPath decides what may be done about an existing file at path. It
// returns the file's info when it is a stale socket to remove, nil when the
// path is free, and an error when trl must not touch it. Lstat, because a
// symlink is never followed: it could point anywhere.
func inspectPath(path string) (fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("checking the socket path: %w", err)
	}
	switch mode := fi.Mode(); {
	case mode&fs.ModeSymlink != 0:
		return nil, fmt.Errorf("%s is a symbolic link; trl never follows or removes one at its socket path: remove it yourself or choose another socket path", path)
	case mode&fs.ModeSocket == 0:
		return nil, fmt.Errorf("%s exists and is not a socket (%s); trl leaves it alone: remove it yourself or choose another socket path", path, describeMode(mode))
	}
	c, err := net.DialTimeout("unix", path, dialProbeTimeout)
	switch {
	case err == nil:
		c.Close()
		return nil, fmt.Errorf("%w on %s; stop it first or choose another socket path", ErrAlreadyListening, path)
	case errors.Is(err, syscall.ECONNREFUSED):
		return fi, nil // a dead daemon's socket
	case errors.Is(err, syscall.ENOENT):
		return nil, nil // removed while we looked
	case errors.Is(err, syscall.EACCES):
		return nil, fmt.Errorf("%s is a socket trl may not connect to (it may belong to another user's daemon); choose another socket path", path)
	default:
		return nil, fmt.Errorf("cannot tell whether a daemon listens on %s (%v); not replacing it", path, err)
	}
}

func describeMode(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "mode " + m.String()
}

// listenPrivate binds with umask 0177, so the kernel creates the socket
// file 0600 from the start. A chmod after bind would leave a window in
// which the file is wider; binding in a private directory and renaming
// would need a no-replace rename that not every file system has. The umask
// is process-wide, so other goroutines creating files during the few
// microseconds of the bind get narrower modes than they asked for, never
// wider ones; umaskMu keeps our own binds from interleaving.
func listenPrivate(path string) (*net.UnixListener, error) {
	umaskMu.Lock()
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		return nil, err
	}
	// We remove the file ourselves, and only while it is still ours.
	ln.SetUnlinkOnClose(false)
	return ln, nil
}

// finishBind records the new socket's identity and checks its mode.
func finishBind(path string, ln *net.UnixListener) (*net.UnixListener, fs.FileInfo, error) {
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode().Perm() != 0o600 {
		err = fmt.Errorf("the socket %s was created with mode %#o, not 0600", path, fi.Mode().Perm())
	}
	if err != nil {
		ln.Close()
		if fi != nil {
			_ = removeIfSame(path, fi)
		}
		return nil, nil, err
	}
	return ln, fi, nil
}

// removeIfSame removes path only if it is still the file described by fi,
// so a socket that another daemon has since bound there is left alone.
func removeIfSame(path string, fi fs.FileInfo) error {
	now, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !os.SameFile(now, fi) {
		return nil
	}
	err = os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// lockDir takes an exclusive flock on dir and returns its release. When the
// lock cannot be had (an unreadable directory, a file system without flock,
// or a holder that does not let go) it proceeds without it: bind's
// EADDRINUSE still guards the common case.
func lockDir(dir string) (unlock func()) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return func() {}
	}
	deadline := time.Now().Add(dirLockWait)
	for {
		err = unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(fd, unix.LOCK_UN)
				_ = unix.Close(fd)
			}
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = unix.Close(fd)
			return func() {}
		}
		time.Sleep(10 * time.Millisecond)
	}
}
