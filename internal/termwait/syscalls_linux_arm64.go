package termwait

import "golang.org/x/sys/unix"

// arm64 has no poll, select or epoll_wait: only their p-variants.
func classify(nr int64) callKind {
	switch nr {
	case unix.SYS_READ, unix.SYS_READV, unix.SYS_PREAD64, unix.SYS_PREADV, unix.SYS_PREADV2:
		return callRead
	case unix.SYS_PPOLL:
		return callPoll
	case unix.SYS_PSELECT6:
		return callSelect
	case unix.SYS_EPOLL_PWAIT, unix.SYS_EPOLL_PWAIT2:
		return callEpoll
	case unix.SYS_ACCEPT, unix.SYS_ACCEPT4, unix.SYS_RECVFROM, unix.SYS_RECVMSG, unix.SYS_RECVMMSG:
		return callNetwork
	}
	return callOther
}

// timeoutArg says where a waiting call's timeout is: its kind and the
// argument's index.
func timeoutArg(nr int64) (timeoutKind, int) {
	switch nr {
	case unix.SYS_EPOLL_PWAIT:
		return msArg, 3
	case unix.SYS_PPOLL:
		return timespecPtr, 2
	case unix.SYS_PSELECT6:
		return timespecPtr, 4
	case unix.SYS_EPOLL_PWAIT2:
		return timespecPtr, 3
	}
	return noTimeout, 0
}
