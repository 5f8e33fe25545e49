package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// fakeHandler is a method table for transport tests:
//
//	echo    returns its params ({} when absent)
//	sleep   waits params.ms milliseconds (or until ctx ends)
//	stream  answers {"streaming":true}, then Follow emits 3 exec.output notes
//	block   waits for ctx to end and records context.Cause
//	fail    returns SESSION_NOT_FOUND
//	panic   panics
//	actor   returns the call's Actor
type fakeHandler struct {
	calls  atomic.Int64
	mu     sync.Mutex
	causes []error
	// blocked receives a value when a block call has started.
	blocked chan struct{}
	// followed receives the error each stream Follow ended with.
	followed chan error
}

func newFakeHandler() *fakeHandler {
	return &fakeHandler{blocked: make(chan struct{}, 16), followed: make(chan error, 16)}
}

func (h *fakeHandler) Handle(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	h.calls.Add(1)
	switch call.Method {
	case "echo":
		data := json.RawMessage(`{}`)
		if call.Params != nil {
			data = call.Params
		}
		return &protocol.Reply{Data: data}, nil
	case "sleep":
		var p struct{ MS int }
		if err := protocol.DecodeParams(call.Params, &p); err != nil {
			return nil, err
		}
		select {
		case <-time.After(time.Duration(p.MS) * time.Millisecond):
			return &protocol.Reply{Data: map[string]int{"slept_ms": p.MS}}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "stream":
		return &protocol.Reply{
			Data: map[string]bool{"streaming": true},
			Follow: func(ctx context.Context, emit protocol.Emitter) error {
				var err error
				for i := range 3 {
					if err = emit("exec.output", map[string]int{"n": i}); err != nil {
						break
					}
				}
				h.followed <- err
				return err
			},
		}, nil
	case "block":
		h.blocked <- struct{}{}
		<-ctx.Done()
		h.mu.Lock()
		h.causes = append(h.causes, context.Cause(ctx))
		h.mu.Unlock()
		return nil, ctx.Err()
	case "fail":
		return nil, protocol.Errorf(protocol.CodeSessionNotFound, "No session with id 's-xyz'")
	case "panic":
		panic("fake handler panic")
	case protocol.MethodSystemPing:
		return &protocol.Reply{Data: map[string]bool{"pong": true}}, nil
	case "actor":
		return &protocol.Reply{Data: map[string]string{"actor": protocol.CallerFrom(ctx).Actor}}, nil
	}
	return nil, protocol.Errorf(protocol.CodeMethodNotFound, "unknown method %q", call.Method)
}

func (h *fakeHandler) blockCauses() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.causes...)
}

// checkGoroutines fails the test if it leaves more goroutines running than
// it started with. Register it first so its cleanup runs last.
func checkGoroutines(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines leaked: %d before, %d after\n%s", before, n, buf)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// client is the far end of a connection: it writes raw text and reads the
// daemon's lines as they come.
type client struct {
	t     *testing.T
	conn  net.Conn
	lines chan string
}

// newClient reads conn's lines in a goroutine that ends when conn closes.
func newClient(t *testing.T, conn net.Conn) *client {
	c := &client{t: t, conn: conn, lines: make(chan string, 256)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(conn)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

// pipeConn serves one net.Pipe connection with h; cleanup closes the client
// side and waits for ServeConn to return.
func pipeConn(t *testing.T, ctx context.Context, h protocol.Handler, opts ConnOptions) (*client, <-chan struct{}) {
	srv, cli := net.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		ServeConn(ctx, srv, h, opts)
	}()
	c := newClient(t, cli)
	t.Cleanup(func() {
		cli.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("ServeConn did not return after the client closed")
		}
		for range c.lines {
		}
	})
	return c, done
}

func (c *client) send(s string) {
	c.t.Helper()
	_, err := io.WriteString(c.conn, s)
	require.NoError(c.t, err)
}

// recv returns the next line decoded as an object.
func (c *client) recv() map[string]any {
	c.t.Helper()
	line := c.recvLine()
	var m map[string]any
	require.NoError(c.t, json.Unmarshal([]byte(line), &m), "line %q", line)
	return m
}

func (c *client) recvLine() string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		require.True(c.t, ok, "connection closed while waiting for a line")
		return line
	case <-time.After(5 * time.Second):
		c.t.Fatal("no line from the daemon within 5s")
		return ""
	}
}

// quiet asserts that nothing arrives for d.
func (c *client) quiet(d time.Duration) {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if ok {
			c.t.Fatalf("unexpected line %q", line)
		}
	case <-time.After(d):
	}
}

func errCode(m map[string]any) any {
	e, _ := m["error"].(map[string]any)
	return e["code"]
}
