package files

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The kinds of this package's errors; each maps to one wire code.
var (
	ErrNotFound    = errors.New("file not found")
	ErrPermission  = errors.New("permission denied")
	ErrConflict    = errors.New("conflict")
	ErrIsDir       = errors.New("is a directory")
	ErrNotDir      = errors.New("not a directory")
	ErrOutsideRoot = errors.New("outside the file roots")
	ErrLimit       = errors.New("limit exceeded")
	// ErrInvalid: the request cannot be done as asked (an edit's old
	// text missing or ambiguous, a directory not empty, not a regular
	// file, bad parameters).
	ErrInvalid = errors.New("invalid file request")
)

// Error is an error of this package: Kind is one of the sentinels above
// (errors.Is finds it), Path the absolute path it is about, and Error()
// a message for a person that names the path.
type Error struct {
	Kind error
	Path string
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, path, format string, args ...any) error {
	return &Error{Kind: kind, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// pathError turns a system call's error about path into an *Error of the
// matching kind. EXDEV here means a resolution refused by RESOLVE_BENEATH
// (callers of rename handle their own EXDEV first).
func pathError(err error, path string) error {
	var fe *Error
	if errors.As(err, &fe) {
		return err
	}
	if err == errProcAsSession {
		return errorf(ErrPermission, path, "%s is on /proc, which fs.* as an isolated session does not open (the daemon would open it, and the kernel shows the daemon its own /proc whatever the session's rights); read it with exec.run, as the session", path)
	}
	var errno unix.Errno
	if !errors.As(err, &errno) {
		return &Error{Kind: err, Path: path, Msg: fmt.Sprintf("%s: %v", path, err)}
	}
	switch errno {
	case unix.ENOENT:
		return errorf(ErrNotFound, path, "%s does not exist", path)
	case unix.EACCES, unix.EPERM:
		return errorf(ErrPermission, path, "permission denied: %s", path)
	case unix.EISDIR:
		return errorf(ErrIsDir, path, "%s is a directory", path)
	case unix.ENOTDIR:
		return errorf(ErrNotDir, path, "a part of %s is not a directory", path)
	case unix.EXDEV, unix.ELOOP:
		if errno == unix.ELOOP {
			return errorf(ErrInvalid, path, "%s: too many levels of symbolic links", path)
		}
		return errorf(ErrOutsideRoot, path, "%s leads outside the --fs-root trees (through .., an absolute symlink or a symlink pointing out)", path)
	case unix.EEXIST:
		return errorf(ErrConflict, path, "%s already exists", path)
	case unix.ENOTEMPTY:
		return errorf(ErrInvalid, path, "directory %s is not empty; pass recursive to remove it with its contents", path)
	case unix.ENOSPC, unix.EDQUOT, unix.EFBIG:
		return errorf(ErrLimit, path, "%s: %v", path, errno)
	case unix.ENAMETOOLONG:
		return errorf(ErrInvalid, path, "%s: name too long", path)
	case unix.EROFS:
		return errorf(ErrPermission, path, "%s is on a read-only filesystem", path)
	}
	return &Error{Kind: errno, Path: path, Msg: fmt.Sprintf("%s: %v", path, errno)}
}
