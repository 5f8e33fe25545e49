package session

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// tree names every process a session started, by three marks that
// overlap: the session id of the shell's terminal session (background jobs
// and nohup), the TRL_SESSION_ID variable every process inherits (which
// survives setsid and double forks, unless the process clears it), and,
// when there is one, the session's cgroup (which survives both).
type tree struct {
	sid    int    // the shell's pid, leader of its terminal session
	marker []byte // "TRL_SESSION_ID=<id>\x00"
	cg     *cgroup
	// reapedAt is 0 while the shell lives, then the time it was reaped
	// (clock ticks since boot, as /proc/PID/stat counts start times). The
	// session id stays the shell's while any member lives, but once none
	// does the pid may be reused: a process with that session id belongs
	// to the tree only if it started before the shell was reaped.
	reapedAt *atomic.Int64
	// born is the shell's start time (clock ticks since boot; 0 if
	// unknown). Every process the session started is younger, so an
	// older one is not looked at further: with many sessions alive a
	// pass over /proc then reads the environment of few processes.
	born int64
}

func newTree(sid int, id string, cg *cgroup) tree {
	t := tree{sid: sid, marker: []byte("TRL_SESSION_ID=" + id + "\x00"), cg: cg, reapedAt: new(atomic.Int64)}
	if st, ok := readStat(sid); ok {
		t.born = st.start
	}
	liveShells.add(sid)
	return t
}

// shellGone is called once the shell has been reaped.
func (t tree) shellGone() {
	liveShells.remove(t.sid)
	t.reapedAt.Store(max(ticksSinceBoot(), 1))
}

// liveShells holds the pids of the shells of this process's sessions
// that have not been reaped. Each leads its own terminal session, and no
// process can join a terminal session it was not born into, so a process
// whose session id is another live shell's belongs to that shell's
// session: a pass over /proc need not read its environment. With 1,000
// sessions alive, destroying one no longer reads 1,000 environments.
var liveShells = shellSet{m: map[int]struct{}{}}

type shellSet struct {
	mu sync.RWMutex
	m  map[int]struct{}
}

func (s *shellSet) add(pid int) {
	s.mu.Lock()
	s.m[pid] = struct{}{}
	s.mu.Unlock()
}

func (s *shellSet) remove(pid int) {
	s.mu.Lock()
	delete(s.m, pid)
	s.mu.Unlock()
}

func (s *shellSet) has(pid int) bool {
	s.mu.RLock()
	_, ok := s.m[pid]
	s.mu.RUnlock()
	return ok
}

// ticksSinceBoot is CLOCK_BOOTTIME in the clock ticks (USER_HZ, 100 on
// Linux) that /proc/PID/stat uses for start times: the kernel stamps a
// process with that clock when it forks it and divides by 10 ms, rounding
// down, as this does.
func ticksSinceBoot() int64 {
	return bootNanos() / int64(10*time.Millisecond)
}

// bootNanos reads CLOCK_BOOTTIME, the clock the kernel stamps a process's
// start with (and /proc/uptime shows), in nanoseconds; 0 if it cannot.
func bootNanos() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts); err != nil {
		return 0
	}
	return ts.Nano()
}

// Strays lists the session's live processes, its shell aside, that
// started at since or later: what a command started that outlived it. A
// process that left the command's process group (setsid, a job of a
// nested interactive shell) is not reached by its timeout's signals.
func (s *Session) Strays(since time.Time) []int {
	if s.tree.sid == 0 {
		return nil
	}
	from := startTick(since)
	var out []int
	for _, pid := range s.tree.members() {
		if pid == s.pid {
			continue
		}
		if st, ok := readStat(pid); ok && st.start >= from {
			out = append(out, pid)
		}
	}
	return out
}

// startTick is the clock tick since boot (as /proc/PID/stat counts start
// times: 100 a second, rounded down) in which since fell, or an earlier
// one, never a later: every process started at since or later has a start
// time at least this. The boot clock is read before the time since since,
// so their difference is at most the boot clock at since. (Reading
// /proc/uptime as a float and adding a tick, as this did, gave up to the
// tick after since's: a process forked in since's own tick, as a stray
// often is, was left out.)
func startTick(since time.Time) int64 {
	return (bootNanos() - int64(time.Since(since))) / int64(10*time.Millisecond)
}

// kill ends every process of the tree, the shell first so that nothing
// new is started, and rescans until a scan finds nothing (so a process
// forking while it is killed does not survive) or limit passes. It
// reports whether the tree is gone.
func (t tree) kill(limit time.Duration) bool {
	if t.reapedAt.Load() == 0 {
		// Not reaped yet, so the pid is still the shell's.
		unix.Kill(t.sid, unix.SIGKILL)
	}
	if t.cg != nil {
		t.cg.kill()
	}
	deadline := time.Now().Add(limit)
	scanned := false
	var escaped []int // found by the scan outside the group: waited for too
	for round := 0; ; round++ {
		pids := t.members()
		escaped = alive(escaped)
		pids = append(pids, escaped...)
		if len(pids) == 0 && t.cg != nil && !scanned {
			// The group is empty; one look at every process catches one
			// that moved itself out of it (a process running as the
			// daemon's user can write the daemon's cgroup.procs).
			scanned = true
			escaped = t.scan()
			pids = escaped
		}
		if len(pids) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		for _, pid := range pids {
			t.signal(pid, unix.SIGKILL)
		}
		time.Sleep(time.Duration(min(round+1, 20)) * time.Millisecond)
	}
}

