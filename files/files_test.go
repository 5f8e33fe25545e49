package files

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/internal/leakcheck"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

func newFS(t *testing.T, roots ...string) *FS {
	t.Helper()
	fs, err := New(Options{Roots: roots})
	require.NoError(t, err)
	t.Cleanup(func() { fs.Close() })
	return fs
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func allBytes() []byte {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return b
}

func TestWriteReadRoundTrip(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	sc := Scope{Dir: dir}
	for name, data := range map[string][]byte{"text": []byte("héllo\nwörld\n"), "bytes": bytes.Repeat(allBytes(), 3), "empty": nil} {
		t.Run(name, func(t *testing.T) {
			w, err := fs.Write(sc, "sub/"+name, bytes.NewReader(data), WriteOptions{CreateDirs: true})
			require.NoError(t, err)
			assert.Equal(t, filepath.Join(dir, "sub", name), w.Path)
			assert.Equal(t, int64(len(data)), w.Size)
			assert.Equal(t, sum(data), w.SHA256)
			c, err := fs.Read(sc, "sub/"+name, ReadOptions{})
			require.NoError(t, err)
			assert.Equal(t, data, append([]byte(nil), c.Data...))
			assert.True(t, c.Complete)
			assert.Equal(t, os.FileMode(0o644), c.Mode.Perm())
			onDisk, _ := os.ReadFile(w.Path)
			assert.Equal(t, data, append([]byte(nil), onDisk...))
		})
	}
}

func TestChunkedReadReassembles(t *testing.T) {
	fs := newFS(t)
	p := filepath.Join(t.TempDir(), "f")
	data := bytes.Repeat(allBytes(), 1000) // 256000 bytes
	require.NoError(t, os.WriteFile(p, data, 0o600))
	var got []byte
	var off int64
	for i := 0; ; i++ {
		require.Less(t, i, 100)
		c, err := fs.Read(Scope{}, p, ReadOptions{Offset: off, Length: 7777})
		require.NoError(t, err)
		assert.Equal(t, off, c.Offset)
		assert.Equal(t, int64(len(data)), c.Size)
		got = append(got, c.Data...)
		off += int64(len(c.Data))
		if c.Complete {
			break
		}
	}
	assert.Equal(t, data, got)
	_, err := fs.Read(Scope{}, p, ReadOptions{Length: MaxReadLength + 1})
	assert.ErrorIs(t, err, ErrLimit)
}

// Files of /proc and /sys do not say their size (0, or 4096 whatever
// they hold): a read goes to their end, and the size it answers is what
// it found. fs.read of /proc/cpuinfo answered nothing, complete, and a
// chunked read of a /sys file never completed.
func TestReadPseudoFiles(t *testing.T) {
	fs := newFS(t)
	want, err := os.ReadFile("/proc/self/status")
	require.NoError(t, err)
	c, err := fs.Read(Scope{}, "/proc/self/status", ReadOptions{})
	require.NoError(t, err)
	assert.True(t, c.Complete)
	assert.Equal(t, int64(len(c.Data)), c.Size)
	assert.Contains(t, string(c.Data), "Name:\t")
	assert.InDelta(t, len(want), len(c.Data), 200, "as much as a read by the test found")

	size := c.Size
	c, err = fs.Read(Scope{}, "/proc/self/status", ReadOptions{Offset: 10, Length: 20})
	require.NoError(t, err)
	assert.False(t, c.Complete)
	assert.Len(t, c.Data, 20)
	assert.InDelta(t, size, c.Size, 200, "a chunk of a /proc file says the size a read to its end finds, not 0")

	c, err = fs.Read(Scope{}, "/proc/self/status", ReadOptions{LineOffset: 1, LineLimit: 2})
	require.NoError(t, err)
	assert.Equal(t, 2, c.Lines)
	assert.False(t, c.Complete)

	c, err = fs.Read(Scope{}, "/proc/self/status", ReadOptions{LineOffset: 1})
	require.NoError(t, err)
	assert.True(t, c.Complete)
	assert.Equal(t, int64(len(c.Data)), c.Size, "a read of every line says the size it found")

	const sys = "/sys/kernel/mm/transparent_hugepage/enabled"
	if _, err := os.Stat(sys); err != nil {
		t.Skipf("no %s here: the /sys half is not tried", sys)
	}
	var got []byte
	for off, i := int64(0), 0; ; i++ {
		require.Less(t, i, 10, "a chunked read of %s completes", sys)
		c, err := fs.Read(Scope{}, sys, ReadOptions{Offset: off, Length: 8})
		require.NoError(t, err)
		got = append(got, c.Data...)
		off += int64(len(c.Data))
		if c.Complete {
			assert.Equal(t, off, c.Size)
			break
		}
	}
	whole, err := os.ReadFile(sys)
	require.NoError(t, err)
	assert.Equal(t, string(whole), string(got))
}

func TestReadLines(t *testing.T) {
	fs := newFS(t)
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("one\ntwo\nthree\nfour"), 0o600))
	c, err := fs.Read(Scope{}, p, ReadOptions{LineOffset: 2, LineLimit: 2})
	require.NoError(t, err)
	assert.Equal(t, "two\nthree\n", string(c.Data))
	assert.Equal(t, int64(4), c.Offset)
	assert.Equal(t, 2, c.FirstLine)
	assert.Equal(t, 2, c.Lines)
	assert.False(t, c.Complete)
	c, err = fs.Read(Scope{}, p, ReadOptions{LineOffset: 3})
	require.NoError(t, err)
	assert.Equal(t, "three\nfour", string(c.Data))
	assert.Equal(t, 2, c.Lines)
	assert.True(t, c.Complete)
	c, err = fs.Read(Scope{}, p, ReadOptions{LineOffset: 9})
	require.NoError(t, err)
	assert.Empty(t, c.Data)
	assert.True(t, c.Complete)
	// Whole lines only when a chunk fills.
	c, err = fs.Read(Scope{}, p, ReadOptions{LineOffset: 1, Length: 10})
	require.NoError(t, err)
	assert.Equal(t, "one\ntwo\n", string(c.Data))
}

