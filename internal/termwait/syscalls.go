package termwait

// callKind is what a system call number means for the question "does this
// thread wait, and on what".
type callKind uint8

const (
	callOther   callKind = iota // anything else: neutral (futex, wait4, nanosleep, write…)
	callRead                    // read-like; arg0 is the fd
	callPoll                    // poll/ppoll; arg0 = struct pollfd *, arg1 = nfds
	callSelect                  // select/pselect6; arg0 = nfds, arg1..3 = fd_set *
	callEpoll                   // epoll_wait family; arg0 = the epoll fd
	callNetwork                 // accept, recv: waits on a socket
)
