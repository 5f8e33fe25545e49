package termwait

import (
	"bytes"
	"encoding/binary"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// verdict sums up one process's threads.
type verdict struct {
	term     bool // a thread waits on the terminal (and nothing external)
	external bool // a thread waits on a socket or another program's pipe
	busy     bool // a thread is on a CPU or preempted in user space
	blind    bool // the kernel would not show us its threads
	guess    bool // term was judged without reading the wait set
	// timeout is the longest timeout of the threads waiting on the
	// terminal, 0 when one of them waits without a timeout.
	timeout time.Duration
	untimed bool
}

// fdClass is what an fd in a wait means.
type fdClass uint8

const (
	fdNeutral  fdClass = iota // timers, wake-ups, files: never a reason to be running
	fdTerminal                // the terminal
	fdExternal                // a socket, another program's pipe, another device
	fdEpoll                   // a nested epoll set
)

// Input events for poll and epoll (POLLIN, POLLPRI, POLLRDNORM; EPOLL*
// share the values).
const inputEvents = 0x1 | 0x2 | 0x40

// inspect reads every thread's current system call of m.
func (t *Terminal) inspect(m *member) verdict {
	var v verdict
	ctty := false
	if maj, min := ttyDev(m.st.ttyNr); maj == t.slaveMaj && min == t.slaveMin {
		ctty = true
	}
	p := procFDs{t: t, pid: m.pid, ctty: ctty}
	for _, tid := range t.tasks(m.pid, m.st.threads) {
		t.path = procPath(t.path, m.pid, tid, "syscall")
		b, err := readFile(string(t.path), t.buf, 4096)
		if err == errBlind {
			v.blind = true
			continue
		}
		if err != nil {
			continue // the thread ended
		}
		nr, args, running, ok := parseSyscall(b)
		if !ok {
			continue
		}
		if running {
			v.busy = true
			continue
		}
		var term, ext bool
		switch classify(nr) {
		case callRead:
			switch p.class(int(int32(args[0]))) {
			case fdTerminal:
				term = true
			case fdExternal:
				ext = true
			}
		case callPoll:
			term, ext = p.poll(args[0], args[1], &v)
		case callSelect:
			term, ext = p.selectSets(args, &v)
		case callEpoll:
			term, ext = p.epoll(int(int32(args[0])), 0)
		case callNetwork:
			ext = true
		}
		if ext {
			v.external = true
		} else if term {
			v.term = true
			if d := p.timeout(nr, args); d == 0 {
				v.untimed = true
			} else {
				v.timeout = max(v.timeout, d)
			}
		}
	}
	return v
}

// procFDs classifies the fds of one process.
type procFDs struct {
	t    *Terminal
	pid  int
	ctty bool
}

func (p procFDs) class(fd int) fdClass {
	if fd < 0 {
		return fdNeutral
	}
	t := p.t
	t.path = procPath(t.path, p.pid, 0, "fd/")
	t.path = strconv.AppendInt(t.path, int64(fd), 10)
	path := string(t.path)
	n, err := unix.Readlink(path, t.link)
	if err != nil {
		return fdNeutral
	}
	l := t.link[:n]
	switch {
	case string(l) == t.slavePath:
		return fdTerminal
	case bytes.HasPrefix(l, []byte("socket:")):
		return fdExternal
	case bytes.HasPrefix(l, []byte("pipe:")):
		if p.selfPipe(fd, string(l)) {
			return fdNeutral
		}
		return fdExternal
	case bytes.HasPrefix(l, []byte("anon_inode:")):
		switch {
		case bytes.Contains(l, []byte("eventpoll")):
			return fdEpoll
		case bytes.Contains(l, []byte("pidfd")):
			return fdExternal // waits on a child
		}
		return fdNeutral // timerfd, signalfd, eventfd, inotify
	case len(l) > 0 && l[0] == '/':
		var st unix.Stat_t
		if unix.Stat(path, &st) != nil {
			return fdNeutral
		}
		if st.Mode&unix.S_IFMT != unix.S_IFCHR {
			return fdNeutral // a file is always ready
		}
		maj, min := unix.Major(st.Rdev), unix.Minor(st.Rdev)
		switch {
		case maj == t.slaveMaj && min == t.slaveMin:
			return fdTerminal
		case maj == ttyMajor && min == ttyMinor && p.ctty:
			return fdTerminal
		}
		return fdExternal
	}
	return fdNeutral
}

// selfPipe says whether the process holds the write end of the pipe whose
// read end is fd (the self-pipe trick: a wake-up, not another program).
func (p procFDs) selfPipe(fd int, link string) bool {
	t := p.t
	var fds []int
	t.path = procPath(t.path, p.pid, 0, "fd")
	if readDirInts(string(t.path), t.dir, func(n int) { fds = append(fds, n) }) != nil {
		return false
	}
	for _, other := range fds {
		if other == fd {
			continue
		}
		t.path = procPath(t.path, p.pid, 0, "fd/")
		t.path = strconv.AppendInt(t.path, int64(other), 10)
		n, err := unix.Readlink(string(t.path), t.link)
		if err != nil || string(t.link[:n]) != link {
			continue
		}
		t.path = procPath(t.path, p.pid, 0, "fdinfo/")
		t.path = strconv.AppendInt(t.path, int64(other), 10)
		b, err := readFile(string(t.path), t.buf, 4096)
		if err != nil {
			continue
		}
		if i := bytes.Index(b, []byte("flags:")); i >= 0 {
			f := bytes.TrimLeft(b[i+6:], " \t")
			if e := bytes.IndexByte(f, '\n'); e >= 0 {
				f = f[:e]
			}
			flags, err := strconv.ParseUint(string(f), 8, 64)
			if err == nil && flags&unix.O_ACCMODE != unix.O_RDONLY {
				return true
			}
		}
	}
	return false
}

// readMem reads n bytes at addr of the process's memory.
func (p procFDs) readMem(addr uint64, n int) ([]byte, error) {
	t := p.t
	if cap(t.mem) < n {
		t.mem = make([]byte, n)
	}
	buf := t.mem[:n]
	t.path = procPath(t.path, p.pid, 0, "mem")
	fd, err := unix.Open(string(t.path), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, mapErr(err)
	}
	defer unix.Close(fd)
	got, err := unix.Pread(fd, buf, int64(addr))
	if err != nil {
		return nil, mapErr(err)
	}
	return buf[:got], nil
}

// maxSet caps how many fds of a poll/select set are looked at.
const maxSet = 1024

// poll judges a poll/ppoll: the pollfd array is read from memory.
func (p procFDs) poll(addr, nfds uint64, v *verdict) (term, ext bool) {
	if nfds > maxSet {
		nfds = maxSet
	}
	b, err := p.readMem(addr, int(nfds)*8)
	if err != nil {
		return p.guess(v)
	}
	for i := 0; i+8 <= len(b); i += 8 {
		fd := int(int32(binary.LittleEndian.Uint32(b[i:])))
		events := binary.LittleEndian.Uint16(b[i+4:])
		t, e := p.judge(fd, uint32(events), 0)
		term, ext = term || t, ext || e
	}
	return term, ext
}

// selectSets judges a select/pselect6: args are nfds and three fd_set
// pointers; only the read set can hold the terminal as input.
func (p procFDs) selectSets(args [6]uint64, v *verdict) (term, ext bool) {
	nfds := args[0]
	if nfds > maxSet {
		nfds = maxSet
	}
	size := int((nfds + 63) / 64 * 8)
	for set := 1; set <= 3; set++ {
		if args[set] == 0 || size == 0 {
			continue
		}
		b, err := p.readMem(args[set], size)
		if err != nil {
			return p.guess(v)
		}
		bits := append([]byte(nil), b...)
		for fd := 0; fd < int(nfds) && fd/8 < len(bits); fd++ {
			if bits[fd/8]&(1<<(fd%8)) == 0 {
				continue
			}
			events := uint32(0x4) // POLLOUT-like: not input
			if set == 1 {
				events = inputEvents
			}
			t, e := p.judge(fd, events, 0)
			term, ext = term || t, ext || e
		}
	}
	return term, ext
}

// judge classifies one fd of a wait set with the events asked for.
func (p procFDs) judge(fd int, events uint32, depth int) (term, ext bool) {
	switch p.class(fd) {
	case fdTerminal:
		return events&inputEvents != 0, false
	case fdExternal:
		return false, true
	case fdEpoll:
		return p.epoll(fd, depth+1)
	}
	return false, false
}

// epoll judges an epoll wait by the tfd lines of the epoll fd's fdinfo
// ("tfd:        5 events:       19 data: …").
func (p procFDs) epoll(epfd, depth int) (term, ext bool) {
	if depth > 2 {
		return false, false
	}
	t := p.t
	t.path = procPath(t.path, p.pid, 0, "fdinfo/")
	t.path = strconv.AppendInt(t.path, int64(epfd), 10)
	b, err := readFile(string(t.path), t.buf, 1<<20)
	if err != nil {
		return false, false
	}
	t.buf = b[:cap(b)] // keep a grown buffer
	info := append([]byte(nil), b...)
	for len(info) > 0 {
		line := info
		if e := bytes.IndexByte(info, '\n'); e >= 0 {
			line, info = info[:e], info[e+1:]
		} else {
			info = nil
		}
		rest, ok := bytes.CutPrefix(line, []byte("tfd:"))
		if !ok {
			continue
		}
		fields := bytes.Fields(rest)
		if len(fields) < 3 {
			continue
		}
		fd := atoi(fields[0])
		events, _ := strconv.ParseUint(string(fields[2]), 16, 32)
		tm, e := p.judge(fd, uint32(events), depth)
		term, ext = term || tm, ext || e
	}
	return term, ext
}

// guess is the fallback when the wait set cannot be read: the process's
// fds stand in for it (the terminal open and nothing external).
func (p procFDs) guess(v *verdict) (term, ext bool) {
	t := p.t
	var fds []int
	t.path = procPath(t.path, p.pid, 0, "fd")
	if readDirInts(string(t.path), t.dir, func(n int) { fds = append(fds, n) }) != nil {
		v.blind = true
		return false, false
	}
	for _, fd := range fds {
		switch p.class(fd) {
		case fdTerminal:
			term = true
		case fdExternal:
			ext = true
		}
	}
	v.guess = true
	return term, ext
}
