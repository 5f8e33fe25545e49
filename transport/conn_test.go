package transport

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

func TestConnConcurrentRequests(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{})

	c.send(`{"id":"slow","method":"sleep","params":{"ms":300}}` + "\n")
	c.send(`{"id":"fast","method":"echo","params":{"x":1}}` + "\n")

	first := c.recv()
	require.Equal(t, "fast", first["id"], "a slow call must not delay a fast one")
	require.Equal(t, true, first["ok"])
	require.Equal(t, map[string]any{"x": float64(1)}, first["data"])
	second := c.recv()
	require.Equal(t, "slow", second["id"])
	require.Equal(t, true, second["ok"])
}

func TestConnMalformedInputContinues(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{})

	for _, bad := range []string{
		"hello\n",
		`{"id":1,"method":` + "\n}\n", // broken JSON spanning lines
		`[1,2]` + "\n",
	} {
		c.send(bad)
		m := c.recv()
		require.Nil(t, m["id"], "for %q", bad)
		require.Contains(t, m, "id")
		require.Equal(t, false, m["ok"])
		require.Equal(t, string(protocol.CodeInvalidParams), errCode(m))
	}
	c.send(`{"method":"echo","id":2}` + "\n")
	m := c.recv()
	require.Equal(t, float64(2), m["id"])
	require.Equal(t, true, m["ok"])
}

func TestConnInvalidRequestKeepsID(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{})
	c.send(`{"id":"x1"}` + "\n")
	m := c.recv()
	require.Equal(t, "x1", m["id"])
	require.Equal(t, false, m["ok"])
}

func TestConnPrettyPrintedRequest(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{})
	c.send("{\n  \"id\": 5,\n  \"method\": \"echo\",\n  \"params\": {\"s\": \"}{\"}\n}\n")
	require.Equal(t, `{"id":5,"ok":true,"data":{"s":"}{"}}`, c.recvLine())
}

func TestConnJSONRPC(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{})

	c.send(`{"jsonrpc":"2.0","id":7,"method":"echo","params":{"a":1}}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":7,"result":{"a":1}}`, c.recvLine())

	c.send(`{"jsonrpc":"2.0","id":"f","method":"fail"}` + "\n")
	m := c.recv()
	require.Equal(t, "2.0", m["jsonrpc"])
	require.Equal(t, "f", m["id"])
	e := m["error"].(map[string]any)
	require.Equal(t, float64(protocol.RPCCode(protocol.CodeSessionNotFound)), e["code"])
	require.Equal(t, string(protocol.CodeSessionNotFound), e["data"].(map[string]any)["code"])

	c.send(`{"jsonrpc":"2.0","id":1,"method":}` + "\n")
	m = c.recv()
	require.Equal(t, "2.0", m["jsonrpc"], "a parse error in a JSON-RPC message is answered in JSON-RPC")
	require.Equal(t, float64(protocol.RPCParseError), m["error"].(map[string]any)["code"])
}

func TestConnNotificationGetsNoResponse(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	c, _ := pipeConn(t, context.Background(), h, ConnOptions{})

	c.send(`{"jsonrpc":"2.0","method":"echo","params":{"n":1}}` + "\n")
	c.send(`{"jsonrpc":"2.0","method":"fail"}` + "\n")
	c.send(`{"jsonrpc":"2.0","method":"stream"}` + "\n")
	require.Eventually(t, func() bool { return h.calls.Load() == 3 }, 5*time.Second, 5*time.Millisecond)
	// The notification's Follow ran (its clean-up matters) but was told
	// at once that nobody listens.
	select {
	case err := <-h.followed:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Follow of a notification did not run")
	}
	c.send(`{"jsonrpc":"2.0","id":1,"method":"echo"}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":1,"result":{}}`, c.recvLine())
	c.quiet(50 * time.Millisecond)
}

func TestConnFollowAfterResponse(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	c, _ := pipeConn(t, context.Background(), h, ConnOptions{})

	c.send(`{"id":"s","method":"stream"}` + "\n")
	require.Equal(t, `{"id":"s","ok":true,"data":{"streaming":true}}`, c.recvLine())
	for i := range 3 {
		require.Equal(t, `{"method":"exec.output","params":{"n":`+string(rune('0'+i))+`}}`, c.recvLine())
	}
	require.NoError(t, <-h.followed)

	c.send(`{"jsonrpc":"2.0","id":"s","method":"stream"}` + "\n")
	require.Equal(t, `{"jsonrpc":"2.0","id":"s","result":{"streaming":true}}`, c.recvLine())
	for i := range 3 {
		require.Equal(t, `{"jsonrpc":"2.0","method":"exec.output","params":{"n":`+string(rune('0'+i))+`}}`, c.recvLine())
	}
}

func TestConnErrorsAndPanics(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{})

	c.send(`{"id":1,"method":"fail"}` + "\n")
	require.Equal(t, `{"id":1,"ok":false,"error":{"code":"SESSION_NOT_FOUND","message":"No session with id 's-xyz'"}}`, c.recvLine())

	c.send(`{"id":2,"method":"panic"}` + "\n")
	m := c.recv()
	require.Equal(t, float64(2), m["id"])
	require.Equal(t, string(protocol.CodeInternal), errCode(m))

	c.send(`{"id":3,"method":"echo"}` + "\n")
	require.Equal(t, `{"id":3,"ok":true,"data":{}}`, c.recvLine(), "the connection survives a panic")
}

func TestConnTooLarge(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{MaxMessageBytes: 64})

	c.send(`{"id":1,"method":"echo","params":{"s":"` + strings.Repeat("x", 200) + `"}}` + "\n")
	m := c.recv()
	require.Nil(t, m["id"])
	require.Equal(t, string(protocol.CodeLimitExceeded), errCode(m))
	require.Contains(t, m["error"].(map[string]any)["message"], "64 bytes")

	c.send(`{"id":2,"method":"echo"}` + "\n")
	require.Equal(t, `{"id":2,"ok":true,"data":{}}`, c.recvLine())
}