func TestReadRefusals(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	_, err := fs.Read(Scope{}, filepath.Join(dir, "missing"), ReadOptions{})
	assert.ErrorIs(t, err, ErrNotFound)
	assert.Contains(t, err.Error(), filepath.Join(dir, "missing"))
	_, err = fs.Read(Scope{}, dir, ReadOptions{})
	assert.ErrorIs(t, err, ErrIsDir)
	_, err = fs.Read(Scope{}, "relative", ReadOptions{})
	assert.ErrorIs(t, err, ErrInvalid)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o600))
	_, err = fs.Read(Scope{}, filepath.Join(dir, "f", "x"), ReadOptions{})
	assert.ErrorIs(t, err, ErrNotDir)
}

func TestWriteModeAppendKeep(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	sc := Scope{Dir: dir}
	m := os.FileMode(0o600)
	_, err := fs.Write(sc, "f", strings.NewReader("a"), WriteOptions{Mode: &m})
	require.NoError(t, err)
	w, err := fs.Write(sc, "f", strings.NewReader("bc"), WriteOptions{Append: true})
	require.NoError(t, err)
	assert.Equal(t, int64(3), w.Size)
	assert.Equal(t, sum([]byte("abc")), w.SHA256)
	_, err = fs.Write(sc, "f", strings.NewReader("new"), WriteOptions{})
	require.NoError(t, err)
	st, err := os.Stat(filepath.Join(dir, "f"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "a replacement keeps the mode")
	_, err = fs.Write(sc, "no/dirs/f", strings.NewReader("x"), WriteOptions{})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = fs.Write(sc, ".", strings.NewReader("x"), WriteOptions{})
	assert.Error(t, err)
	require.NoError(t, os.Mkdir(filepath.Join(dir, "d"), 0o755))
	_, err = fs.Write(sc, "d", strings.NewReader("x"), WriteOptions{})
	assert.ErrorIs(t, err, ErrIsDir)
	leftovers, _ := filepath.Glob(filepath.Join(dir, ".trl-*"))
	assert.Empty(t, leftovers, "no temporary file is left")
}

func TestIfSHA256Conflict(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	sc := Scope{Dir: dir}
	w, err := fs.Write(sc, "f", strings.NewReader("v1"), WriteOptions{})
	require.NoError(t, err)
	_, err = fs.Write(sc, "f", strings.NewReader("v2"), WriteOptions{IfSHA256: w.SHA256})
	require.NoError(t, err)
	_, err = fs.Write(sc, "f", strings.NewReader("v3"), WriteOptions{IfSHA256: w.SHA256})
	assert.ErrorIs(t, err, ErrConflict)
	b, _ := os.ReadFile(filepath.Join(dir, "f"))
	assert.Equal(t, "v2", string(b), "a refused write changes nothing")
	_, err = fs.Write(sc, "gone", strings.NewReader("x"), WriteOptions{IfSHA256: w.SHA256})
	assert.ErrorIs(t, err, ErrConflict)
	_, err = fs.Write(sc, "f", strings.NewReader("x"), WriteOptions{IfSHA256: "nothex"})
	assert.ErrorIs(t, err, ErrInvalid)

	// Of many writers that all read v2, exactly one wins.
	v2 := sum([]byte("v2"))
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := fs.Write(sc, "f", strings.NewReader(fmt.Sprint("w", i)), WriteOptions{IfSHA256: v2})
			if err == nil {
				mu.Lock()
				won++
				mu.Unlock()
			} else {
				assert.ErrorIs(t, err, ErrConflict)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, won)
}

func TestConcurrentWritersLeaveOneVersion(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	sc := Scope{Dir: dir}
	version := func(i int) []byte { return bytes.Repeat([]byte{byte('A' + i%26)}, 64<<10+i) }
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var readErr error
	var rw sync.WaitGroup
	rw.Add(1)
	go func() { // a reader sees whole versions only
		defer rw.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(dir, "f"))
			if err != nil || len(b) == 0 {
				continue
			}
			i := len(b) - 64<<10
			if i < 0 || i >= 100 || !bytes.Equal(b, version(i)) {
				readErr = fmt.Errorf("a reader saw a part: %d bytes", len(b))
				return
			}
		}
	}()
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := fs.Write(sc, "f", bytes.NewReader(version(i)), WriteOptions{})
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	close(stop)
	rw.Wait()
	require.NoError(t, readErr)
	b, err := os.ReadFile(filepath.Join(dir, "f"))
	require.NoError(t, err)
	i := len(b) - 64<<10
	require.True(t, i >= 0 && i < 100)
	assert.Equal(t, version(i), b)
	entries, _ := os.ReadDir(dir)
	assert.Len(t, entries, 1, "no temporary file is left")
}

