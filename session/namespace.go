package session

import (
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// An isolated session's shell runs in a mount namespace and an IPC
// namespace of its own (issue 23 §1). A uid alone does not isolate: every
// world-writable place a uid wrote to — /tmp, /var/tmp, /dev/shm, SysV IPC
// objects, POSIX message queues — is still there, readable by the next
// session that gets the same uid. So the shell sees fresh tmpfs mounts on
// privateDirs, made private so nothing propagates back to the host, and
// an IPC namespace nobody else shares; both vanish with the last process
// of the session, which release kills before its uid is free again.
//
// How: Go cannot run code between clone and exec, so the namespaces are
// made on an OS thread of the daemon, not in the child. A goroutine locks
// itself to its thread, unshares CLONE_NEWNS|CLONE_NEWIPC there (both are
// per-thread in Linux: unsharing the mount namespace also unshares the
// thread's filesystem context, and neither needs a single-threaded
// process, unlike CLONE_NEWUSER), mounts, and then starts the shell from
// that thread: os.StartProcess clones the calling thread, so the shell is
// born in the namespaces. The goroutine stays on its thread until the
// shell has been reaped (see inNamespaces for why) and then returns
// without unlocking, which makes the Go runtime end the thread, so no
// other goroutine ever runs in those namespaces: one parked thread per
// isolated session. (New runtime threads are made by a template
// thread, never cloned from a locked one.) The alternative, re-executing
// the daemon's binary as a small init that mounts and then execs the
// shell, needs a hook in every binary that creates sessions (each test
// binary too) and has to redo credentials and the parent-death signal
// itself; this keeps one start path for every session.
//
// What the shell must still reach under those tmpfs mounts is bound in at
// the same path before the shell starts: the session's private directory
// (command and stdin files, under $TMPDIR), its home (the default homes
// root is under /tmp) and its working directory when that lies under one
// of them. Each is opened before the tmpfs hides it and bound from its
// descriptor. The namespace also gets its own /proc, showing only the
// session's uid's processes (hidepid=invisible).

// privateDirs get a fresh tmpfs in every isolated session.
// They are the directories every user may write to on common
// distributions (find / -xdev -type d -perm -0002); /var/lock is a link
// to /run/lock.
var privateDirs = []string{"/tmp", "/var/tmp", "/dev/shm", "/run/lock"}

// inNamespaces runs start on a thread in new mount and IPC namespaces
// prepared as described above, keeping each path of keep (absolute) at
// its place. start must start the shell from the calling goroutine (which
// os.StartProcess does).
//
// The thread lives until done is closed (the shell has been reaped):
// the kernel sends the parent-death signal (Pdeathsig, which the shell
// has) when the thread that forked a process ends, not when the process
// does, so a thread that ended right away would kill the shell. The
// goroutine that holds it is blocked and costs no CPU; it is owned by
// the session and ends with its shell.
func inNamespaces(keep []string, start func() error, done <-chan struct{}) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		// No UnlockOSThread: the thread ends with this goroutine.
		if err := enterNamespaces(keep); err != nil {
			errc <- err
			return
		}
		err := start()
		errc <- err
		if err == nil {
			<-done
		}
	}()
	return <-errc
}

// enterNamespaces unshares the calling thread's mount and IPC namespaces
// and mounts the private directories, binding keep back in.
func enterNamespaces(keep []string) error {
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWIPC); err != nil {
		return fmt.Errorf("unshare the mount and IPC namespaces: %w", err)
	}
	// Nothing mounted here may reach the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make the mounts private: %w", err)
	}
	// Opened before the tmpfs mounts hide them, and after the unshare: a
	// bind mount's source must be a mount of the caller's namespace.
	// O_PATH: the daemon may bind a directory it could not list.
	type kept struct {
		path string
		fd   int
	}
	var binds []kept
	defer func() {
		for _, k := range binds {
			unix.Close(k.fd)
		}
	}()
	seen := map[string]bool{}
	for _, p := range keep {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real // bound where it really is, which is what the shell reaches
		}
		if p == "" || seen[p] || !underPrivateDir(p) {
			continue
		}
		seen[p] = true
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", p, err)
		}
		binds = append(binds, kept{p, fd})
	}
	for _, d := range privateDirs {
		fi, err := os.Lstat(d)
		if err != nil || !fi.IsDir() {
			continue // nothing to hide (a symlink is followed to its target, which is hidden if listed)
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777"); err != nil {
			return fmt.Errorf("mount a private tmpfs on %s: %w", d, err)
		}
	}
	// A /proc of its own that shows only the session's uid's processes:
	// other tenants' command lines and environments' sizes, and the
	// daemon, are out of sight. Since Linux 5.8 each proc mount has its
	// own options, which is also the only kernel that knows "invisible";
	// an older one refuses it (leaving /proc as it was) rather than
	// changing the host's /proc, whose mount it would share.
	_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hidepid=invisible")
	// A POSIX message queue file system mounted on the host shows the
	// host's queues; mounted again here it shows this namespace's.
	if isMountPoint("/dev/mqueue") {
		if err := unix.Mount("mqueue", "/dev/mqueue", "mqueue", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount a private mqueue on /dev/mqueue: %w", err)
		}
	}
	for _, k := range binds {
		// Parents made in the fresh tmpfs are root's: a session may pass
		// through them, not replace them.
		if err := os.MkdirAll(k.path, 0o711); err != nil {
			return fmt.Errorf("make %s in the private tmpfs: %w", k.path, err)
		}
		src := "/proc/thread-self/fd/" + strconv.Itoa(k.fd)
		if err := unix.Mount(src, k.path, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind %s into the session: %w", k.path, err)
		}
	}
	return nil
}

// underPrivateDir reports whether p lies strictly below one of
// privateDirs (after symlinks, so /var/tmp/x on a host where /var/tmp is
// a link is judged by where it leads).
func underPrivateDir(p string) bool {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	for _, d := range privateDirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}

// isMountPoint reports whether dir is a mount point (its device differs
// from its parent's).
func isMountPoint(dir string) bool {
	var st, parent unix.Stat_t
	if unix.Lstat(dir, &st) != nil || unix.Lstat(filepath.Dir(dir), &parent) != nil {
		return false
	}
	return st.Dev != parent.Dev
}