func TestConnMaxInFlight(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	c, _ := pipeConn(t, context.Background(), h, ConnOptions{MaxInFlight: 1})

	// Over the cap a request waits for a slot instead of being refused.
	c.send(`{"id":1,"method":"sleep","params":{"ms":300}}` + "\n")
	c.send(`{"id":2,"method":"echo"}` + "\n")
	start := time.Now()
	m := c.recv()
	require.Equal(t, float64(1), m["id"], "the second waits for the first's slot")
	m = c.recv()
	require.Equal(t, float64(2), m["id"])
	require.Empty(t, errCode(m))
	require.GreaterOrEqual(t, time.Since(start), 250*time.Millisecond)
}

// A client that pipelines 10,000 requests gets every one answered: the
// backlog is bounded, and while it is full the connection is not read.
func TestConnPipelinedThousands(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	c, _ := pipeConn(t, context.Background(), h, ConnOptions{MaxInFlight: 4, Backlog: 16})
	const n = 10000
	go func() {
		for i := range n {
			c.send(fmt.Sprintf(`{"id":%d,"method":"echo"}`+"\n", i))
		}
	}()
	seen := make(map[float64]bool, n)
	for range n {
		m := c.recv()
		require.Empty(t, errCode(m), "%v", m)
		seen[m["id"].(float64)] = true
	}
	require.Len(t, seen, n)
}

// exec.cancel does not wait in the backlog behind what it cancels.
func TestConnCancelOvertakes(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	c, _ := pipeConn(t, context.Background(), h, ConnOptions{MaxInFlight: 1})
	c.send(`{"id":1,"method":"sleep","params":{"ms":2000}}` + "\n")
	c.send(`{"id":2,"method":"sleep","params":{"ms":2000}}` + "\n")
	c.send(`{"id":3,"method":"exec.cancel"}` + "\n")
	start := time.Now()
	m := c.recv()
	require.Equal(t, float64(3), m["id"])
	require.Less(t, time.Since(start), time.Second)
}

// TestConnQuickMethodsOvertakeFullSlots: with every slot held by a long
// call (64 sleeping exec.runs), a ping, session.info or session.destroy
// on the same connection is answered at once, not after a slot frees
// (SPEC §5: a long exec.run does not hold up a ping). Other methods
// still wait their turn.
func TestConnQuickMethodsOvertakeFullSlots(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	c, _ := pipeConn(t, context.Background(), h, ConnOptions{MaxInFlight: 1})
	c.send(`{"id":1,"method":"sleep","params":{"ms":2000}}` + "\n")
	c.send(`{"id":2,"method":"echo"}` + "\n")
	c.send(`{"id":3,"method":"system.ping"}` + "\n")
	start := time.Now()
	m := c.recv()
	require.Equal(t, float64(3), m["id"], "%v", m)
	require.Empty(t, errCode(m))
	require.Less(t, time.Since(start), time.Second)
	require.Equal(t, float64(1), c.recv()["id"])
	require.Equal(t, float64(2), c.recv()["id"], "echo waited its turn")
}

func TestConnActor(t *testing.T) {
	checkGoroutines(t)
	c, _ := pipeConn(t, context.Background(), newFakeHandler(), ConnOptions{Actor: "uid=1 pid=2"})
	c.send(`{"id":1,"method":"actor"}` + "\n")
	require.Equal(t, `{"id":1,"ok":true,"data":{"actor":"uid=1 pid=2"}}`, c.recvLine())
}

// TestConnPeerCloseCancels: when the client goes away, in-flight calls see
// their context end with ErrPeerClosed, and ServeConn waits for them.
func TestConnPeerCloseCancels(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	srv, cli := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ServeConn(context.Background(), srv, h, ConnOptions{})
	}()
	c := newClient(t, cli)
	c.send(`{"id":1,"method":"block"}` + "\n")
	c.send(`{"id":2,"method":"block"}` + "\n")
	<-h.blocked
	<-h.blocked
	require.NoError(t, cli.Close())
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeConn did not return after the client closed")
	}
	causes := h.blockCauses()
	require.Len(t, causes, 2, "ServeConn returned before its calls ended")
	for _, cause := range causes {
		require.ErrorIs(t, cause, ErrPeerClosed)
	}
	for range c.lines {
	}
}

// TestConnServerStop: ending ServeConn's context closes the connection even
// though the client keeps it open, and calls see the server's cause.
func TestConnServerStop(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	ctx, cancel := context.WithCancelCause(context.Background())
	c, done := pipeConn(t, ctx, h, ConnOptions{})
	c.send(`{"id":1,"method":"block"}` + "\n")
	<-h.blocked
	cancel(ErrServerStopped)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("ServeConn did not return after its context ended")
	}
	require.ErrorIs(t, h.blockCauses()[0], ErrServerStopped)
	for range c.lines {
	}
}

// TestConnFollowStopsWhenClientLeaves: a client that disconnects mid-stream ends
// its Follow with an error instead of leaving it writing.
func TestConnFollowStopsWhenClientLeaves(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	srv, cli := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ServeConn(context.Background(), srv, h, ConnOptions{})
	}()
	_, err := cli.Write([]byte(`{"id":1,"method":"stream"}` + "\n"))
	require.NoError(t, err)
	// Nobody reads: the response write blocks on the pipe until we close.
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, cli.Close())
	<-done
	select {
	case err := <-h.followed:
		require.Error(t, err)
	default:
		// The response write itself failed, so Follow never ran: fine.
	}
}
