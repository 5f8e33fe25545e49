package transport

import (
	"errors"
	"net"

	"golang.org/x/sys/unix"
)

// watchHangup reports when the peer of c can no longer read what we write:
// it closed the connection, or shut down its read side as well as its
// write side (the kernel then marks our socket hung up, POLLHUP), or the
// socket has an error (POLLERR). A peer that only shut down its write side
// (a half-close: `echo request | socat - UNIX-CONNECT:…`) is still there.
//
// The socket is watched through a duplicate of its descriptor, so the
// connection can be closed at any time (Go's Close of a socket waits for
// callers holding the descriptor). gone is closed when the peer has gone;
// stop ends the watch and waits for its goroutine, and must be called.
// ok is false when c cannot be watched (nothing was started).
func watchHangup(c *net.UnixConn) (gone <-chan struct{}, stop func(), ok bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, nil, false
	}
	fd := -1
	if cerr := raw.Control(func(s uintptr) { fd, err = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); cerr != nil || err != nil {
		return nil, nil, false
	}
	var wake [2]int
	if err := unix.Pipe2(wake[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		unix.Close(fd)
		return nil, nil, false
	}
	goneCh, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		defer unix.Close(fd)
		defer unix.Close(wake[0])
		// No events asked for the socket: poll reports POLLHUP and
		// POLLERR whatever is asked, and only those mean gone (the
		// socket stays readable at end of input).
		fds := []unix.PollFd{{Fd: int32(fd)}, {Fd: int32(wake[0]), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err != nil && !errors.Is(err, unix.EINTR) {
				return
			}
			if fds[1].Revents != 0 {
				return
			}
			if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 {
				close(goneCh)
				return
			}
		}
	}()
	stop = func() {
		unix.Close(wake[1])
		<-ended
	}
	return goneCh, stop, true
}
