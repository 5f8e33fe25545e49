package files

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// WriteOptions say how to write a file.
type WriteOptions struct {
	// Mode is the file's permission bits; nil keeps an existing file's
	// and gives a new one 0644.
	Mode *os.FileMode
	// Append adds to the end of the file (made if missing) instead of
	// replacing it atomically.
	Append bool
	// CreateDirs makes missing parent directories (0755).
	CreateDirs bool
	// IfSHA256, when set, refuses the write with ErrConflict unless the
	// file's content now has this SHA-256 (hex): it changed since it was
	// read.
	IfSHA256 string
}

// Written is what a write left.
type Written struct {
	Path   string
	Size   int64
	SHA256 string // hex; "" after an append to a file over maxAppendHash
}

// maxAppendHash bounds how much of a file is read back to hash it after
// an append.
const maxAppendHash = 64 << 20

// Write writes what r gives to p. A whole-file write is atomic: the data
// goes to a temporary file in the same directory, is synced, and renamed
// over p, so a reader sees the old file or the new one, never a part.
// r is read as sc's identity on a locked thread; it may be a network
// stream (PUT /files): it is copied, never held whole.
func (fs *FS) Write(sc Scope, p string, r io.Reader, o WriteOptions) (Written, error) {
	if o.IfSHA256 != "" {
		if _, err := hex.DecodeString(o.IfSHA256); err != nil || len(o.IfSHA256) != 64 {
			return Written{}, errorf(ErrInvalid, p, "if_sha256 must be 64 hex digits, got %q", o.IfSHA256)
		}
		o.IfSHA256 = strings.ToLower(o.IfSHA256)
	}
	var w Written
	err := fs.do(sc, func() error {
		l, err := fs.resolve(sc, p)
		if err != nil {
			return err
		}
		w.Path = l.abs
		if o.CreateDirs {
			if err := l.mkdirAll(path.Dir(l.rel), 0o755); err != nil {
				return err
			}
		}
		if o.Append {
			return appendTo(l, r, o, &w)
		}
		dirfd, base, err := l.parent()
		if err != nil {
			return err
		}
		defer unix.Close(dirfd)
		return replace(dirfd, base, l.abs, o, &w, func(f io.Writer) error {
			_, err := io.Copy(f, r)
			return err
		})
	})
	return w, err
}

// replace writes a new version of dir/base with fill and renames it into
// place. Under check (IfSHA256) the current version is locked and hashed
// first (see lockCurrent).
func replace(dirfd int, base, abs string, o WriteOptions, w *Written, fill func(io.Writer) error) error {
	var old unix.Stat_t
	existed := unix.Fstatat(dirfd, base, &old, unix.AT_SYMLINK_NOFOLLOW) == nil
	if existed && old.Mode&unix.S_IFMT == unix.S_IFDIR {
		return errorf(ErrIsDir, abs, "%s is a directory", abs)
	}
	if t := old.Mode & unix.S_IFMT; existed && t != unix.S_IFREG && t != unix.S_IFLNK {
		// A device, FIFO or socket would be replaced by a file (fs.write
		// to /dev/null as root), and if_sha256 hashed /dev/zero for ever.
		return errorf(ErrInvalid, abs, "%s is a %s, not a regular file; fs.write writes regular files", abs, special(t))
	}
	mode := uint32(0o644)
	if o.Mode != nil {
		mode = uint32(o.Mode.Perm())
	} else if existed && old.Mode&unix.S_IFMT == unix.S_IFREG {
		mode = old.Mode & 0o7777
	}
	tmp, f, err := createTemp(dirfd, base, abs)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		f.Close()
		if !committed {
			unix.Unlinkat(dirfd, tmp, 0)
		}
	}()
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(f, h)}
	if err := fill(cw); err != nil {
		return pathError(err, abs)
	}
	if existed && old.Mode&unix.S_IFMT == unix.S_IFREG {
		// Keep the owner when the daemon may (a root daemon writing a
		// user's file); otherwise the file is the writer's.
		f.Chown(int(old.Uid), int(old.Gid))
	}
	// After the chown, which clears setuid and setgid bits.
	if err := f.Chmod(os.FileMode(mode&0o777) | modeBits(mode)); err != nil {
		return pathError(err, abs)
	}
	if err := f.Sync(); err != nil {
		return pathError(err, abs)
	}
	size := cw.n
	if o.IfSHA256 != "" {
		unlock, err := lockCurrent(dirfd, base, abs, o.IfSHA256)
		if err != nil {
			return err
		}
		defer unlock()
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, base); err != nil {
		return pathError(err, abs)
	}
	committed = true
	unix.Fsync(dirfd) // O_PATH: best effort; the rename is what matters
	w.Size, w.SHA256 = size, hex.EncodeToString(h.Sum(nil))
	return nil
}

// modeBits turns the setuid, setgid and sticky bits of a stat mode into
// an os.FileMode's.
func modeBits(m uint32) os.FileMode {
	var out os.FileMode
	if m&unix.S_ISUID != 0 {
		out |= os.ModeSetuid
	}
	if m&unix.S_ISGID != 0 {
		out |= os.ModeSetgid
	}
	if m&unix.S_ISVTX != 0 {
		out |= os.ModeSticky
	}
	return out
}

// createTemp makes a new file, readable by its owner only until it is
// done, next to base: a dot name nobody else picks.
func createTemp(dirfd int, base, abs string) (string, *os.File, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	b := base
	if len(b) > 200 {
		b = b[:200]
	}
	name := ".trl-" + b + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	fd, err := unix.Openat(dirfd, name, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", nil, pathError(err, abs)
	}
	return name, fileOf(fd, abs), nil
}

