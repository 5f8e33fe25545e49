package files

import (
	"bytes"
	"io"

	"golang.org/x/sys/unix"
)

// MaxEditSize is the largest file fs.edit reads whole.
const MaxEditSize = 64 << 20

// maxEditLines bounds the changed lines an edit answers.
const maxEditLines = 200

// Line is one numbered line of a file (1-based).
type Line struct {
	Number int
	Text   string
}

// Edited is what an edit changed.
type Edited struct {
	Written
	Replacements int
	// Lines are the lines of the new file that hold replaced text (at
	// most maxEditLines; LinesCut says more were left out).
	Lines    []Line
	LinesCut bool
}

// Edit replaces old with new in the file at p: exactly once, or every
// time with all. An old that is missing, or found more than once without
// all, is refused (ErrInvalid) and the file is left as it was. The file is
// locked while it is read and replaced, so two edits never lose one
// another's change; the replacement is atomic as Write's.
func (fs *FS) Edit(sc Scope, p, old, new string, all bool) (Edited, error) {
	if old == "" {
		return Edited{}, errorf(ErrInvalid, p, "old must not be empty: give the exact text to replace")
	}
	var e Edited
	err := fs.do(sc, func() error {
		l, err := fs.resolve(sc, p)
		if err != nil {
			return err
		}
		e.Path = l.abs
		dirfd, base, err := l.parent()
		if err != nil {
			return err
		}
		defer unix.Close(dirfd)
		var st unix.Stat_t
		if err := unix.Fstatat(dirfd, base, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return pathError(err, l.abs)
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFREG:
		case unix.S_IFDIR:
			return errorf(ErrIsDir, l.abs, "%s is a directory", l.abs)
		case unix.S_IFLNK:
			target := make([]byte, 4096)
			n, _ := unix.Readlinkat(dirfd, base, target)
			return errorf(ErrInvalid, l.abs, "%s is a symlink to %s; edit the file it points to", l.abs, target[:max(n, 0)])
		default:
			return errorf(ErrInvalid, l.abs, "%s is not a regular file; fs.edit replaces text in regular files only", l.abs)
		}
		if st.Size > MaxEditSize {
			return errorf(ErrLimit, l.abs, "%s is %d bytes; fs.edit reads files up to %d bytes whole", l.abs, st.Size, MaxEditSize)
		}
		unlock, err := lockCurrent(dirfd, base, l.abs, "")
		if err != nil {
			return err
		}
		defer unlock()
		fd, err := unix.Openat(dirfd, base, unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
		if err != nil {
			return pathError(err, l.abs)
		}
		f := fileOf(fd, l.abs)
		content, err := io.ReadAll(io.LimitReader(f, MaxEditSize+1))
		f.Close()
		if err != nil {
			return pathError(err, l.abs)
		}
		if len(content) > MaxEditSize {
			return errorf(ErrLimit, l.abs, "%s is over %d bytes; fs.edit reads files up to that size whole", l.abs, MaxEditSize)
		}
		ob := []byte(old)
		n := bytes.Count(content, ob)
		switch {
		case n == 0:
			return errorf(ErrInvalid, l.abs, "old text not found in %s; nothing changed (it must match exactly, whitespace included)", l.abs)
		case n > 1 && !all:
			return errorf(ErrInvalid, l.abs, "old text found %d times in %s; nothing changed: give more surrounding text so it is unique, or pass replace_all", n, l.abs)
		}
		updated, spans := replaceAll(content, ob, []byte(new))
		e.Replacements = n
		e.Lines, e.LinesCut = changedLines(updated, spans)
		return replace(dirfd, base, l.abs, WriteOptions{}, &e.Written, func(w io.Writer) error {
			_, err := w.Write(updated)
			return err
		})
	})
	return e, err
}

// replaceAll replaces every old in b by new and returns where each new
// text lies in the result.
func replaceAll(b, old, new []byte) ([]byte, [][2]int) {
	var out []byte
	var spans [][2]int
	for {
		i := bytes.Index(b, old)
		if i < 0 {
			return append(out, b...), spans
		}
		out = append(out, b[:i]...)
		spans = append(spans, [2]int{len(out), len(out) + len(new)})
		out = append(out, new...)
		b = b[i+len(old):]
	}
}

// changedLines lists the lines of b that the spans touch (an empty span,
// a deletion, touches the line it is on).
func changedLines(b []byte, spans [][2]int) ([]Line, bool) {
	var out []Line
	seen := map[int]bool{}
	pos, line := 0, 1 // spans are in order: count newlines once
	for _, sp := range spans {
		line += bytes.Count(b[pos:sp[0]], []byte{'\n'})
		pos = sp[0]
		first := line
		last := first + bytes.Count(b[sp[0]:sp[1]], []byte{'\n'})
		if sp[1] > sp[0] && b[sp[1]-1] == '\n' && last > first {
			last-- // new text ending in a newline ends on the line before
		}
		start := bytes.LastIndexByte(b[:sp[0]], '\n') + 1
		for n := first; n <= last; n++ {
			end := bytes.IndexByte(b[start:], '\n')
			text := b[start:]
			if end >= 0 {
				text = b[start : start+end]
			}
			if !seen[n] {
				if len(out) == maxEditLines {
					return out, true
				}
				seen[n] = true
				out = append(out, Line{Number: n, Text: string(text)})
			}
			if end < 0 {
				break
			}
			start += end + 1
		}
	}
	return out, false
}
