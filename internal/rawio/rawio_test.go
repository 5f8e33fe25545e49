package rawio

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/trl-project/trl/internal/leakcheck"
)

func TestMain(m *testing.M) { leakcheck.Main(m) }

// unixPair is a connected pair of unix stream sockets on the poller.
func unixPair(t *testing.T) (*net.UnixConn, *net.UnixConn) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	conn := func(fd int) *net.UnixConn {
		f := os.NewFile(uintptr(fd), "sock")
		defer f.Close()
		c, err := net.FileConn(f)
		require.NoError(t, err)
		t.Cleanup(func() { c.Close() })
		return c.(*net.UnixConn)
	}
	return conn(fds[0]), conn(fds[1])
}

func rawConn(t *testing.T, c *net.UnixConn) *Conn {
	t.Helper()
	rc, err := c.SyscallConn()
	require.NoError(t, err)
	return NewConn(rc)
}

// TestConnReadsAndWrites: a Conn parks on the poller until input comes,
// writes more than the socket holds by waiting for room, and reads EOF.
func TestConnReadsAndWrites(t *testing.T) {
	a, b := unixPair(t)
	ra, rb := rawConn(t, a), rawConn(t, b)

	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 64)
		n, err := ra.Read(buf)
		assert.NoError(t, err)
		got <- string(buf[:n])
	}()
	select {
	case s := <-got:
		t.Fatalf("read %q before anything was written", s)
	case <-time.After(20 * time.Millisecond):
	}
	n, err := rb.Write([]byte("ping\n"))
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	assert.Equal(t, "ping\n", <-got)

	// 4 MiB is far more than a unix socket buffers: Write waits for room.
	big := make([]byte, 4<<20)
	for i := range big {
		big[i] = byte(i)
	}
	read := make(chan []byte, 1)
	go func() {
		all, err := io.ReadAll(ra)
		assert.NoError(t, err)
		read <- all
	}()
	n, err = rb.Write(big)
	require.NoError(t, err)
	assert.Equal(t, len(big), n)
	require.NoError(t, b.CloseWrite())
	assert.Equal(t, big, <-read, "every byte, in order, then EOF")
}

// TestConnCloseEndsARead: closing the connection ends a Read parked on
// the poller, with net.ErrClosed, as it ends net.Conn's.
func TestConnCloseEndsARead(t *testing.T) {
	a, _ := unixPair(t)
	ra := rawConn(t, a)
	done := make(chan error, 1)
	go func() {
		_, err := ra.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	require.NoError(t, a.Close())
	select {
	case err := <-done:
		assert.ErrorIs(t, err, net.ErrClosed)
	case <-time.After(5 * time.Second):
		t.Fatal("Read did not end when the connection closed")
	}
}

// TestNoWaitCalls: SendNoWait and WriteNoWait take what fits and say
// EAGAIN when nothing does, on descriptors that otherwise block.
func TestNoWaitCalls(t *testing.T) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	chunk := make([]byte, 64<<10)
	total := 0
	for {
		n, err := SendNoWait(fds[0], chunk)
		if err != nil {
			assert.ErrorIs(t, err, unix.EAGAIN)
			break
		}
		total += n
		require.Less(t, total, 64<<20, "a blocking socket never filled")
	}
	assert.Positive(t, total)

	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC)) // blocking
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	n, err := WriteNoWait(p[1], []byte("line\n"))
	require.NoError(t, err)
	assert.Equal(t, 5, n)
	buf := make([]byte, 16)
	m, err := unix.Read(p[0], buf)
	require.NoError(t, err)
	assert.Equal(t, "line\n", string(buf[:m]))
	for err == nil {
		_, err = WriteNoWait(p[1], chunk)
	}
	assert.ErrorIs(t, err, unix.EAGAIN, "a full pipe: no wait")
}

// TestReadNonBlocking: Read says EAGAIN on an empty non-blocking pipe.
func TestReadNonBlocking(t *testing.T) {
	var p [2]int
	require.NoError(t, unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK))
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	_, err := Read(p[0], make([]byte, 8))
	assert.ErrorIs(t, err, unix.EAGAIN)
	_, err = unix.Write(p[1], []byte("x"))
	require.NoError(t, err)
	n, err := Read(p[0], make([]byte, 8))
	require.NoError(t, err)
	assert.Equal(t, 1, n)
}

// TestIoctlsAndRlimit: the raw ioctls and prlimit read what x/sys's do.
func TestIoctlsAndRlimit(t *testing.T) {
	ptm, pts, err := pty.Open()
	require.NoError(t, err)
	defer ptm.Close()
	defer pts.Close()
	want, err := unix.IoctlGetTermios(int(pts.Fd()), unix.TCGETS)
	require.NoError(t, err)
	var got unix.Termios
	require.NoError(t, IoctlPtr(int(pts.Fd()), unix.TCGETS, unsafe.Pointer(&got)))
	assert.Equal(t, *want, got)
	require.NoError(t, IoctlInt(int(pts.Fd()), unix.TCXONC, unix.TCOON))
	assert.ErrorIs(t, IoctlInt(int(pts.Fd()), unix.TCXONC, 99), unix.EINVAL)

	var lim, ref unix.Rlimit
	require.NoError(t, GetRlimit(os.Getpid(), unix.RLIMIT_NOFILE, &lim))
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &ref))
	assert.Equal(t, ref, lim)
	assert.ErrorIs(t, GetRlimit(1<<30, unix.RLIMIT_NOFILE, &lim), unix.ESRCH)
}

// TestWriter: a Writer on a pipe writes every line whole and in order,
// also when the pipe fills and the rest must wait for the reader; a
// regular file is written the ordinary way.
func TestWriter(t *testing.T) {
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	lw := NewWriter(w)
	require.IsType(t, &Writer{}, lw)
	line := []byte(strings.Repeat("x", 999) + "\n")
	const lines = 300 // 300 KB: several times what a pipe holds
	read := make(chan []byte, 1)
	go func() {
		all, err := io.ReadAll(r)
		assert.NoError(t, err)
		read <- all
	}()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range lines / 3 {
				n, err := lw.Write(line)
				assert.NoError(t, err)
				assert.Equal(t, len(line), n)
			}
		})
	}
	wg.Wait()
	require.NoError(t, w.Close())
	all := <-read
	assert.Equal(t, bytes.Repeat(line, lines), all, "no line split by another")

	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	require.NoError(t, err)
	defer f.Close()
	assert.Same(t, f, NewWriter(f), "a regular file: written as it is")
}
