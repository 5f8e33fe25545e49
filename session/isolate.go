package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Tenant isolation (SPEC §13, `trl serve --isolate`). Every session runs
// under a uid and gid of its own, taken from a range no account uses;
// sessions created with the same IsolationKey (the gateway's (tenant,
// workspace)) share one. The uid owns a home directory (mode 0700) that is
// the session's working directory unless one is given, and RLIMIT_NPROC
// bounds its processes. Because the daemon and the other sessions run
// under other uids, the kernel's own checks keep a session from reading
// another's /proc/PID/environ or fd/, writing into its pipes, signalling
// its processes or reading its files, and from reaching the daemon's
// pipes and PTY masters. Each session's shell also gets its own /tmp,
// /var/tmp, /dev/shm, /run/lock and SysV IPC (namespace.go), since a uid
// alone would find what it wrote there as an earlier tenant. A uid goes
// back to the pool only once every process running under it has been
// killed and is gone (which ends those namespaces), and its home is
// removed first, so the next owner inherits nothing; a daemon that starts
// sweeps what its range's uids own in the host's shared places first
// (uidsweep.go).

// Isolation configures tenant isolation. The zero value of a field means
// its documented default.
type Isolation struct {
	// FirstUID and LastUID bound the uids (and gids: each session's gid
	// equals its uid) handed out; 0, 0 means DefaultUIDRange.
	FirstUID, LastUID uint32
	// NProc is RLIMIT_NPROC for each uid; 0 means 256.
	NProc uint64
	// HomeRoot holds the homes, one directory per uid; "" means
	// $TMPDIR/trl-homes.
	HomeRoot string
}

// DefaultUIDRange is the uid range --isolate uses unless told otherwise:
// high above any account a distribution creates, and above the ranges
// container runtimes map by default (100000-165535 and the like).
var DefaultUIDRange = [2]uint32{2000000000, 2000065535}

func (iso *Isolation) nproc() uint64 {
	if iso.NProc == 0 {
		return 256
	}
	return iso.NProc
}

// ErrNoPrivilege is returned when isolation is asked of a daemon that
// lacks a capability it needs.
var ErrNoPrivilege = errors.New("--isolate needs root with its usual capabilities, or CAP_SETUID, CAP_SETGID, CAP_CHOWN, CAP_KILL, CAP_DAC_OVERRIDE, CAP_SYS_PTRACE and CAP_SYS_ADMIN")

// isolationCaps are the capabilities a daemon needs to run sessions under
// other uids, and what each is for. Root on a host holds them all; root in
// a container may not (Docker's default set lacks CAP_SYS_PTRACE), and a
// daemon that is not root needs every one granted. Without CAP_KILL a
// timeout, exec.cancel or session.destroy cannot stop a command; without
// CAP_DAC_OVERRIDE a session's home cannot be removed, so its uid cannot be
// reused; without CAP_SYS_PTRACE (and CAP_DAC_OVERRIDE: the files are
// mode 0400) the kernel's record of what a process waits on cannot be
// read, and every quiet command would be guessed to wait for input.
var isolationCaps = []struct {
	cap  int
	name string
	use  string
}{
	{unix.CAP_SETUID, "CAP_SETUID", "start shells under the sessions' uids"},
	{unix.CAP_SETGID, "CAP_SETGID", "start shells under the sessions' gids"},
	{unix.CAP_CHOWN, "CAP_CHOWN", "give each session its home and terminal"},
	{unix.CAP_KILL, "CAP_KILL", "stop commands on timeout, exec.cancel and session.destroy"},
	{unix.CAP_DAC_OVERRIDE, "CAP_DAC_OVERRIDE", "remove a session's home and read its processes' /proc files"},
	{unix.CAP_SYS_PTRACE, "CAP_SYS_PTRACE", "tell when a command waits for input"},
	{unix.CAP_SYS_ADMIN, "CAP_SYS_ADMIN", "give each session its own /tmp, /var/tmp, /dev/shm and IPC namespace"},
}

