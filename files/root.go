package files

import (
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Options configure an FS.
type Options struct {
	// Roots confine every operation to these directory trees (--fs-root),
	// enforced by openat2's RESOLVE_BENEATH. Empty: the whole filesystem.
	Roots []string
}

// FS does file operations, confined to its roots.
type FS struct {
	roots []*root
}

// root is one tree operations may reach: its path and a descriptor every
// path under it is opened relative to.
type root struct {
	dir     string // absolute, clean, symlinks resolved
	fd      int    // O_PATH descriptor of dir
	resolve uint64 // openat2 resolve flags
	// openat2 is false only for the unconfined root on a kernel without
	// it (before Linux 5.6, or filtered by seccomp): plain openat, which
	// resolves the same way without RESOLVE flags.
	openat2 bool
	// missing is why the root could not be opened in a session's tree
	// (Within): every path under it fails with it.
	missing error
}

// Scope is where an operation stands and whose it is.
type Scope struct {
	// Dir is where relative paths start: the session's current
	// directory. Relative paths without Dir are refused.
	Dir string
	// Identity, when set, is who the operation runs as.
	Identity *Identity
	// Self, when set, is the pid /proc/self and /proc/thread-self name:
	// the session's shell, as its commands see them (in the daemon they
	// would name the daemon).
	Self int
}

// New opens the roots. Confinement needs openat2: on a kernel without it
// New refuses roots instead of confining by string checks.
func New(opts Options) (*FS, error) {
	fs := &FS{}
	if len(opts.Roots) == 0 {
		fd, err := unix.Open("/", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("open /: %w", err)
		}
		r := &root{dir: "/", fd: fd, openat2: haveOpenat2(fd)}
		fs.roots = append(fs.roots, r)
		return fs, nil
	}
	for _, d := range opts.Roots {
		abs, err := filepath.Abs(d)
		if err == nil {
			abs, err = filepath.EvalSymlinks(abs)
		}
		if err != nil {
			fs.Close()
			return nil, fmt.Errorf("--fs-root %s: %w", d, err)
		}
		fd, err := unix.Open(abs, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			fs.Close()
			return nil, fmt.Errorf("--fs-root %s: %w", d, err)
		}
		fs.roots = append(fs.roots, &root{dir: abs, fd: fd, openat2: true,
			resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS})
		if !haveOpenat2(fd) {
			fs.Close()
			return nil, fmt.Errorf("--fs-root needs openat2 with RESOLVE_BENEATH (Linux 5.6 or later, not filtered by seccomp); this kernel refuses it")
		}
	}
	return fs, nil
}

func haveOpenat2(dirfd int) bool {
	fd, err := unix.Openat2(dirfd, ".", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC, Resolve: unix.RESOLVE_BENEATH})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}

// Close releases the roots' descriptors.
func (fs *FS) Close() error {
	for _, r := range fs.roots {
		if r.fd >= 0 {
			unix.Close(r.fd)
		}
	}
	fs.roots = nil
	return nil
}

// Roots are the trees operations are confined to (nil: unconfined).
func (fs *FS) Roots() []string {
	if len(fs.roots) == 1 && fs.roots[0].resolve == 0 {
		return nil
	}
	var out []string
	for _, r := range fs.roots {
		out = append(out, r.dir)
	}
	return out
}

// loc is a resolved path: the root it is under and its path relative to
// the root's descriptor ("." for the root itself).
type loc struct {
	r   *root
	rel string
	abs string
}

// resolve makes p absolute against sc.Dir and finds its root. The check
// is lexical only to pick the root and to say OUTSIDE_ROOT early; the
// kernel enforces the tree when the path is opened.
func (fs *FS) resolve(sc Scope, p string) (loc, error) {
	if p == "" {
		return loc{}, errorf(ErrInvalid, "", "path is required")
	}
	if strings.IndexByte(p, 0) >= 0 {
		return loc{}, errorf(ErrInvalid, p, "path %q contains a NUL byte", p)
	}
	if !path.IsAbs(p) {
		if sc.Dir == "" {
			return loc{}, errorf(ErrInvalid, p, "relative path %s, and the session has no current directory; give an absolute path", p)
		}
		p = path.Join(sc.Dir, p)
	}
	abs := path.Clean(p)
	if sc.Self > 0 {
		for _, self := range []string{"/proc/self", "/proc/thread-self"} {
			if abs == self || strings.HasPrefix(abs, self+"/") {
				abs = "/proc/" + strconv.Itoa(sc.Self) + abs[len(self):]
				break
			}
		}
	}
	var best *root
	for _, r := range fs.roots {
		if within(abs, r.dir) && (best == nil || len(r.dir) > len(best.dir)) {
			best = r
		}
	}
	if best == nil {
		return loc{}, errorf(ErrOutsideRoot, abs, "%s is outside the --fs-root trees (%s)", abs, strings.Join(fs.Roots(), ", "))
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(abs, best.dir), "/")
	if rel == "" {
		rel = "."
	}
	return loc{r: best, rel: rel, abs: abs}, nil
}