func TestEdit(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "f.go")
	orig := "package x\n\nfunc a() { return 1 }\nfunc b() { return 1 }\n"
	require.NoError(t, os.WriteFile(p, []byte(orig), 0o640))
	sc := Scope{Dir: dir}
	for name, c := range map[string]struct{ old, msg string }{
		"missing":   {"return 2", "not found"},
		"ambiguous": {"return 1", "found 2 times"},
		"empty":     {"", "must not be empty"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := fs.Edit(sc, "f.go", c.old, "x", false)
			require.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), c.msg)
			b, _ := os.ReadFile(p)
			assert.Equal(t, orig, string(b), "a refused edit leaves the file untouched")
		})
	}
	e, err := fs.Edit(sc, "f.go", "func b() { return 1 }", "func b() {\n\treturn 2\n}", false)
	require.NoError(t, err)
	assert.Equal(t, 1, e.Replacements)
	assert.Equal(t, []Line{{4, "func b() {"}, {5, "\treturn 2"}, {6, "}"}}, e.Lines)
	b, _ := os.ReadFile(p)
	assert.Equal(t, "package x\n\nfunc a() { return 1 }\nfunc b() {\n\treturn 2\n}\n", string(b))
	assert.Equal(t, sum(b), e.SHA256)
	st, _ := os.Stat(p)
	assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
	e, err = fs.Edit(sc, "f.go", "return", "yield", true)
	require.NoError(t, err)
	assert.Equal(t, 2, e.Replacements)
	assert.Equal(t, []Line{{3, "func a() { yield 1 }"}, {5, "\tyield 2"}}, e.Lines)
}