// CheckIsolationPrivilege reports whether this process may run sessions
// under other uids: it must hold every capability of isolationCaps
// (effective), root or not.
func CheckIsolationPrivilege() error {
	var hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return fmt.Errorf("%w: cannot read this process's capabilities: %v", ErrNoPrivilege, err)
	}
	var missing []string
	for _, c := range isolationCaps {
		if data[c.cap/32].Effective&(1<<(uint(c.cap)%32)) == 0 {
			missing = append(missing, c.name+" (to "+c.use+")")
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: running as uid %d without %s; run the daemon as root with those capabilities (in a container: --cap-add them), or drop --isolate", ErrNoPrivilege, os.Geteuid(), strings.Join(missing, ", "))
	}
	return nil
}

// uidPool hands out uids, one per isolation key.
type uidPool struct {
	iso   Isolation
	first uint32
	last  uint32
	home  string

	mu    sync.Mutex
	next  uint32
	byKey map[string]*lease
	inUse map[uint32]*lease
}

// lease is one uid held by the sessions of one key.
type lease struct {
	pool *uidPool
	key  string
	uid  uint32
	home string
	refs int
}

func newUIDPool(iso Isolation) (*uidPool, error) {
	p := &uidPool{iso: iso, first: iso.FirstUID, last: iso.LastUID, home: iso.HomeRoot,
		byKey: map[string]*lease{}, inUse: map[uint32]*lease{}}
	if p.first == 0 && p.last == 0 {
		p.first, p.last = DefaultUIDRange[0], DefaultUIDRange[1]
	}
	if p.first == 0 || p.last < p.first {
		return nil, errorf(ErrInvalid, "uid range %d-%d is empty or includes root", p.first, p.last)
	}
	if me := uint32(os.Geteuid()); me >= p.first && me <= p.last {
		// A session with the daemon's own uid could reach what the
		// daemon can (its /proc, its files), and fs.* tells a session's
		// operations from the daemon's by the uid.
		return nil, errorf(ErrInvalid, "uid range %d-%d includes the daemon's own uid %d; choose a range without it", p.first, p.last, me)
	}
	if p.home == "" {
		p.home = filepath.Join(os.TempDir(), "trl-homes")
	}
	// The root of the homes: others may pass through, not list.
	if err := os.MkdirAll(p.home, 0o711); err != nil {
		return nil, fmt.Errorf("make the homes directory: %w", err)
	}
	if err := os.Chmod(p.home, 0o711); err != nil {
		return nil, err
	}
	for dir := filepath.Dir(p.home); ; dir = filepath.Dir(dir) {
		if fi, err := os.Stat(dir); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return nil, errorf(ErrInvalid, "the homes directory %s is inside %s, which other users cannot enter; choose another", p.home, dir)
		}
		if dir == "/" {
			break
		}
	}
	// RLIMIT_NPROC is inherited at fork and cannot be raised without
	// CAP_SYS_RESOURCE, which a container's root may lack (so prlimit on
	// a shell of another uid fails). The daemon therefore lowers its own
	// limit, soft and hard, and every shell is born with it. Root's own
	// forks are exempt from the limit, so the daemon is not bound by it.
	n := iso.nproc()
	var cur unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NPROC, &cur) == nil && cur.Max < n {
		n = cur.Max // already lower (and not to be raised)
	}
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &unix.Rlimit{Cur: n, Max: n}); err != nil {
		return nil, fmt.Errorf("set RLIMIT_NPROC to %d: %w", n, err)
	}
	// What a previous daemon's sessions left is gone before any uid is
	// handed out (uidsweep.go).
	sweepUIDs(p.first, p.last, uidsWithProcesses())
	p.next = p.first
	return p, nil
}

// acquire returns the lease of key, taking a free uid for a new key ("":
// always a new uid). A uid is free when no lease holds it and no process
// runs under it.
func (p *uidPool) acquire(key string) (*lease, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l, ok := p.byKey[key]; ok && key != "" {
		l.refs++
		return l, nil
	}
	busy := uidsWithProcesses()
	n := uint64(p.last-p.first) + 1
	for i := uint64(0); i < n; i++ {
		uid := p.next
		if p.next == p.last {
			p.next = p.first
		} else {
			p.next++
		}
		if p.inUse[uid] != nil || busy[uid] {
			continue
		}
		home := filepath.Join(p.home, strconv.FormatUint(uint64(uid), 10))
		// A home left by a daemon that died is the last owner's: gone.
		os.RemoveAll(home)
		if err := os.Mkdir(home, 0o700); err != nil {
			return nil, fmt.Errorf("make the session's home: %w", err)
		}
		if err := os.Chown(home, int(uid), int(uid)); err != nil {
			os.Remove(home)
			return nil, fmt.Errorf("give the session's home to uid %d: %w", uid, err)
		}
		l := &lease{pool: p, key: key, uid: uid, home: home, refs: 1}
		p.inUse[uid] = l
		if key != "" {
			p.byKey[key] = l
		}
		return l, nil
	}
	return nil, errorf(ErrLimit, "every uid of the range %d-%d is in use", p.first, p.last)
}

