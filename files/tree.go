package files

import (
	"errors"
	"os"
	"path"
	"sort"
	"time"

	"golang.org/x/sys/unix"
)

// List limits (SPEC §15).
const (
	MaxListDepth     = 8
	DefaultListLimit = 1000
)

// maxListScan bounds the entries one listing looks at; past it the
// listing answers what it saw with Complete false. A variable for tests.
var maxListScan = 100000

// Entry describes one file as lstat sees it (a symlink is itself, with
// its target). A directory's Size is 0.
type Entry struct {
	Name   string
	Path   string // absolute
	Type   string // file, dir, symlink or other
	Size   int64
	Mode   os.FileMode
	MTime  time.Time
	Target string // a symlink's
}

// ListOptions say what to list.
type ListOptions struct {
	Depth  int // 0 means 1; at most MaxListDepth
	Limit  int // 0 means DefaultListLimit
	Offset int
	// NoHidden leaves out names starting with a dot (and what is under
	// them).
	NoHidden bool
}

// Listing is one page of a directory tree.
type Listing struct {
	Path    string
	Entries []Entry
	// Total is how many entries the tree holds (as far as it was
	// scanned); Complete is true when this page reaches the end and the
	// scan was not cut at its bound.
	Total    int
	Complete bool
}

// List lists the tree under the directory p, sorted by path.
func (fs *FS) List(sc Scope, p string, o ListOptions) (Listing, error) {
	if o.Depth == 0 {
		o.Depth = 1
	}
	if o.Limit == 0 {
		o.Limit = DefaultListLimit
	}
	if o.Depth < 0 || o.Depth > MaxListDepth || o.Limit < 0 || o.Offset < 0 {
		return Listing{}, errorf(ErrInvalid, p, "depth must be 1 to %d, limit and offset not negative", MaxListDepth)
	}
	var out Listing
	err := fs.do(sc, func() error {
		l, err := fs.resolve(sc, p)
		if err != nil {
			return err
		}
		out.Path = l.abs
		fd, err := l.r.open(l.rel, unix.O_RDONLY|unix.O_DIRECTORY, 0)
		if errors.Is(err, unix.ENOTDIR) && l.notDir() {
			return errorf(ErrNotDir, l.abs, "%s is a file, not a directory: read it with fs.read, or list the directory it is in", l.abs)
		}
		if err != nil {
			return pathError(err, l.abs)
		}
		var all []Entry
		cut := walk(fd, l.abs, o, 1, &all)
		sort.Slice(all, func(i, j int) bool { return all[i].Path < all[j].Path })
		out.Total = len(all)
		lo := min(o.Offset, len(all))
		hi := lo + min(o.Limit, len(all)-lo) // lo+o.Limit could overflow
		out.Entries = all[lo:hi]
		out.Complete = hi == len(all) && !cut
		return nil
	})
	return out, err
}

// walk appends the entries of the directory open at fd (which it closes)
// and, below depth, of its subdirectories; it reports whether it stopped
// at maxListScan. Subdirectories are opened by one name with O_NOFOLLOW,
// so a walk never leaves the tree it started in.
func walk(fd int, dir string, o ListOptions, depth int, all *[]Entry) bool {
	f := fileOf(fd, dir)
	defer f.Close()
	// At most as many names as the scan may still take, and one more to
	// know it was cut: a directory of 300,000 long names was read whole
	// (180 MB of the daemon's memory for one fs.list with limit 1). Past
	// the bound the names are those the directory gave first, not the
	// first in order.
	budget := maxListScan - len(*all) + 1
	var names []string
	for len(names) < budget {
		batch, err := f.Readdirnames(min(budget-len(names), 4096))
		names = append(names, batch...)
		if err != nil {
			break // io.EOF: the end
		}
	}
	sort.Strings(names)
	for _, name := range names {
		if o.NoHidden && name[0] == '.' {
			continue
		}
		if len(*all) >= maxListScan {
			return true
		}
		e, err := statAt(fd, name, path.Join(dir, name))
		if err != nil {
			continue // gone since it was listed
		}
		*all = append(*all, e)
		if e.Type == "dir" && depth < o.Depth {
			sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				continue // not readable: listed, not entered
			}
			if walk(sub, e.Path, o, depth+1, all) {
				return true
			}
		}
	}
	// Names past the budget were not read: the listing is cut even when
	// the names read were not all taken (hidden ones left out).
	return len(names) >= budget
}

// statAt describes dir/name without following a final symlink.
func statAt(dirfd int, name, abs string) (Entry, error) {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW|unix.AT_EMPTY_PATH); err != nil {
		return Entry{}, err
	}
	e := Entry{Name: path.Base(abs), Path: abs, Size: st.Size,
		Mode:  os.FileMode(st.Mode&0o777) | modeBits(st.Mode),
		MTime: time.Unix(st.Mtim.Unix()).UTC()}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		e.Type = "file"
	case unix.S_IFDIR:
		e.Type = "dir"
		e.Mode |= os.ModeDir
		e.Size = 0 // what a filesystem says for a directory means nothing to a caller
	case unix.S_IFLNK:
		e.Type = "symlink"
		e.Mode |= os.ModeSymlink
		buf := make([]byte, 4096)
		if n, err := unix.Readlinkat(dirfd, name, buf); err == nil {
			e.Target = string(buf[:n])
		}
	default:
		e.Type = "other"
	}
	return e, nil
}

