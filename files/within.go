package files

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Files of a session that has a mount namespace of its own.
//
// An isolated session's shell sees its own /tmp, /var/tmp, /dev/shm and
// /run/lock (fresh tmpfs mounts) and its own /proc; the daemon does not
// share those mounts. A path such as /tmp/x therefore names a different
// file for the session than for the daemon, and the file methods must
// mean the session's. Within gives an FS whose every path is resolved in
// the session's tree, starting from a descriptor of the namespace's root
// directory (which the session opens in its namespace, see
// session.RootDir):
//
//   - unconfined, the root is that descriptor, resolved with openat2's
//     RESOLVE_IN_ROOT: an absolute path, `..` and an absolute symlink all
//     stay in the session's tree and mean what they mean to its shell
//     (a symlink /tmp/l -> /etc/passwd leads to the session's
//     /etc/passwd, which is the host's, as for the shell), and crossing
//     into the session's mounts happens as the kernel walks them.
//     RESOLVE_NO_MAGICLINKS keeps /proc/PID/root and /proc/self/fd/N
//     links from leading out of the tree.
//   - under --fs-root, each root is a path in the session's view: it is
//     opened from the session's root with RESOLVE_IN_ROOT, and paths
//     under it are then resolved with RESOLVE_BENEATH as usual. A root
//     the session's tree does not hold (a directory under /tmp on the
//     host is hidden by the session's tmpfs) makes every path under it
//     FILE_NOT_FOUND.
//
// Resolving through /proc/PID/root of the shell from the daemon's
// namespace was the alternative; a descriptor the session opened at
// start cannot come to name another process's tree when the pid is
// reused, and needs no ptrace access check. Entering the namespace with
// setns per operation would need a thread unshared from the process's
// filesystem context (CLONE_FS) each time, and a thread whose namespace
// could not be put back thrown away; a descriptor needs neither.
//
// Identity is unchanged: the roots are opened as the daemon (as New
// opens them), and every operation below them runs as the scope's
// identity, so what the session's uid may not do stays refused.

// Within returns an FS with fs's roots resolved in the tree whose root
// directory is dir. The caller closes it (dir stays the caller's).
func (fs *FS) Within(dir *os.File) (*FS, error) {
	in := &FS{}
	dfd := int(dir.Fd())
	confined := fs.Roots() != nil
	if !confined {
		fd, err := unix.Openat2(dfd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT})
		if err != nil {
			return nil, fmt.Errorf("a session with its own mount namespace needs openat2 with RESOLVE_IN_ROOT (Linux 5.6 or later, not filtered by seccomp) for its files: %w", err)
		}
		in.roots = []*root{{dir: "/", fd: fd, openat2: true,
			resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS}}
		return in, nil
	}
	for _, r := range fs.roots {
		fd, err := unix.Openat2(dfd, r.dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
			Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		if err == unix.EAGAIN || err == unix.EINTR {
			fd, err = unix.Openat2(dfd, r.dir, &unix.OpenHow{Flags: unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
				Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS})
		}
		if err != nil {
			fd = -1 // every open under it fails (EBADF is mapped below)
		}
		in.roots = append(in.roots, &root{dir: r.dir, fd: fd, openat2: true, resolve: r.resolve, missing: err})
	}
	return in, nil
}
