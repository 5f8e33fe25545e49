package files

import (
	"bufio"
	"errors"
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// Read limits (SPEC §15).
const (
	DefaultReadLength = 256 << 10
	MaxReadLength     = 4 << 20
)

// maxLineScan is how far a read by lines reads to find its first line
// (1 GiB; a variable for tests): a sparse file of an exabyte of zeros
// held a request (and a CPU) for ever, past the client's leaving and the
// daemon's stop.
var maxLineScan int64 = 1 << 30

// ReadOptions say which part of a file to read. Lines are used when
// LineOffset or LineLimit is set; otherwise Offset and Length.
type ReadOptions struct {
	Offset int64
	// Length is the most bytes to answer; 0 means DefaultReadLength, and
	// more than MaxReadLength is refused.
	Length int64
	// LineOffset is the first line to answer (1-based; 0 means 1), and
	// LineLimit the most lines (0: as many as Length allows).
	LineOffset, LineLimit int
}

// Chunk is a part of a file.
type Chunk struct {
	Path string // absolute
	Size int64  // the whole file's
	// Offset is where Data starts in the file.
	Offset int64
	Data   []byte
	// Complete is true when Data reaches the end of the file.
	Complete bool
	Mode     os.FileMode
	MTime    time.Time
	// FirstLine and Lines, for a read by lines: the number of the first
	// line in Data and how many lines it holds.
	FirstLine, Lines int
}

// Read answers a chunk of the regular file at p.
func (fs *FS) Read(sc Scope, p string, o ReadOptions) (Chunk, error) {
	if o.Length == 0 {
		o.Length = DefaultReadLength
	}
	if o.Offset < 0 || o.Length < 0 || o.LineOffset < 0 || o.LineLimit < 0 {
		return Chunk{}, errorf(ErrInvalid, p, "offset, length, line_offset and line_limit must not be negative")
	}
	if o.Length > MaxReadLength {
		return Chunk{}, errorf(ErrLimit, p, "length %d is over the most one read answers (%d bytes); read in chunks, or use GET /files for big files", o.Length, MaxReadLength)
	}
	var c Chunk
	err := fs.do(sc, func() error {
		f, st, l, err := fs.openRegular(sc, p)
		if err != nil {
			return err
		}
		defer f.Close()
		c = Chunk{Path: l.abs, Size: st.Size(), Mode: st.Mode(), MTime: st.ModTime()}
		if o.LineOffset > 0 || o.LineLimit > 0 {
			err = readLines(f, &c, o)
		} else if err = readRange(f, &c, o); err == nil && !c.Complete && l.abs != "/proc/kmsg" && SizeUntold(f) {
			// (/proc/kmsg's reads take its messages away.)
			c.Size = sizeByReading(f, c.Offset+int64(len(c.Data)))
		}
		if err != nil {
			return pathError(err, l.abs)
		}
		// The size a read to the end found is the file's: /proc's files
		// say 0 and /sys's 4096 whatever they hold, and a file may have
		// changed since it was looked at.
		if c.Complete && c.Offset <= c.Size+int64(len(c.Data)) {
			c.Size = c.Offset + int64(len(c.Data))
		}
		return nil
	})
	return c, err
}

// readRange fills c with at most o.Length bytes from o.Offset. It reads
// to the end of the file rather than to its size, which /proc and /sys
// do not tell, and one byte more than it answers, to know whether the
// file goes on.
func readRange(f *os.File, c *Chunk, o ReadOptions) error {
	c.Offset = o.Offset
	r := io.NewSectionReader(f, o.Offset, o.Length+1)
	// Sized for what the file says it holds, so that a regular file is
	// read into one buffer; grown for one that holds more.
	data := make([]byte, 0, min(o.Length+1, max(c.Size-o.Offset+1, 4<<10)))
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF || errors.Is(err, unix.EAGAIN) {
			break // EAGAIN: a file that would wait for more (/proc/kmsg) has no more now
		}
		if err != nil {
			return err
		}
	}
	c.Complete = int64(len(data)) <= o.Length
	c.Data = data[:min(int64(len(data)), o.Length)]
	return nil
}

// sizeCountMost is how far past a chunk sizeByReading counts.
const sizeCountMost = MaxReadLength

