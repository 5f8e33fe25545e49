package transport

import (
	"bufio"
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestUnixHalfCloseIsAnswered: a client that writes its requests and shuts
// down its write side (as `echo … | socat - UNIX-CONNECT:…` does) gets
// every answer, a slow one and a stream included, and then end of input.
// Before, end of input cancelled the requests in flight.
func TestUnixHalfCloseIsAnswered(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	h := newFakeHandler()
	serveUnix(t, path, h, UnixOptions{MaxInFlight: 1})
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	defer conn.Close()
	// MaxInFlight 1: the second and third requests wait in the backlog
	// when the client half-closes, and must still be started.
	_, err = conn.Write([]byte(`{"id":1,"method":"sleep","params":{"ms":300}}` + "\n" +
		`{"id":2,"method":"stream"}` + "\n" +
		`{"id":3,"method":"echo","params":{"x":1}}` + "\n"))
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Second)))

	var ids []float64
	notes := 0
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		if id, ok := m["id"].(float64); ok {
			require.Equal(t, true, m["ok"], sc.Text())
			ids = append(ids, id)
			if id == 1 {
				require.Equal(t, map[string]any{"slept_ms": float64(300)}, m["data"])
			}
		} else {
			notes++
		}
	}
	require.NoError(t, sc.Err(), "the daemon did not close the connection once it had answered")
	require.ElementsMatch(t, []float64{1, 2, 3}, ids)
	require.Equal(t, 3, notes, "the stream's notifications")
	require.NoError(t, <-h.followed)
}

// TestUnixPeerGoneAfterHalfClose: once a half-closed client closes the
// connection altogether, what it had in flight is cancelled with
// ErrPeerClosed (it is gone), and the server lets the connection go.
func TestUnixPeerGoneAfterHalfClose(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	h := newFakeHandler()
	serveUnix(t, path, h, UnixOptions{})
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	_, err = conn.Write([]byte(`{"id":1,"method":"block"}` + "\n"))
	require.NoError(t, err)
	<-h.blocked
	require.NoError(t, conn.CloseWrite())
	// Still there: the call is not cancelled while the client can read.
	select {
	case <-time.After(200 * time.Millisecond):
	case <-h.followed:
	}
	require.Empty(t, h.blockCauses(), "a half-closed client's request was cancelled")
	require.NoError(t, conn.Close())
	require.Eventually(t, func() bool { return len(h.blockCauses()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.ErrorIs(t, h.blockCauses()[0], ErrPeerClosed)
}

// TestUnixShutReadAfterHalfClose: a client that shuts down both sides
// (it will read nothing more) is gone too.
func TestUnixShutReadAfterHalfClose(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	h := newFakeHandler()
	serveUnix(t, path, h, UnixOptions{})
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(`{"id":1,"method":"block"}` + "\n"))
	require.NoError(t, err)
	<-h.blocked
	require.NoError(t, conn.CloseWrite())
	require.NoError(t, conn.CloseRead())
	require.Eventually(t, func() bool { return len(h.blockCauses()) == 1 }, 10*time.Second, 10*time.Millisecond)
	require.ErrorIs(t, h.blockCauses()[0], ErrPeerClosed)
}

// TestUnixHalfCloseEndsPromptly: once a half-closed client's requests
// are answered, the connection ends at once: the worker that answered
// does not linger for workerIdle waiting for a request that cannot come.
func TestUnixHalfCloseEndsPromptly(t *testing.T) {
	checkGoroutines(t)
	path := sockPath(t)
	serveUnix(t, path, newFakeHandler(), UnixOptions{})
	conn, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	require.NoError(t, err)
	defer conn.Close()
	_, err = conn.Write([]byte(`{"id":1,"method":"echo","params":{"x":1}}` + "\n" + `{"id":2,"method":"echo","params":{"x":2}}` + "\n"))
	require.NoError(t, err)
	require.NoError(t, conn.CloseWrite())
	t0 := time.Now()
	require.NoError(t, conn.SetReadDeadline(t0.Add(workerIdle)))
	sc := bufio.NewScanner(conn)
	n := 0
	for sc.Scan() {
		n++
	}
	require.NoError(t, sc.Err(), "the connection was not closed")
	require.Equal(t, 2, n)
	require.Less(t, time.Since(t0), workerIdle/2, "the connection ended only when the idle worker gave up")
}
