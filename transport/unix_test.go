package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// sockPath is a socket path in a fresh directory, kept short for sun_path.
func sockPath(t *testing.T) string {
	return filepath.Join(t.TempDir(), "trl.sock")
}

// serveUnix listens at path and serves h until the test ends. wait returns
// Serve's result once it has returned.
func serveUnix(t *testing.T, path string, h protocol.Handler, opts UnixOptions) (s *UnixServer, wait func() error) {
	t.Helper()
	s, err := ListenUnix(path, opts)
	require.NoError(t, err)
	done := make(chan struct{})
	var serveErr error
	go func() {
		defer close(done)
		serveErr = s.Serve(context.Background(), h)
	}()
	wait = func() error {
		select {
		case <-done:
			return serveErr
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
			return nil
		}
	}
	t.Cleanup(func() {
		s.Close()
		wait()
	})
	return s, wait
}

func dialClient(t *testing.T, path string) *client {
	t.Helper()
	conn, err := net.Dial("unix", path)
	require.NoError(t, err)
	c := newClient(t, conn)
	t.Cleanup(func() {
		conn.Close()
		for range c.lines {
		}
	})
	return c
}

// staleSocket leaves a socket file at path that no one listens on, as a
// killed daemon does.
func staleSocket(t *testing.T, path string) {
	t.Helper()
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	ln.SetUnlinkOnClose(false)
	require.NoError(t, ln.Close())
	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&fs.ModeSocket)
}

func TestUnixSocketMode(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	// A permissive process umask must not widen the socket.
	old := syscall.Umask(0)
	s, err := ListenUnix(path, UnixOptions{})
	syscall.Umask(old)
	require.NoError(t, err)
	defer s.Close()

	fi, err := os.Lstat(path)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&fs.ModeSocket)
	require.Equal(t, fs.FileMode(0o600), fi.Mode().Perm())
	require.Equal(t, old, syscall.Umask(old), "the process umask is restored")
}

func TestUnixServeAndClose(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	s, wait := serveUnix(t, path, newFakeHandler(), UnixOptions{})
	c := dialClient(t, path)

	c.send(`{"id":1,"method":"actor"}` + "\n")
	want := fmt.Sprintf(`{"id":1,"ok":true,"data":{"actor":"uid=%d pid=%d"}}`, os.Geteuid(), os.Getpid())
	require.Equal(t, want, c.recvLine())

	require.NoError(t, s.Close())
	require.NoError(t, wait())
	_, err := os.Lstat(path)
	require.ErrorIs(t, err, fs.ErrNotExist, "the socket is removed on Close")
	_, ok := <-c.lines
	require.False(t, ok, "Close ends open connections")
	require.ErrorIs(t, s.Serve(context.Background(), newFakeHandler()), ErrServerClosed)
}

func TestUnixContextStopsServe(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	h := newFakeHandler()
	s, err := ListenUnix(path, UnixOptions{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, h) }()

	c := dialClient(t, path)
	c.send(`{"id":1,"method":"block"}` + "\n")
	<-h.blocked
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	require.Len(t, h.blockCauses(), 1, "Serve waits for its connections' calls")
	require.ErrorIs(t, h.blockCauses()[0], ErrServerStopped)
	_, err = os.Lstat(path)
	require.ErrorIs(t, err, fs.ErrNotExist)
}

func TestUnixRefusesLiveSocket(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	serveUnix(t, path, newFakeHandler(), UnixOptions{})

	_, err := ListenUnix(path, UnixOptions{})
	require.ErrorIs(t, err, ErrAlreadyListening)
	require.ErrorContains(t, err, "another trl daemon is already listening on "+path)

	c := dialClient(t, path)
	c.send(`{"id":1,"method":"echo"}` + "\n")
	require.Equal(t, `{"id":1,"ok":true,"data":{}}`, c.recvLine(), "the first daemon still serves")
}

func TestUnixReplacesStaleSocket(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	staleSocket(t, path)
	serveUnix(t, path, newFakeHandler(), UnixOptions{})
	c := dialClient(t, path)
	c.send(`{"id":1,"method":"echo"}` + "\n")
	require.Equal(t, `{"id":1,"ok":true,"data":{}}`, c.recvLine())
}

// TestUnixSimultaneousStarts: of many daemons starting at once over a stale
// socket, exactly one wins and the others say a daemon is listening.
func TestUnixSimultaneousStarts(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	staleSocket(t, path)
	const n = 8
	var wg sync.WaitGroup
	servers := make([]*UnixServer, n)
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { servers[i], errs[i] = ListenUnix(path, UnixOptions{}) })
	}
	wg.Wait()
	winners := 0
	for i := range n {
		if errs[i] == nil {
			winners++
			defer servers[i].Close()
			continue
		}
		require.ErrorIs(t, errs[i], ErrAlreadyListening)
	}
	require.Equal(t, 1, winners)
	conn, err := net.Dial("unix", path)
	require.NoError(t, err, "the winner's socket is the one at the path")
	conn.Close()
}

