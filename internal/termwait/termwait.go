package termwait

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Kind is the kind of input a waiting program wants.
type Kind string

const (
	KindLine     Kind = "line"     // canonical mode with echo: a line is typed and shown
	KindPassword Kind = "password" // canonical mode without echo
	KindRaw      Kind = "raw"      // non-canonical: a readline REPL, a key-at-a-time program
	KindTUI      Kind = "tui"      // a full-screen program on the alternate screen
)

// Confidence says where a Status comes from.
type Confidence string

const (
	ConfidenceKernel    Confidence = "kernel"    // the reader's system call and fds were seen
	ConfidenceHeuristic Confidence = "heuristic" // /proc could not be read: a guess
)

// Reader is the process whose thread waits on the terminal.
type Reader struct {
	Pid  int
	Comm string
}

// Modes are the terminal's current termios facts that matter to input.
type Modes struct {
	Canonical bool // ICANON: input is line-edited by the kernel
	Echo      bool // ECHO
	Erase     byte // VERASE, what Backspace should send
	EOF       byte // VEOF, the end-of-file character
	// Special are the characters the terminal (and readline, which takes
	// its bindings from them) treats as more than text: erase, kill,
	// word erase, literal next, interrupt and the rest, disabled ones
	// left out.
	Special []byte
	// Remaps says that input's CR is dropped on its way (IGNCR): text
	// either side of a typed CR reaches the reader as one run. (INLCR,
	// which zsh's line editor sets, turns NL into CR, which ends its line
	// all the same.)
	Remaps bool
}

// Status is one sample of the terminal's foreground job.
type Status struct {
	Waiting    bool
	Kind       Kind // set when Waiting
	Confidence Confidence
	Reader     Reader // set when Waiting
	Foreground int    // the foreground process group (tcgetpgrp)
	Modes      Modes
	// Timeout, when not zero, is the timeout of the reader's wait on the
	// terminal: it will stop waiting by itself then (top's refresh, a
	// loop that polls for a key between pieces of work).
	Timeout time.Duration
	// Wrote is how many bytes the waiting job's processes have written
	// (the shell's own excepted), or -1 when that is not known or the
	// shell itself reads: its prompt is at most that long.
	Wrote int64
}

// ErrNotPTY is returned by New when the conn is not a PTY master.
var ErrNotPTY = errors.New("termwait: not a PTY master")

// Terminal samples one PTY. Its methods are safe for concurrent use (they
// serialize: the scratch buffers are shared).
type Terminal struct {
	master    syscall.RawConn
	shell     int
	slavePath string
	slaveMaj  uint32
	slaveMin  uint32

	mu   sync.Mutex
	path []byte
	buf  []byte // file contents
	dir  []byte // getdents
	link []byte
	mem  []byte
	seen map[int]bool
}

// ttyMajor and ttyMinor of /dev/tty, the "my controlling terminal" device.
const ttyMajor, ttyMinor = 5, 0

// New returns a Terminal for the PTY whose master is master, with the
// shell shellPid on it. Only ioctls go through master (via Control); it
// is not read or closed.
func New(master syscall.RawConn, shellPid int) (*Terminal, error) {
	var n uint32
	var ierr error
	if err := master.Control(func(fd uintptr) {
		n, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN)
	}); err != nil {
		return nil, err
	}
	if ierr != nil {
		return nil, fmt.Errorf("%w: TIOCGPTN: %v", ErrNotPTY, ierr)
	}
	t := &Terminal{
		master:    master,
		shell:     shellPid,
		slavePath: "/dev/pts/" + strconv.FormatUint(uint64(n), 10),
		buf:       make([]byte, 1024),
		dir:       make([]byte, 4096),
		link:      make([]byte, 256),
		seen:      make(map[int]bool),
	}
	var st unix.Stat_t
	if err := unix.Stat(t.slavePath, &st); err != nil {
		return nil, fmt.Errorf("termwait: stat %s: %w", t.slavePath, err)
	}
	t.slaveMaj, t.slaveMin = unix.Major(st.Rdev), unix.Minor(st.Rdev)
	return t, nil
}

// Modes returns the terminal's current modes (TCGETS on the master
// answers for the slave).
func (t *Terminal) Modes() (Modes, error) {
	m, _, err := t.ioctls(false)
	return m, err
}

// Foreground is the terminal's foreground process group.
func (t *Terminal) Foreground() (int, error) {
	_, pg, err := t.ioctls(true)
	return pg, err
}

func (t *Terminal) ioctls(pgrp bool) (Modes, int, error) {
	var tio *unix.Termios
	var pg uint32
	var ierr error
	if err := t.master.Control(func(fd uintptr) {
		tio, ierr = unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if ierr == nil && pgrp {
			pg, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCGPGRP)
		}
	}); err != nil {
		return Modes{}, 0, err
	}
	if ierr != nil {
		return Modes{}, 0, fmt.Errorf("termwait: terminal ioctl: %w", ierr)
	}
	m := Modes{
		Canonical: tio.Lflag&unix.ICANON != 0,
		Echo:      tio.Lflag&unix.ECHO != 0,
		Erase:     tio.Cc[unix.VERASE],
		EOF:       tio.Cc[unix.VEOF],
		Remaps:    tio.Iflag&unix.IGNCR != 0,
	}
	for _, i := range []int{unix.VINTR, unix.VQUIT, unix.VERASE, unix.VKILL, unix.VEOF, unix.VEOL, unix.VEOL2,
		unix.VSTART, unix.VSTOP, unix.VSUSP, unix.VREPRINT, unix.VDISCARD, unix.VWERASE, unix.VLNEXT} {
		if c := tio.Cc[i]; c != 0 { // 0 is _POSIX_VDISABLE on Linux
			m.Special = append(m.Special, c)
		}
	}
	return m, int(pg), nil
}