func TestTreeOperations(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	sc := Scope{Dir: dir}
	_, err := fs.Mkdir(sc, "a/b/c", false)
	assert.ErrorIs(t, err, ErrNotFound)
	abs, err := fs.Mkdir(sc, "a/b/c", true)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "a/b/c"), abs)
	_, err = fs.Mkdir(sc, "a", false)
	assert.ErrorIs(t, err, ErrConflict)
	_, err = fs.Write(sc, "a/b/f", strings.NewReader("12345"), WriteOptions{})
	require.NoError(t, err)
	_, err = fs.Write(sc, "a/.hidden", strings.NewReader(""), WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Symlink("b/f", filepath.Join(dir, "a/link")))

	l, err := fs.List(sc, "a", ListOptions{Depth: 3})
	require.NoError(t, err)
	var paths []string
	for _, e := range l.Entries {
		paths = append(paths, strings.TrimPrefix(e.Path, dir+"/")+":"+e.Type)
	}
	assert.Equal(t, []string{"a/.hidden:file", "a/b:dir", "a/b/c:dir", "a/b/f:file", "a/link:symlink"}, paths)
	assert.True(t, l.Complete)
	assert.Equal(t, "b/f", l.Entries[4].Target)
	l, err = fs.List(sc, "a", ListOptions{Depth: 1, NoHidden: true, Limit: 1, Offset: 1})
	require.NoError(t, err)
	assert.Equal(t, 2, l.Total)
	assert.Equal(t, "link", l.Entries[0].Name)
	assert.True(t, l.Complete)
	_, err = fs.List(sc, "a", ListOptions{Depth: 9})
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = fs.List(sc, "a/b/f", ListOptions{})
	assert.ErrorIs(t, err, ErrNotDir)
	assert.Contains(t, err.Error(), "is a file, not a directory", "the path itself is the file (it said: a part of it is not a directory)")
	_, err = fs.List(sc, "a/b/f/g", ListOptions{})
	assert.ErrorIs(t, err, ErrNotDir)
	assert.Contains(t, err.Error(), "a part of", "here a part of the path is the file")

	e, err := fs.Stat(sc, "a/b/f")
	require.NoError(t, err)
	assert.Equal(t, "file", e.Type)
	assert.Equal(t, int64(5), e.Size)

	_, _, err = fs.Move(sc, "a/b/f", "a/link", false)
	assert.ErrorIs(t, err, ErrConflict)
	from, to, err := fs.Move(sc, "a/b/f", "g", false)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "a/b/f"), from)
	assert.Equal(t, filepath.Join(dir, "g"), to)
	_, _, err = fs.Move(sc, "g", "a/link", true)
	require.NoError(t, err)

	_, _, err = fs.Remove(sc, "a", false)
	assert.ErrorIs(t, err, ErrInvalid)
	_, n, err := fs.Remove(sc, "a", true)
	require.NoError(t, err)
	assert.Equal(t, 5, n) // b, c, .hidden, link and a itself
	_, err = os.Stat(filepath.Join(dir, "a"))
	assert.True(t, errors.Is(err, os.ErrNotExist))
}