// Stat describes p (a symlink itself, with its target).
func (fs *FS) Stat(sc Scope, p string) (Entry, error) {
	var e Entry
	err := fs.do(sc, func() error {
		l, err := fs.resolve(sc, p)
		if err != nil {
			return err
		}
		if l.rel == "." {
			if l.r.missing != nil {
				return pathError(l.r.missing, l.abs)
			}
			if e, err = statAt(l.r.fd, "", l.abs); err != nil {
				return pathError(err, l.abs)
			}
			return nil
		}
		dirfd, base, err := l.parent()
		if err != nil {
			return err
		}
		defer unix.Close(dirfd)
		e, err = statAt(dirfd, base, l.abs)
		if err != nil {
			return pathError(err, l.abs)
		}
		return nil
	})
	return e, err
}

// Mkdir makes the directory p (0755), and with parents every missing
// parent; with parents an existing directory is no error.
func (fs *FS) Mkdir(sc Scope, p string, parents bool) (string, error) {
	var abs string
	err := fs.do(sc, func() error {
		l, err := fs.resolve(sc, p)
		if err != nil {
			return err
		}
		abs = l.abs
		if parents {
			if err := l.mkdirAll(l.rel, 0o755); err != nil {
				return err
			}
			// The last part may exist as something else.
			fd, err := l.r.openDir(l.rel)
			if err != nil {
				return pathError(err, l.abs)
			}
			unix.Close(fd)
			return nil
		}
		dirfd, base, err := l.parent()
		var fe *Error
		if errors.As(err, &fe) && errors.Is(fe.Kind, ErrNotFound) {
			fe.Msg += "; parents: true makes the missing directories too"
		}
		if err != nil {
			return err
		}
		defer unix.Close(dirfd)
		if err := unix.Mkdirat(dirfd, base, 0o755); err != nil {
			return pathError(err, l.abs)
		}
		return nil
	})
	return abs, err
}

// Remove removes p: a file or symlink, an empty directory, or with
// recursive a directory and everything in it. It answers how many entries
// it removed.
func (fs *FS) Remove(sc Scope, p string, recursive bool) (string, int, error) {
	var abs string
	n := 0
	err := fs.do(sc, func() error {
		l, err := fs.resolve(sc, p)
		if err != nil {
			return err
		}
		abs = l.abs
		dirfd, base, err := l.parent()
		if err != nil {
			return err
		}
		defer unix.Close(dirfd)
		return removeAt(dirfd, base, l.abs, recursive, &n)
	})
	return abs, n, err
}

// removeAt removes dir/name, counting into n. Subdirectories are entered
// by one name with O_NOFOLLOW: a symlink is removed, never followed.
func removeAt(dirfd int, name, abs string, recursive bool, n *int) error {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return pathError(err, abs)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		if err := unix.Unlinkat(dirfd, name, 0); err != nil {
			return pathError(err, abs)
		}
		*n++
		return nil
	}
	if recursive {
		fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return pathError(err, abs)
		}
		f := fileOf(fd, abs)
		names, err := f.Readdirnames(-1)
		if err != nil {
			f.Close()
			return pathError(err, abs)
		}
		for _, sub := range names {
			if err := removeAt(fd, sub, path.Join(abs, sub), true, n); err != nil {
				f.Close()
				return err
			}
		}
		f.Close()
	}
	if err := unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR); err != nil {
		return pathError(err, abs)
	}
	*n++
	return nil
}

// Move renames from to to, atomically; an existing to is replaced only
// with overwrite (ErrConflict otherwise).
func (fs *FS) Move(sc Scope, from, to string, overwrite bool) (string, string, error) {
	var fromAbs, toAbs string
	err := fs.do(sc, func() error {
		lf, err := fs.resolve(sc, from)
		if err != nil {
			return err
		}
		lt, err := fs.resolve(sc, to)
		if err != nil {
			return err
		}
		fromAbs, toAbs = lf.abs, lt.abs
		ffd, fbase, err := lf.parent()
		if err != nil {
			return err
		}
		defer unix.Close(ffd)
		tfd, tbase, err := lt.parent()
		if err != nil {
			return err
		}
		defer unix.Close(tfd)
		var flags uint
		if !overwrite {
			flags = unix.RENAME_NOREPLACE
		}
		err = unix.Renameat2(ffd, fbase, tfd, tbase, flags)
		if err == unix.EINVAL && flags != 0 {
			// A filesystem without RENAME_NOREPLACE: check, then rename.
			var st unix.Stat_t
			if unix.Fstatat(tfd, tbase, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				return errorf(ErrConflict, lt.abs, "%s already exists; pass overwrite to replace it", lt.abs)
			}
			err = unix.Renameat(ffd, fbase, tfd, tbase)
		}
		switch err {
		case nil:
			return nil
		case unix.EXDEV:
			return errorf(ErrInvalid, lf.abs, "cannot move %s to %s: they are on different filesystems", lf.abs, lt.abs)
		case unix.EEXIST:
			return errorf(ErrConflict, lt.abs, "%s already exists; pass overwrite to replace it", lt.abs)
		case unix.ENOENT:
			return pathError(err, lf.abs)
		}
		return pathError(err, lt.abs)
	})
	return fromAbs, toAbs, err
}