// release drops one reference; the last ends every process still running
// under the uid (whatever escaped its session), removes the home and
// frees the uid.
func (l *lease) release() {
	p := l.pool
	p.mu.Lock()
	l.refs--
	if l.refs > 0 {
		p.mu.Unlock()
		return
	}
	if p.byKey[l.key] == l {
		delete(p.byKey, l.key)
	}
	p.mu.Unlock()
	// Outside the lock: this kills and waits. The uid stays in inUse
	// meanwhile, so nobody else gets it.
	gone := killUID(l.uid, 2*time.Second)
	os.RemoveAll(l.home)
	p.mu.Lock()
	if gone {
		delete(p.inUse, l.uid)
	}
	// else: kept out of use; a process of the old owner survives.
	p.mu.Unlock()
}

// uidsWithProcesses scans /proc for the uids processes run under (real,
// effective, saved or filesystem).
func uidsWithProcesses() map[uint32]bool {
	out := map[uint32]bool{}
	for _, pid := range allPIDs() {
		for _, u := range procUIDs(pid) {
			out[u] = true
		}
	}
	return out
}

// procUIDs reads the four uids of /proc/PID/status; none for a zombie
// (it has ended; the daemon's reaper collects it).
func procUIDs(pid int) []uint32 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil || strings.Contains(string(b), "\nState:\tZ") {
		return nil
	}
	_, rest, ok := strings.Cut(string(b), "\nUid:")
	if !ok {
		return nil
	}
	line, _, _ := strings.Cut(rest, "\n")
	var out []uint32
	for _, f := range strings.Fields(line) {
		if u, err := strconv.ParseUint(f, 10, 32); err == nil {
			out = append(out, uint32(u))
		}
	}
	return out
}

// killUID sends SIGKILL to every process running under uid until none is
// left or limit passes; it reports whether none is left.
func killUID(uid uint32, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for {
		pids := pidsOfUID(uid)
		if len(pids) == 0 {
			return true
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// pidsOfUID lists the live processes running under uid (real, effective,
// saved or filesystem).
func pidsOfUID(uid uint32) []int {
	var out []int
	for _, pid := range allPIDs() {
		if slices.Contains(procUIDs(pid), uid) {
			out = append(out, pid)
		}
	}
	return out
}

// credential is how the shell of an isolated session is started.
func (l *lease) credential() *syscall.Credential {
	return &syscall.Credential{Uid: l.uid, Gid: l.uid, Groups: []uint32{}}
}

// share makes a file the daemon writes for the session (its command file,
// its stdin files) readable by the session's uid only: owner root, group
// the session's gid, mode 0640, in a directory of the same ownership with
// mode 0750 — the session may read, not replace, and other sessions see
// nothing.
func (l *lease) share(path string, mode os.FileMode) error {
	if err := os.Chown(path, os.Geteuid(), int(l.uid)); err != nil {
		return err
	}
	return os.Chmod(path, mode)
}

// releaseLease gives the session's uid back, once.
func (s *Session) releaseLease() {
	if s.lease != nil {
		s.leaseOnce.Do(s.lease.release)
	}
}

// isolateFiles gives the session's uid its terminal and read access to
// the files the daemon writes for it (see share).
func (s *Session) isolateFiles(pts *os.File) error {
	l := s.lease
	rc, err := pts.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) { ioErr = unix.Fchown(int(fd), int(l.uid), -1) }); err != nil {
		return err
	}
	if ioErr != nil {
		return fmt.Errorf("give the terminal to uid %d: %w", l.uid, ioErr)
	}
	if err := l.share(s.tmpDir, 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(s.cmdFile(), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o640)
	if err != nil {
		return err
	}
	f.Close()
	return l.share(s.cmdFile(), 0o640)
}