// Symlinks are not edited or compared through: the refusal says which
// file to name instead, and nothing changes.
func TestSymlinkRefusals(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	sc := Scope{Dir: dir}
	w, err := fs.Write(sc, "real", strings.NewReader("text"), WriteOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Symlink("real", filepath.Join(dir, "link")))
	_, err = fs.Edit(sc, "link", "text", "new", false)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "symlink to real")
	_, err = fs.Write(sc, "link", strings.NewReader("new"), WriteOptions{IfSHA256: w.SHA256})
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "is a symlink")
	b, _ := os.ReadFile(filepath.Join(dir, "real"))
	assert.Equal(t, "text", string(b))
	st, err := os.Lstat(filepath.Join(dir, "link"))
	require.NoError(t, err)
	assert.NotZero(t, st.Mode()&os.ModeSymlink, "the link is still a link")
}

// A missing parent directory is named as the missing one, not the path
// asked for (fs.mkdir of d1/d2 said "d1/d2 does not exist").
func TestMissingParentNamed(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	_, err := fs.Mkdir(Scope{Dir: dir}, "d1/d2", false)
	require.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, "directory "+filepath.Join(dir, "d1")+" does not exist (it would hold "+filepath.Join(dir, "d1/d2")+"); parents: true makes the missing directories too", err.Error())
	_, err = fs.Write(Scope{Dir: dir}, "d1/f", bytes.NewReader([]byte("x")), WriteOptions{})
	require.ErrorIs(t, err, ErrNotFound)
	assert.Equal(t, "directory "+filepath.Join(dir, "d1")+" does not exist (it would hold "+filepath.Join(dir, "d1/f")+")", err.Error())
}

// TestSparseFileBounded: a read by lines of a file of nothing but zeros
// (sparse: an exabyte costs no disk) and an if_sha256 write over it end
// with LIMIT_EXCEEDED; they held a request and a CPU for ever.
func TestSparseFileBounded(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "sparse")
	f, err := os.Create(p)
	require.NoError(t, err)
	f.Close()
	if err := os.Truncate(p, 4<<30); err != nil {
		t.Skipf("cannot make a sparse file of 4 GiB here: %v", err)
	}
	defer func(was int64) { maxLineScan = was }(maxLineScan)
	maxLineScan = 8 << 20
	done := make(chan error, 1)
	go func() {
		_, err := fs.Read(Scope{}, p, ReadOptions{LineOffset: 2})
		done <- err
	}()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, ErrLimit)
		if err != nil {
			assert.Contains(t, err.Error(), "read it by offset")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a read by lines of a sparse file did not end")
	}
	_, err = fs.Write(Scope{}, p, strings.NewReader("x"), WriteOptions{IfSHA256: strings.Repeat("0", 64)})
	assert.ErrorIs(t, err, ErrLimit)
	// Reads by offset answer their chunk as before.
	c, err := fs.Read(Scope{}, p, ReadOptions{Offset: 3 << 30, Length: 16})
	require.NoError(t, err)
	assert.Equal(t, make([]byte, 16), c.Data)
}