// lockCurrent takes an exclusive flock on the file now at dir/base and
// checks that its content hashes to want; it returns the unlock. Writers
// that check (if_sha256, fs.edit) take the lock before they rename, so
// of two that read the same version only the first replaces it: the
// second, once it has the lock, finds the name pointing at another file
// and looks again, and then sees a hash that differs. A missing file is a
// conflict too: it changed since it was read.
// MaxHashSize is the largest file if_sha256 is checked on.
const MaxHashSize = 1 << 30

// hashable says why the file st describes cannot be checked against the
// if_sha256 want (none when want is empty): only a regular file of at
// most MaxHashSize bytes is hashed.
func hashable(abs string, st *unix.Stat_t, want string) error {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return errorf(ErrInvalid, abs, "%s is not a regular file; if_sha256 is checked on regular files", abs)
	case want != "" && st.Size > MaxHashSize:
		return errorf(ErrLimit, abs, "%s is %d bytes; if_sha256 is checked on files up to %d bytes (hashing it would hold the request for long)", abs, st.Size, int64(MaxHashSize))
	}
	return nil
}

func lockCurrent(dirfd int, base, abs, want string) (func(), error) {
	for {
		fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err == unix.ENOENT {
			return nil, errorf(ErrConflict, abs, "%s no longer exists: it changed since it was read; read it again", abs)
		}
		if err == unix.ELOOP {
			return nil, errorf(ErrInvalid, abs, "%s is a symlink; give the path of the file it points to", abs)
		}
		if err != nil {
			return nil, pathError(err, abs)
		}
		f := fileOf(fd, abs)
		if err := flock(fd, abs); err != nil {
			f.Close()
			return nil, pathError(err, abs)
		}
		var held, now unix.Stat_t
		if unix.Fstat(fd, &held) != nil || unix.Fstatat(dirfd, base, &now, unix.AT_SYMLINK_NOFOLLOW) != nil ||
			held.Ino != now.Ino || held.Dev != now.Dev {
			f.Close() // replaced while we waited: lock the new one
			continue
		}
		if err := hashable(abs, &held, want); err != nil {
			f.Close()
			return nil, err
		}
		if want != "" {
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				f.Close()
				return nil, pathError(err, abs)
			}
			if got := hex.EncodeToString(h.Sum(nil)); got != want {
				f.Close()
				return nil, errorf(ErrConflict, abs, "%s changed since it was read: its sha256 is now %s, not %s; read it again", abs, got, want)
			}
		}
		return func() { f.Close() }, nil
	}
}

// lockWait is how long an if_sha256 write waits for a lock another
// process holds on the file: a command's `flock f sleep 1000` held the
// request (and its thread) for as long.
var lockWait = 5 * time.Second

// flock takes an exclusive lock on fd, waiting at most lockWait.
func flock(fd int, abs string) error {
	deadline := time.Now().Add(lockWait)
	for pause := time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		switch {
		case err == unix.EINTR:
			continue
		case err != unix.EWOULDBLOCK:
			return err
		case time.Now().After(deadline):
			return errorf(ErrConflict, abs, "%s is locked by another process (flock) and stayed locked for %s; if_sha256 needs the lock to compare it: retry once it is free", abs, lockWait)
		}
		time.Sleep(pause)
	}
}

// appendTo adds r to the end of the file at l (made if missing; a
// symlink is followed, within the root).
func appendTo(l loc, r io.Reader, o WriteOptions, w *Written) error {
	mode := uint32(0o644)
	if o.Mode != nil {
		mode = uint32(o.Mode.Perm())
	}
	fd, err := l.r.open(l.rel, unix.O_RDWR|unix.O_APPEND|unix.O_CREAT|unix.O_NONBLOCK, mode)
	if err != nil {
		return pathError(err, l.abs)
	}
	f := fileOf(fd, l.abs)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return pathError(err, l.abs)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return errorf(ErrInvalid, l.abs, "%s is not a regular file", l.abs)
	}
	if err := hashable(l.abs, &st, o.IfSHA256); err != nil {
		return err
	}
	if o.IfSHA256 != "" {
		// An append keeps the file: lock it, and hash what it holds.
		if err := flock(fd, l.abs); err != nil {
			return pathError(err, l.abs)
		}
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, 1<<62)); err != nil {
			return pathError(err, l.abs)
		}
		if got := hex.EncodeToString(h.Sum(nil)); got != o.IfSHA256 {
			return errorf(ErrConflict, l.abs, "%s changed since it was read: its sha256 is now %s, not %s; read it again", l.abs, got, o.IfSHA256)
		}
	}
	if _, err := io.Copy(f, r); err != nil {
		return pathError(err, l.abs)
	}
	if o.Mode != nil {
		f.Chmod(*o.Mode & os.ModePerm)
	}
	if err := f.Sync(); err != nil {
		return pathError(err, l.abs)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		return pathError(err, l.abs)
	}
	w.Size = st.Size
	if st.Size <= maxAppendHash {
		h := sha256.New()
		if _, err := io.Copy(h, io.NewSectionReader(f, 0, st.Size)); err == nil {
			w.SHA256 = hex.EncodeToString(h.Sum(nil))
		}
	}
	return nil
}

// countWriter counts what passes through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// special names a file type that is neither a file, a directory nor a
// symlink (an S_IFMT value).
func special(t uint32) string {
	switch t {
	case unix.S_IFCHR:
		return "character device"
	case unix.S_IFBLK:
		return "block device"
	case unix.S_IFIFO:
		return "FIFO"
	case unix.S_IFSOCK:
		return "socket"
	}
	return "special file"
}