func within(p, dir string) bool {
	return dir == "/" || p == dir || strings.HasPrefix(p, dir+"/")
}

// open opens rel under the root: with openat2 and the root's resolve
// flags, retrying the EAGAIN the kernel answers when a rename raced the
// resolution. As a session's identity, nothing on /proc is opened.
func (r *root) open(rel string, flags int, mode uint32) (int, error) {
	fd, err := r.openat(rel, flags|unix.O_CLOEXEC, mode)
	if err == nil && asSession() && onProc(fd) {
		unix.Close(fd)
		return -1, errProcAsSession
	}
	return fd, err
}

// openat is open's system call: openat2 where the kernel has it.
func (r *root) openat(rel string, flags int, mode uint32) (int, error) {
	if r.missing != nil {
		return -1, r.missing
	}
	if !r.openat2 {
		return unix.Openat(r.fd, rel, flags, mode)
	}
	how := unix.OpenHow{Flags: uint64(flags), Mode: uint64(mode), Resolve: r.resolve}
	if flags&(unix.O_CREAT|unix.O_TMPFILE) == 0 {
		how.Mode = 0
	}
	for i := 0; ; i++ {
		fd, err := unix.Openat2(r.fd, rel, &how)
		if err == unix.EAGAIN && i < 16 || err == unix.EINTR {
			continue
		}
		return fd, err
	}
}

// A session's identity does not reach /proc. The kernel lets a process
// into its own /proc/PID whatever its credentials (the same-process rule
// comes before every permission check), and fs.* as a session runs in the
// daemon: an isolated session's fs.read of /proc/<daemon's pid>/environ
// answered the daemon's environment, its token included, and /mem would
// have been writable. So as a session's identity nothing on a proc file
// system is opened, whatever path or symlink led there; the session's
// commands read their own /proc with exec.run.
var errProcAsSession = errors.New("a proc file system, as a session")

// daemonFsuid is the daemon's own filesystem uid: a thread whose fsuid
// differs runs as a session's identity (asIdentity).
var daemonFsuid = unix.Geteuid()

// asSession reports whether this thread runs as a session's identity.
func asSession() bool {
	u, _ := unix.SetfsuidRetUid(-1)
	return u != daemonFsuid
}

// onProc reports whether fd is on a proc file system.
func onProc(fd int) bool {
	var st unix.Statfs_t
	return unix.Fstatfs(fd, &st) == nil && st.Type == unix.PROC_SUPER_MAGIC
}

// notDir reports whether l itself exists and is no directory (an
// ENOTDIR may be about a part of its path instead).
func (l loc) notDir() bool {
	fd, err := l.r.open(l.rel, unix.O_PATH, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT != unix.S_IFDIR
}

// openDir opens directory rel as an O_PATH descriptor for *at calls.
func (r *root) openDir(rel string) (int, error) {
	return r.open(rel, unix.O_PATH|unix.O_DIRECTORY, 0)
}

// parent opens the directory holding l and returns it with l's last
// component. The root itself has no parent it may be changed through.
func (l loc) parent() (int, string, error) {
	if l.rel == "." {
		return -1, "", errorf(ErrInvalid, l.abs, "%s is a root of the file tree; it cannot be replaced, moved or removed", l.abs)
	}
	dir, base := path.Split(l.rel)
	if dir == "" {
		dir = "."
	}
	fd, err := l.r.openDir(dir)
	if errors.Is(err, unix.ENOENT) {
		return -1, "", errorf(ErrNotFound, l.abs, "directory %s does not exist (it would hold %s)", path.Dir(l.abs), l.abs)
	}
	if err != nil {
		return -1, "", pathError(err, l.abs)
	}
	return fd, base, nil
}

// mkdirAll makes the directory rel and every missing parent, each with
// mkdirat in its opened parent.
func (l loc) mkdirAll(rel string, mode uint32) error {
	if rel == "." {
		return nil
	}
	parts := strings.Split(rel, "/")
	for i := range parts {
		sub := strings.Join(parts[:i+1], "/")
		fd, err := l.r.openDir(sub)
		if err == nil {
			unix.Close(fd)
			continue
		}
		if err != unix.ENOENT {
			return pathError(err, path.Join(l.r.dir, sub))
		}
		up := "."
		if i > 0 {
			up = strings.Join(parts[:i], "/")
		}
		pfd, err := l.r.openDir(up)
		if err != nil {
			return pathError(err, path.Join(l.r.dir, up))
		}
		err = unix.Mkdirat(pfd, parts[i], mode)
		unix.Close(pfd)
		if err != nil && err != unix.EEXIST {
			return pathError(err, path.Join(l.r.dir, sub))
		}
	}
	return nil
}

// fileOf wraps a descriptor as an *os.File.
func fileOf(fd int, name string) *os.File { return os.NewFile(uintptr(fd), name) }
