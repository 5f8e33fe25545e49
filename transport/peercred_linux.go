package transport

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred reads the connecting process's uid and pid with SO_PEERCRED.
// It goes through SyscallConn().Control rather than File().Fd(), which
// would switch the socket to blocking mode and stop Close from waking a
// pending Read.
func peerCred(c *net.UnixConn) (uid uint32, pid int32, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, 0, err
	}
	if credErr != nil {
		return 0, 0, credErr
	}
	return cred.Uid, cred.Pid, nil
}