// member is one process of the foreground group.
type member struct {
	pid int
	st  procStat
}

// Check takes one sample: does the foreground job wait for terminal input?
// altScreen says whether the terminal shows the alternate screen (the
// caller tracks the output); a waiting job is then of Kind "tui".
func (t *Terminal) Check(altScreen bool) (Status, error) {
	modes, fg, err := t.ioctls(true)
	if err != nil {
		return Status{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	s := Status{Foreground: fg, Modes: modes, Confidence: ConfidenceKernel}
	if fg <= 0 {
		return s, nil
	}
	members := t.members(fg)
	var reader, blind *member
	var rv verdict
	busy := false
	for i := range members {
		m := &members[i]
		v := t.inspect(m)
		switch {
		case v.busy:
			busy = true
		case v.blind:
			if blind == nil && (m.st.state == 'S' || m.st.state == 'D') {
				blind = m
			}
		case v.term && !v.external:
			if reader == nil {
				reader, rv = m, v
				if v.guess {
					s.Confidence = ConfidenceHeuristic
				}
			}
		}
	}
	switch {
	case busy:
		return s, nil
	case reader != nil:
	case blind != nil:
		reader = blind
		s.Confidence = ConfidenceHeuristic
	default:
		return s, nil
	}
	s.Waiting = true
	s.Reader = Reader{Pid: reader.pid, Comm: reader.st.comm}
	if !rv.untimed {
		s.Timeout = rv.timeout
	}
	s.Wrote = t.wrote(members, reader.pid)
	// The modes read above may predate the wait: a program that turns
	// echo off, prints its prompt and reads (getpass) may have done all
	// three while its processes were being looked at, and was then
	// reported as a line prompt. Now that it waits, its modes are settled.
	if m, _, err := t.ioctls(false); err == nil {
		s.Modes = m
		modes = m
	}
	switch {
	case altScreen:
		s.Kind = KindTUI
	case !modes.Canonical:
		s.Kind = KindRaw
	case modes.Echo:
		s.Kind = KindLine
	default:
		s.Kind = KindPassword
	}
	return s, nil
}

// stat reads /proc/PID/stat.
func (t *Terminal) stat(pid int) (procStat, bool) {
	t.path = procPath(t.path, pid, 0, "stat")
	b, err := readFile(string(t.path), t.buf, 4096)
	if err != nil {
		return procStat{}, false
	}
	return parseStat(b)
}

// members finds the processes of group fg: the shell's descendants and
// the group leader's, else a scan of /proc.
func (t *Terminal) members(fg int) []member {
	clear(t.seen)
	var out []member
	queue := []int{t.shell, fg}
	for len(queue) > 0 {
		pid := queue[len(queue)-1]
		queue = queue[:len(queue)-1]
		if pid <= 0 || t.seen[pid] {
			continue
		}
		t.seen[pid] = true
		st, ok := t.stat(pid)
		if !ok {
			continue
		}
		in := st.pgrp == fg
		if in {
			out = append(out, member{pid: pid, st: st})
		}
		// A member may fork from any thread; elsewhere (a nested shell
		// on the way to its foreground job) the main thread will do.
		if in && st.threads > 1 {
			for _, tid := range t.tasks(pid, st.threads) {
				queue = t.children(queue, pid, tid)
			}
		} else {
			queue = t.children(queue, pid, pid)
		}
	}
	if len(out) == 0 {
		out = t.scan(fg)
	}
	return out
}

func (t *Terminal) children(queue []int, pid, tid int) []int {
	t.path = procPath(t.path, pid, tid, "children")
	b, err := readFile(string(t.path), t.buf, 1<<16)
	if err != nil {
		return queue
	}
	forEachInt(b, func(c int) { queue = append(queue, c) })
	return queue
}

// tasks lists the thread ids of pid.
func (t *Terminal) tasks(pid, hint int) []int {
	if hint == 1 {
		return []int{pid}
	}
	tids := make([]int, 0, hint)
	t.path = procPath(t.path, pid, 0, "task")
	if err := readDirInts(string(t.path), t.dir, func(tid int) { tids = append(tids, tid) }); err != nil {
		return []int{pid}
	}
	return tids
}

// scan finds group fg's members on this terminal by reading every
// process's stat: the slow path for members outside the trees walked.
func (t *Terminal) scan(fg int) []member {
	var pids []int
	if err := readDirInts("/proc", t.dir, func(p int) { pids = append(pids, p) }); err != nil {
		return nil
	}
	var out []member
	for _, pid := range pids {
		st, ok := t.stat(pid)
		if !ok || st.pgrp != fg {
			continue
		}
		if maj, min := ttyDev(st.ttyNr); maj != t.slaveMaj || min != t.slaveMin {
			continue
		}
		out = append(out, member{pid: pid, st: st})
	}
	return out
}