// sizeByReading is the size of a file that does not say it (SizeUntold),
// found by reading on from off, where a chunk that did not reach the end
// stopped, and counting: a read of /proc/self/status with a length said
// size 0. A file longer than sizeCountMost past off is answered as
// off+sizeCountMost, the least it holds.
// A failure past the chunk does not fail the read: the size is then what
// was counted.
func sizeByReading(f *os.File, off int64) int64 {
	n, _ := io.Copy(io.Discard, io.NewSectionReader(f, off, sizeCountMost))
	return off + n
}

// SizeUntold reports whether f is on a file system whose files do not
// say their size: /proc (0) and /sys (4096).
func SizeUntold(f *os.File) bool {
	rc, err := f.SyscallConn()
	if err != nil {
		return false
	}
	var st unix.Statfs_t
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = unix.Fstatfs(int(fd), &st) }); err != nil || serr != nil {
		return false
	}
	return st.Type == unix.PROC_SUPER_MAGIC || st.Type == unix.SYSFS_MAGIC
}

// readLines fills c with whole lines from o.LineOffset, at most
// o.LineLimit of them and o.Length bytes (a line longer than Length is
// cut there).
func readLines(f *os.File, c *Chunk, o ReadOptions) error {
	first := max(o.LineOffset, 1)
	br := bufio.NewReaderSize(f, 64<<10)
	var off int64
	line := 1
	for line < first {
		b, err := br.ReadSlice('\n')
		off += int64(len(b))
		if off > maxLineScan {
			return errorf(ErrLimit, c.Path, "line %d of %s is not within its first %d bytes (line %d is the last one seen, at byte %d); read it by offset instead", first, c.Path, maxLineScan, line, off-int64(len(b)))
		}
		if err == bufio.ErrBufferFull {
			continue // the same line goes on
		}
		if err != nil {
			c.Offset, c.FirstLine, c.Complete = off, first, true
			return nil
		}
		line++
	}
	c.Offset, c.FirstLine = off, first
	start := 0 // where the line being read starts in c.Data
	for o.LineLimit == 0 || c.Lines < o.LineLimit {
		b, err := br.ReadSlice('\n')
		if room := o.Length - int64(len(c.Data)); int64(len(b)) > room {
			if start == 0 { // one line longer than the chunk: cut it
				c.Data = append(c.Data, b[:room]...)
				c.Lines = 1
			} else { // answer whole lines only
				c.Data = c.Data[:start]
			}
			return nil
		}
		c.Data = append(c.Data, b...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if len(c.Data) > start {
			c.Lines++
		}
		start = len(c.Data)
		if err != nil {
			c.Complete = true
			return nil
		}
	}
	// Complete if nothing follows.
	if _, err := br.Peek(1); err != nil {
		c.Complete = true
	}
	return nil
}

// Open opens the regular file at p for reading (GET /files): the
// permission check happens here, as sc's identity; the caller reads the
// file afterwards and closes it.
func (fs *FS) Open(sc Scope, p string) (*os.File, os.FileInfo, string, error) {
	var f *os.File
	var st os.FileInfo
	var abs string
	err := fs.do(sc, func() error {
		var l loc
		var err error
		f, st, l, err = fs.openRegular(sc, p)
		abs = l.abs
		return err
	})
	return f, st, abs, err
}

// openRegular opens p for reading and refuses anything but a regular
// file (a FIFO would block the read, a device has no size).
func (fs *FS) openRegular(sc Scope, p string) (*os.File, os.FileInfo, loc, error) {
	l, err := fs.resolve(sc, p)
	if err != nil {
		return nil, nil, l, err
	}
	fd, err := l.r.open(l.rel, unix.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, l, pathError(err, l.abs)
	}
	f := fileOf(fd, l.abs)
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, l, pathError(err, l.abs)
	}
	if st.IsDir() {
		f.Close()
		return nil, nil, l, errorf(ErrIsDir, l.abs, "%s is a directory; list it with fs.list", l.abs)
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, l, errorf(ErrInvalid, l.abs, "%s is not a regular file (%s)", l.abs, typeName(st.Mode()))
	}
	return f, st, l, nil
}

func typeName(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&os.ModeSymlink != 0:
		return "symlink"
	}
	return "other"
}