// TestListBounded: a listing reads no more of a directory's names than
// its scan bound (it read them all, 180 MB for one request of limit 1 on
// a directory of 300,000 long names), and paging at the ends of int does
// not overflow (it panicked).
func TestListBounded(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	for i := range 50 {
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", i)), nil, 0o644))
	}
	defer func(was int) { maxListScan = was }(maxListScan)
	maxListScan = 10
	l, err := fs.List(Scope{}, dir, ListOptions{Limit: 1})
	require.NoError(t, err)
	assert.Len(t, l.Entries, 1)
	assert.Equal(t, 10, l.Total, "the scan stopped at its bound")
	assert.False(t, l.Complete)
	// Hidden names count against the reading; the cut is still told.
	hid := t.TempDir()
	for i := range 20 {
		require.NoError(t, os.WriteFile(filepath.Join(hid, fmt.Sprintf(".h%02d", i)), nil, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(hid, fmt.Sprintf("v%02d", i)), nil, 0o644))
	}
	l, err = fs.List(Scope{}, hid, ListOptions{NoHidden: true})
	require.NoError(t, err)
	assert.False(t, l.Complete, "names were left unread: %d entries", len(l.Entries))
	maxListScan = 100000
	l, err = fs.List(Scope{}, hid, ListOptions{NoHidden: true})
	require.NoError(t, err)
	assert.True(t, l.Complete)
	assert.Len(t, l.Entries, 20)
	l, err = fs.List(Scope{}, dir, ListOptions{Offset: math.MaxInt, Limit: math.MaxInt})
	require.NoError(t, err)
	assert.Empty(t, l.Entries)
	assert.Equal(t, 50, l.Total)
	l, err = fs.List(Scope{}, dir, ListOptions{Offset: 45, Limit: math.MaxInt})
	require.NoError(t, err)
	assert.Len(t, l.Entries, 5)
	assert.True(t, l.Complete)
}

// TestWriteRefusesSpecialFiles: fs.write does not replace a device, FIFO
// or socket with a file, and if_sha256 never hashes one (it hashed
// /dev/zero for ever, holding a CPU past the daemon's stop).
func TestWriteRefusesSpecialFiles(t *testing.T) {
	fs := newFS(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, unix.Mkfifo(fifo, 0o644))
	zero := "/dev/zero"
	if os.Geteuid() == 0 {
		zero = filepath.Join(dir, "zero")
		require.NoError(t, unix.Mknod(zero, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 5))))
	}
	for _, p := range []string{fifo, zero} {
		for _, o := range []WriteOptions{{}, {IfSHA256: strings.Repeat("0", 64)}} {
			done := make(chan error, 1)
			go func() {
				_, err := fs.Write(Scope{}, p, strings.NewReader("x"), o)
				done <- err
			}()
			select {
			case err := <-done:
				assert.Error(t, err, "%s %+v", p, o)
			case <-time.After(10 * time.Second):
				t.Fatalf("fs.write %s %+v did not end", p, o)
			}
		}
		st, err := os.Stat(p)
		require.NoError(t, err)
		assert.False(t, st.Mode().IsRegular(), "%s is still what it was", p)
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.Contains(e.Name(), ".tmp"), "no temp file left: %s", e.Name())
	}
}

// TestWriteWaitsForALockBounded: an if_sha256 write to a file another
// process keeps locked gives up with CONFLICT after lockWait (it waited
// as long as the lock was held).
func TestWriteWaitsForALockBounded(t *testing.T) {
	fs := newFS(t)
	p := filepath.Join(t.TempDir(), "f")
	require.NoError(t, os.WriteFile(p, []byte("v1"), 0o644))
	holder, err := os.Open(p)
	require.NoError(t, err)
	defer holder.Close()
	require.NoError(t, unix.Flock(int(holder.Fd()), unix.LOCK_EX))
	defer func(was time.Duration) { lockWait = was }(lockWait)
	lockWait = 200 * time.Millisecond
	sum := sha256.Sum256([]byte("v1"))
	for _, o := range []WriteOptions{{IfSHA256: hex.EncodeToString(sum[:])}, {IfSHA256: hex.EncodeToString(sum[:]), Append: true}} {
		start := time.Now()
		_, err = fs.Write(Scope{}, p, strings.NewReader("v2"), o)
		assert.ErrorIs(t, err, ErrConflict, "%+v", o)
		assert.Less(t, time.Since(start), 10*time.Second)
	}
	require.NoError(t, unix.Flock(int(holder.Fd()), unix.LOCK_UN))
	_, err = fs.Write(Scope{}, p, strings.NewReader("v2"), WriteOptions{IfSHA256: hex.EncodeToString(sum[:])})
	require.NoError(t, err, "once free, the write goes through")
}
