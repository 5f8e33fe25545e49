package transport

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/trl-project/trl/protocol"
)

// TestUnixRefusesOtherUID connects as another uid. Its first request is
// answered AUTH_FAILED in its own dialect and with its own id (a JSON-RPC
// 2.0 client could not parse the TRL envelope, and `trl call` said only
// "connection closed"); a peer that sends nothing gets one AUTH_FAILED
// line with id null. Then the stream ends, and no call was handled.
func TestUnixRefusesOtherUID(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	h := newFakeHandler()
	s, err := ListenUnix(path, UnixOptions{})
	require.NoError(t, err)
	if os.Geteuid() != 0 {
		// Not root: pretend the daemon runs as someone else.
		s.euid = uint32(os.Geteuid()) + 1
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), h) }()
	defer func() {
		s.Close()
		<-done
	}()

	refused := func(t *testing.T, request string) map[string]any {
		t.Helper()
		var conn net.Conn
		if os.Geteuid() == 0 {
			conn = dialAsUID(t, path, 65534)
		} else {
			conn, err = net.Dial("unix", path)
			require.NoError(t, err)
		}
		c := newClient(t, conn)
		defer func() {
			conn.Close()
			for range c.lines {
			}
		}()
		if request != "" {
			c.send(request + "\n")
		}
		m := c.recv()
		_, ok := <-c.lines
		require.False(t, ok, "a refused connection is closed")
		return m
	}
	t.Run("nothing sent", func(t *testing.T) {
		m := refused(t, "")
		require.Contains(t, m, "id")
		require.Nil(t, m["id"])
		require.Equal(t, string(protocol.CodeAuthFailed), errCode(m))
	})
	t.Run("trl request", func(t *testing.T) {
		m := refused(t, `{"id":3,"method":"system.ping"}`)
		require.Equal(t, float64(3), m["id"])
		require.Equal(t, string(protocol.CodeAuthFailed), errCode(m))
		require.Contains(t, m["error"].(map[string]any)["message"], "may not use this daemon")
	})
	t.Run("json-rpc request", func(t *testing.T) {
		m := refused(t, `{"jsonrpc":"2.0","id":7,"method":"system.ping"}`)
		require.Equal(t, "2.0", m["jsonrpc"])
		require.Equal(t, float64(7), m["id"])
		e, ok := m["error"].(map[string]any)
		require.True(t, ok, "%v", m)
		require.IsType(t, float64(0), e["code"], "a JSON-RPC error code is a number")
		require.Contains(t, e["message"], "may not use this daemon")
		require.Equal(t, string(protocol.CodeAuthFailed), e["data"].(map[string]any)["code"])
	})
	require.Zero(t, h.calls.Load())
}

// TestUnixAllowUIDs lets a listed uid in; it needs root to connect as one.
func TestUnixAllowUIDs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to connect as another uid")
	}
	checkGoroutines(t)
	path := sockPath(t)
	serveUnix(t, path, newFakeHandler(), UnixOptions{AllowUIDs: []uint32{65534}})
	conn := dialAsUID(t, path, 65534)
	c := newClient(t, conn)
	defer func() {
		conn.Close()
		for range c.lines {
		}
	}()
	c.send(`{"id":1,"method":"actor"}` + "\n")
	m := c.recv()
	require.Equal(t, true, m["ok"])
	require.Equal(t, fmt.Sprintf("uid=65534 pid=%d", os.Getpid()), m["data"].(map[string]any)["actor"])
}

// dialAsUID connects from one OS thread whose effective uid is uid, so the
// kernel records that uid for SO_PEERCRED. The file-system uid stays 0 so
// the 0600 root-owned socket can still be opened. The thread is never
// unlocked unless its uid was restored, so a failure retires the thread
// instead of leaking a changed uid into the runtime.
func dialAsUID(t *testing.T, path string, uid int) net.Conn {
	t.Helper()
	type result struct {
		conn net.Conn
		err  error
		skip string
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		const keep = ^uintptr(0) // -1: leave this id unchanged
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, uintptr(uid), keep); e != 0 {
			runtime.UnlockOSThread()
			ch <- result{skip: "cannot change the thread's uid: " + e.Error()}
			return
		}
		unix.RawSyscall(unix.SYS_SETFSUID, 0, 0, 0)
		conn, err := net.Dial("unix", path)
		if _, _, e := unix.RawSyscall(unix.SYS_SETRESUID, keep, 0, keep); e == 0 {
			runtime.UnlockOSThread()
		}
		ch <- result{conn: conn, err: err}
	}()
	r := <-ch
	if r.skip != "" {
		t.Skip(r.skip)
	}
	require.NoError(t, r.err)
	return r.conn
}
