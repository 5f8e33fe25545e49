package files

import (
	"fmt"
	goruntime "runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Identity is the uid and gid an operation runs as: an isolated
// session's. Supplementary groups are none, as for the session's shell.
type Identity struct {
	UID, GID uint32
}

// How an operation takes a session's identity, and why this way.
//
// The operation runs on a goroutine locked to its OS thread, and only
// that thread changes its filesystem uid and gid (setfsuid, setfsgid),
// its supplementary groups (the raw setgroups system call, which unlike
// Go's syscall.Setgroups changes one thread) and its effective
// capabilities (capset: all of them are dropped, kept only in the
// permitted set to be raised again afterwards). Dropping the filesystem
// ones alone was not enough: with CAP_SETUID still effective an
// fs.write to /proc/PID/uid_map of a user namespace a session made mapped
// host root into it, and CAP_SYS_PTRACE let fs.* read /proc of the daemon
// and of other sessions, which the session's own commands cannot see.
// Path resolution and every permission check then use the session's
// credentials, and files it creates are the session's. Afterwards the
// thread's credentials are put back and checked; only then is the thread
// unlocked and returned to Go's pool. If putting them back fails the
// goroutine ends still locked, and Go ends the thread with it, so no
// other goroutine ever runs with a session's credentials. New threads
// are not cloned from a locked thread (Go starts them from its template
// thread), so the change does not spread either.
//
// The alternative, a helper process started with the session's
// credentials, was measured on the development machine (2 shared cores,
// BenchmarkAsIdentity and BenchmarkHelperProcess): about 23 µs per
// operation for the locked thread (a goroutine, a dozen system calls and a
// channel) against about 1.6 ms to start a helper per operation; a
// long-lived helper per uid would cost a round trip over a pipe per call,
// a process per session and a second protocol. The thread switch also
// lets a descriptor opened as the session (GET and PUT /files) be read
// and written afterwards on any thread, as open(2) semantics allow.

// asIdentity runs f as id (nil: as the daemon, on the caller's goroutine).
func asIdentity(id *Identity, f func() error) error {
	if id == nil {
		return f()
	}
	type outcome struct {
		err      error
		panicked any
	}
	done := make(chan outcome, 1)
	go func() {
		goruntime.LockOSThread()
		var o outcome
		restore, err := assume(*id)
		o.err = err
		if err == nil {
			// A panic in f is handed to the caller, whose goroutine the
			// transports recover on; the credentials are put back first.
			func() {
				defer func() { o.panicked = recover() }()
				o.err = f()
			}()
		}
		if restore() {
			goruntime.UnlockOSThread()
		} // else: the thread ends with this goroutine
		done <- o
	}()
	o := <-done
	if o.panicked != nil {
		panic(o.panicked)
	}
	return o.err
}

// threadCreds are one thread's credentials, as assume found them.
type threadCreds struct {
	fsuid, fsgid int
	groups       []uint32
	caps         [2]unix.CapUserData
}

// assume switches this (locked) thread to id and returns the function
// that switches it back, reporting whether it did.
func assume(id Identity) (restore func() bool, err error) {
	var saved threadCreds
	saved.fsuid, _ = unix.SetfsuidRetUid(-1)
	saved.fsgid, _ = unix.SetfsgidRetGid(-1)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capget(&hdr, &saved.caps[0]); err != nil {
		return func() bool { return true }, fmt.Errorf("read capabilities: %w", err)
	}
	if g, err := getgroups(); err == nil {
		saved.groups = g
	} else {
		return func() bool { return true }, fmt.Errorf("read groups: %w", err)
	}
	restore = func() bool { return putBack(saved) }
	if err := setgroups(nil); err != nil {
		return restore, fmt.Errorf("drop supplementary groups: %w", err)
	}
	unix.Setfsgid(int(id.GID))
	unix.Setfsuid(int(id.UID))
	if u, _ := unix.SetfsuidRetUid(-1); u != int(id.UID) {
		return restore, fmt.Errorf("setfsuid(%d) did not take (the daemon lacks CAP_SETUID?)", id.UID)
	}
	if g, _ := unix.SetfsgidRetGid(-1); g != int(id.GID) {
		return restore, fmt.Errorf("setfsgid(%d) did not take (the daemon lacks CAP_SETGID?)", id.GID)
	}
	caps := saved.caps
	for i := range caps {
		caps[i].Effective = 0
	}
	hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if err := unix.Capset(&hdr, &caps[0]); err != nil {
		return restore, fmt.Errorf("drop capabilities: %w", err)
	}
	return restore, nil
}

// putBack restores saved on this thread and checks that it did: the
// capabilities first (raising effective ones within the permitted set
// needs none), since setgroups needs CAP_SETGID.
func putBack(saved threadCreds) bool {
	caps := saved.caps
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if unix.Capset(&hdr, &caps[0]) != nil {
		return false
	}
	unix.Setfsuid(saved.fsuid)
	unix.Setfsgid(saved.fsgid)
	if setgroups(saved.groups) != nil {
		return false
	}
	u, _ := unix.SetfsuidRetUid(-1)
	g, _ := unix.SetfsgidRetGid(-1)
	var now [2]unix.CapUserData
	hdr = unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	if unix.Capget(&hdr, &now[0]) != nil || now != saved.caps {
		return false
	}
	return u == saved.fsuid && g == saved.fsgid
}

// getgroups and setgroups are the raw system calls: one thread's groups.
func getgroups() ([]uint32, error) {
	n, _, e := unix.RawSyscall(unix.SYS_GETGROUPS, 0, 0, 0)
	if e != 0 {
		return nil, e
	}
	if n == 0 {
		return nil, nil
	}
	g := make([]uint32, n)
	n, _, e = unix.RawSyscall(unix.SYS_GETGROUPS, n, uintptr(unsafe.Pointer(&g[0])), 0)
	if e != 0 {
		return nil, e
	}
	return g[:n], nil
}

func setgroups(g []uint32) error {
	var p uintptr
	if len(g) > 0 {
		p = uintptr(unsafe.Pointer(&g[0]))
	}
	_, _, e := unix.RawSyscall(unix.SYS_SETGROUPS, uintptr(len(g)), p, 0)
	if e != 0 {
		return e
	}
	return nil
}

// do runs f with sc's identity.
func (fs *FS) do(sc Scope, f func() error) error { return asIdentity(sc.Identity, f) }