func TestUnixRefusesOtherFiles(t *testing.T) {
	checkGoroutines(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	require.NoError(t, os.WriteFile(target, []byte("keep me"), 0o644))
	live := filepath.Join(dir, "live.sock")
	serveUnix(t, live, newFakeHandler(), UnixOptions{})
	stale := filepath.Join(dir, "stale.sock")
	staleSocket(t, stale)

	tests := []struct {
		name  string
		make  func(path string)
		check func(t *testing.T, path string)
		msg   string
	}{
		{"regular file", func(p string) { require.NoError(t, os.WriteFile(p, []byte("data"), 0o600)) },
			func(t *testing.T, p string) {
				b, err := os.ReadFile(p)
				require.NoError(t, err)
				require.Equal(t, "data", string(b))
			}, "is not a socket (a regular file)"},
		{"directory", func(p string) { require.NoError(t, os.Mkdir(p, 0o700)) },
			func(t *testing.T, p string) {
				fi, err := os.Lstat(p)
				require.NoError(t, err)
				require.True(t, fi.IsDir())
			}, "a directory"},
		{"symlink to file", func(p string) { require.NoError(t, os.Symlink(target, p)) }, nil, "symbolic link"},
		{"dangling symlink", func(p string) { require.NoError(t, os.Symlink(filepath.Join(dir, "nowhere"), p)) }, nil, "symbolic link"},
		{"symlink to live socket", func(p string) { require.NoError(t, os.Symlink(live, p)) }, nil, "symbolic link"},
		{"symlink to stale socket", func(p string) { require.NoError(t, os.Symlink(stale, p)) }, nil, "symbolic link"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("p%d", i))
			tt.make(path)
			before, err := os.Lstat(path)
			require.NoError(t, err)

			_, err = ListenUnix(path, UnixOptions{})
			require.ErrorContains(t, err, path)
			require.ErrorContains(t, err, tt.msg)

			after, err := os.Lstat(path)
			require.NoError(t, err, "the file is left in place")
			require.True(t, os.SameFile(before, after))
			require.Equal(t, before.Mode(), after.Mode())
			if tt.check != nil {
				tt.check(t, path)
			}
		})
	}
	b, err := os.ReadFile(target)
	require.NoError(t, err)
	require.Equal(t, "keep me", string(b), "a symlink's target is never touched")
	fi, err := os.Lstat(stale)
	require.NoError(t, err)
	require.NotZero(t, fi.Mode()&fs.ModeSocket, "a stale socket behind a symlink is not removed")
}

// TestUnixCloseKeepsReplacedFile: Close removes the path only while it is
// still our socket.
func TestUnixCloseKeepsReplacedFile(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	s, err := ListenUnix(path, UnixOptions{})
	require.NoError(t, err)
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.WriteFile(path, []byte("someone else's"), 0o600))
	require.NoError(t, s.Close())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "someone else's", string(b))
}

func TestUnixAllowed(t *testing.T) {
	s := &UnixServer{euid: 1000}
	require.True(t, s.allowed(1000))
	require.True(t, s.allowed(0), "root is always allowed")
	require.False(t, s.allowed(1001))
	s.opts.AllowUIDs = []uint32{1001}
	require.True(t, s.allowed(1001))
	require.False(t, s.allowed(1002))
	s.opts.AllowAnyUID = true
	require.True(t, s.allowed(1002))
}

// TestUnixShutdownAnswersInFlight: Shutdown stops accepting and removes the
// socket at once, but a request already running is still answered on its
// connection before that connection closes.
func TestUnixShutdownAnswersInFlight(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	s, wait := serveUnix(t, path, newFakeHandler(), UnixOptions{})
	c := dialClient(t, path)
	c.send(`{"id":1,"method":"sleep","params":{"ms":300}}` + "\n")
	time.Sleep(50 * time.Millisecond)

	done := make(chan error, 1)
	go func() { done <- s.Shutdown(context.Background()) }()
	require.Eventually(t, func() bool {
		_, err := os.Lstat(path)
		return errors.Is(err, fs.ErrNotExist)
	}, 2*time.Second, 5*time.Millisecond, "the socket is removed as Shutdown starts")
	_, err := net.Dial("unix", path)
	require.Error(t, err, "no new connections during shutdown")

	// The fake sleep gives up when its context ends (the reader saw end of
	// input); what matters is that its answer still reaches the client.
	require.Contains(t, c.recvLine(), `"id":1,`)
	require.NoError(t, <-done)
	require.NoError(t, wait())
	_, ok := <-c.lines
	require.False(t, ok, "the connection closes after its last answer")
}