// alive keeps the pids that are still running (not gone, not zombies).
func alive(pids []int) []int {
	out := pids[:0]
	for _, pid := range pids {
		if st, ok := readStat(pid); ok && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	return out
}

// signal sends sig to pid only if pid is still a member of the tree,
// checked through a pidfd so that a pid reused after the scan is never hit.
func (t tree) signal(pid int, sig unix.Signal) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	if !t.owns(pid) && !(t.cg != nil && t.cg.has(pid)) {
		return
	}
	unix.PidfdSendSignal(fd, sig, nil, 0)
}

// members lists the live (not zombie) processes of the tree. With a
// cgroup the group's own list is enough (a process leaves it only if it
// may move itself, see the README); without one every process on the
// machine is looked at.
func (t tree) members() []int {
	if t.cg != nil {
		if pids, err := t.cg.procs(); err == nil {
			var out []int
			for _, pid := range pids {
				if st, ok := readStat(pid); ok && st.state != 'Z' && st.state != 'X' {
					out = append(out, pid)
				}
			}
			return out
		}
	}
	return t.scan()
}

// scan looks at every process on the machine.
func (t tree) scan() []int {
	self := os.Getpid()
	var out []int
	for _, pid := range allPIDs() {
		if pid != self && t.owns(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// allPIDs lists the pids in /proc.
func allPIDs() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	pids := make([]int, 0, len(names))
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// owns reports whether pid is a live process of the tree.
func (t tree) owns(pid int) bool {
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' || st.state == 'X' {
		return false
	}
	if st.sid == t.sid {
		if at := t.reapedAt.Load(); at == 0 || st.start <= at {
			return true
		}
	}
	if st.start < t.born {
		return false // started before the shell: not the session's
	}
	if liveShells.has(st.sid) {
		// In another live shell's terminal session (this tree's own shell,
		// while alive, was matched above).
		return false
	}
	if st.flags&pfKthread != 0 {
		return false
	}
	env, err := environOf(pid)
	return err == nil && hasEntry(env, t.marker)
}

// environOf reads pid's environment. A process in the middle of an exec
// shows an empty one until the kernel has built its new stack, for a
// while after the exec's point of no return (which is when
// os.StartProcess returns): read once, a third of freshly started
// processes looked unmarked. So an empty environment is read again, for
// up to 50 ms (an exec on a loaded machine can take that long); only a
// process really started with none (`env -i`) costs the wait.
func environOf(pid int) ([]byte, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/environ"
	for try := 0; ; try++ {
		env, err := os.ReadFile(path)
		if err != nil || len(env) > 0 || try == 25 {
			return env, err
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// hasEntry reports whether the NUL-separated environ block env holds the
// entry e (which ends in NUL) as a whole entry.
func hasEntry(env, e []byte) bool {
	for off := 0; ; {
		i := bytes.Index(env[off:], e)
		if i < 0 {
			return false
		}
		if at := off + i; at == 0 || env[at-1] == 0 {
			return true
		}
		off += i + 1
	}
}

type procStat struct {
	state           byte
	ppid, pgrp, sid int
	flags           uint64 // PF_* of the kernel
	start           int64  // clock ticks since boot
}

// pfKthread marks a kernel thread in procStat.flags.
const pfKthread = 0x00200000

// readStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses, so fields are counted from the last ')'. A pass over /proc
// calls it for every process, so it reads with one open, one read and one
// close into a buffer on the stack (a third less time than os.ReadFile,
// which also stats the file and reads again for the end).
func readStat(pid int) (procStat, bool) {
	var buf [1024]byte
	fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/stat", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return procStat{}, false
	}
	n, err := unix.Read(fd, buf[:])
	unix.Close(fd)
	if err != nil || n <= 0 {
		return procStat{}, false
	}
	b := buf[:n]
	if n == len(buf) {
		// A stat line is a few hundred bytes; a longer one is read whole.
		if b, err = os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err != nil {
			return procStat{}, false
		}
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 {
		return procStat{}, false
	}
	st := procStat{state: f[0][0]}
	st.ppid, _ = strconv.Atoi(string(f[1]))
	st.pgrp, _ = strconv.Atoi(string(f[2]))
	st.sid, _ = strconv.Atoi(string(f[3]))
	if len(f) > 6 {
		st.flags, _ = strconv.ParseUint(string(f[6]), 10, 64)
	}
	if len(f) > 19 {
		st.start, _ = strconv.ParseInt(string(f[19]), 10, 64)
	}
	return st, true
}

var sealOnce sync.Once

// sealInheritedFDs marks every fd above stderr close-on-exec. Go opens its
// own fds that way, but fds inherited from whatever started the daemon are
// not, and os.StartProcess would pass them on to every shell and so to
// every command.
func sealInheritedFDs() {
	sealOnce.Do(func() {
		d, err := os.Open("/proc/self/fd")
		if err != nil {
			return
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil && fd > 2 {
				unix.CloseOnExec(fd)
			}
		}
	})
}
