package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

const testToken = "test-token-0123456789abcdef"

// gatedHandler adds to fakeHandler a stream whose Follow sends one note,
// then waits for release (or ctx) before sending exec.exit, recording how
// it ended.
type gatedHandler struct {
	*fakeHandler
	release chan struct{}
	ended   chan error
}

func newGatedHandler() *gatedHandler {
	return &gatedHandler{fakeHandler: newFakeHandler(), release: make(chan struct{}), ended: make(chan error, 4)}
}

func (h *gatedHandler) Handle(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	if call.Method != "gated" {
		return h.fakeHandler.Handle(ctx, call)
	}
	return &protocol.Reply{
		Data: map[string]string{"stream_id": "st-1"},
		Follow: func(ctx context.Context, emit protocol.Emitter) error {
			if err := emit(protocol.NotifyExecOutput, map[string]string{"data": "first"}); err != nil {
				h.ended <- err
				return err
			}
			select {
			case <-h.release:
			case <-ctx.Done():
				h.ended <- context.Cause(ctx)
				return ctx.Err()
			}
			err := emit(protocol.NotifyExecExit, map[string]int{"exit_code": 0})
			h.ended <- err
			return err
		},
	}, nil
}

// httpTestServer serves h on a loopback port until the test ends.
type httpTestServer struct {
	t      *testing.T
	srv    *HTTPServer
	url    string
	client *http.Client
	done   chan error
}

func serveHTTP(t *testing.T, h protocol.Handler, opts HTTPOptions) *httpTestServer {
	t.Helper()
	if opts.Token == "" {
		opts.Token = testToken
	}
	srv, err := ListenHTTP("127.0.0.1:0", opts)
	require.NoError(t, err)
	ts := &httpTestServer{t: t, srv: srv, url: "http://" + srv.Addr().String(), done: make(chan error, 1),
		client: &http.Client{Transport: &http.Transport{}}}
	go func() { ts.done <- srv.Serve(context.Background(), h) }()
	t.Cleanup(func() {
		ts.client.CloseIdleConnections()
		srv.Close()
		select {
		case err := <-ts.done:
			require.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("Serve did not return after Close")
		}
	})
	return ts
}

// do sends a request; header values are set as given (Host included).
func (ts *httpTestServer) do(method, path, body string, header map[string]string) *http.Response {
	ts.t.Helper()
	req, err := http.NewRequest(method, ts.url+path, strings.NewReader(body))
	require.NoError(ts.t, err)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := ts.client.Do(req)
	require.NoError(ts.t, err)
	ts.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func auth() map[string]string { return map[string]string{"Authorization": "Bearer " + testToken} }

func with(h map[string]string, k, v string) map[string]string {
	out := map[string]string{k: v}
	for hk, hv := range h {
		if hk != k {
			out[hk] = hv
		}
	}
	return out
}

// readJSON reads the whole body as one JSON object.
func readJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "body %q", b)
	return m
}

func TestHTTPNeedsToken(t *testing.T) {
	_, err := ListenHTTP("127.0.0.1:0", HTTPOptions{})
	require.ErrorContains(t, err, "token")
}

func TestHTTPAuth(t *testing.T) {
	checkGoroutines(t)
	ts := serveHTTP(t, newFakeHandler(), HTTPOptions{})
	ping := `{"id":1,"method":"echo","params":{"x":1}}`
	for _, tc := range []struct {
		name   string
		path   string
		header map[string]string
		status int
	}{
		{"good", "/rpc", auth(), 200},
		{"scheme case-insensitive", "/rpc", map[string]string{"Authorization": "bearer " + testToken}, 200},
		{"missing", "/rpc", nil, 401},
		{"wrong", "/rpc", map[string]string{"Authorization": "Bearer " + strings.Repeat("x", len(testToken))}, 401},
		{"wrong length", "/rpc", map[string]string{"Authorization": "Bearer " + testToken + "x"}, 401},
		{"prefix only", "/rpc", map[string]string{"Authorization": "Bearer " + testToken[:5]}, 401},
		{"empty bearer", "/rpc", map[string]string{"Authorization": "Bearer "}, 401},
		{"basic scheme", "/rpc", map[string]string{"Authorization": "Basic " + testToken}, 401},
		{"query token", "/rpc?token=" + testToken, nil, 401},
		{"query access_token", "/rpc?access_token=" + testToken, nil, 401},
		{"unknown path without token", "/nope", nil, 401},
		{"unknown path", "/nope", auth(), 404},
		{"gateway path without gateway", "/execute", auth(), 404},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do("POST", tc.path, ping, tc.header)
			require.Equal(t, tc.status, resp.StatusCode)
			m := readJSON(t, resp)
			if tc.status == 200 {
				require.Equal(t, true, m["ok"])
				return
			}
			require.Equal(t, false, m["ok"])
			require.Contains(t, m, "id")
			require.Nil(t, m["id"])
			if tc.status == 401 {
				require.Equal(t, "AUTH_FAILED", errCode(m))
				require.Equal(t, `Bearer realm="trl"`, resp.Header.Get("WWW-Authenticate"))
			}
			require.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"))
		})
	}
	resp := ts.do("POST", "/rpc?token=x", ping, nil)
	require.Contains(t, readJSON(t, resp)["error"].(map[string]any)["message"], "URL")
}

func TestHTTPHealthz(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	ts := serveHTTP(t, h, HTTPOptions{})
	resp := ts.do("GET", "/healthz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, "{\"ok\":true}\n", string(b))
	require.Equal(t, int64(0), h.calls.Load(), "healthz must not reach the method table")

	resp = ts.do("POST", "/healthz", "", nil)
	require.Equal(t, 405, resp.StatusCode)
	require.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
}

func TestHTTPHostCheck(t *testing.T) {
	checkGoroutines(t)
	ts := serveHTTP(t, newFakeHandler(), HTTPOptions{})
	port := ts.srv.Addr().(*net.TCPAddr).Port
	for host, status := range map[string]int{
		"evil.example.com":                           403,
		"evil.example.com:" + strconv.Itoa(port):     403,
		"127.0.0.1.nip.io":                           403,
		"localhost.evil.com":                         403,
		"localhost:" + strconv.Itoa(port):            200,
		"LOCALHOST":                                  200,
		"app.localhost":                              200,
		"127.0.0.1:" + strconv.Itoa(port):            200,
		"127.1.2.3":                                  200,
		"[::1]:" + strconv.Itoa(port):                200,
		"[::1]":                                      200,
		"0.0.0.0:" + strconv.Itoa(port):              403,
		"192.168.1.10:" + strconv.Itoa(port):         403,
		"[::ffff:8.8.8.8]:" + strconv.Itoa(port):     403,
		"localhost:" + strconv.Itoa(port) + ".evil.": 403,
	} {
		resp := ts.do("POST", "/rpc", `{"id":1,"method":"echo"}`, with(auth(), "Host", host))
		require.Equal(t, status, resp.StatusCode, "Host %q", host)
		if status == 403 {
			require.Equal(t, "AUTH_FAILED", errCode(readJSON(t, resp)))
		}
	}
	// Even the health check is refused to a foreign Host.
	resp := ts.do("GET", "/healthz", "", map[string]string{"Host": "evil.example.com"})
	require.Equal(t, 403, resp.StatusCode)
}

func TestIsLoopbackHost(t *testing.T) {
	for host, want := range map[string]bool{
		"localhost": true, "localhost:80": true, "LocalHost.": true, "a.b.localhost:1": true,
		"127.0.0.1": true, "127.255.0.1:9": true, "[::1]:8765": true, "::1": true,
		"": false, "example.com": false, "10.0.0.1": false, "[::]:1": false, "0.0.0.0": false,
		"localhostx": false, "xlocalhost": false, "127.0.0.1.example.com": false,
	} {
		require.Equal(t, want, isLoopbackHost(host), "%q", host)
	}
}

func TestHTTPNonLoopbackBindHasNoHostCheck(t *testing.T) {
	checkGoroutines(t)
	srv, err := ListenHTTP("0.0.0.0:0", HTTPOptions{Token: testToken})
	require.NoError(t, err)
	require.False(t, srv.loopback)
	require.NoError(t, srv.Close())
	require.ErrorIs(t, srv.Serve(context.Background(), newFakeHandler()), ErrServerClosed)
}

func TestHTTPRPC(t *testing.T) {
	checkGoroutines(t)
	ts := serveHTTP(t, newFakeHandler(), HTTPOptions{MaxBodyBytes: 1024})
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string
	}{
		{"trl", "POST", "/rpc", `{"id":"a","method":"echo","params":{"x":1}}`, 200, `{"id":"a","ok":true,"data":{"x":1}}`},
		{"jsonrpc", "POST", "/rpc", `{"jsonrpc":"2.0","id":7,"method":"echo"}`, 200, `{"jsonrpc":"2.0","id":7,"result":{}}`},
		{"method error", "POST", "/rpc", `{"id":1,"method":"fail"}`, 200, `{"id":1,"ok":false,"error":{"code":"SESSION_NOT_FOUND","message":"No session with id 's-xyz'"}}`},
		{"jsonrpc method error", "POST", "/rpc", `{"jsonrpc":"2.0","id":1,"method":"fail"}`, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"No session with id 's-xyz'","data":{"code":"SESSION_NOT_FOUND"}}}`},
		{"panic", "POST", "/rpc", `{"id":1,"method":"panic"}`, 200, `{"id":1,"ok":false,"error":{"code":"INTERNAL_ERROR","message":"internal error while handling panic; the daemon log has details"}}`},
		{"not json", "POST", "/rpc", `hello`, 400, ``},
		{"empty", "POST", "/rpc", ``, 400, ``},
		{"two requests", "POST", "/rpc", `{"id":1,"method":"echo"}{"id":2,"method":"echo"}`, 400, ``},
		{"not a request", "POST", "/rpc", `{"id":1}`, 400, ``},
		{"jsonrpc parse error", "POST", "/rpc", `{"jsonrpc":"2.0",`, 400, ``},
		{"jsonrpc notification", "POST", "/rpc", `{"jsonrpc":"2.0","method":"echo"}`, 204, ``},
		{"GET", "GET", "/rpc", ``, 405, ``},
		{"PUT", "PUT", "/rpc", `{"id":1,"method":"echo"}`, 405, ``},
		{"too large", "POST", "/rpc", `{"id":1,"method":"echo","params":{"x":"` + strings.Repeat("a", 2000) + `"}}`, 413, ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := ts.do(tc.method, tc.path, tc.body, auth())
			require.Equal(t, tc.status, resp.StatusCode)
			b, err := io.ReadAll(resp.Body)
			require.NoError(t, err)
			switch {
			case tc.want != "":
				require.Equal(t, tc.want+"\n", string(b))
				require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			case tc.status == 204:
				require.Empty(t, b)
			default:
				var m map[string]any
				require.NoError(t, json.Unmarshal(b, &m), "%q", b)
				switch tc.status {
				case 400:
					if strings.Contains(tc.body, "jsonrpc") {
						require.Equal(t, float64(protocol.RPCParseError), m["error"].(map[string]any)["code"])
					} else {
						require.Equal(t, "INVALID_PARAMS", errCode(m))
					}
				case 405:
					require.Equal(t, "POST", resp.Header.Get("Allow"))
				case 413:
					require.Equal(t, "LIMIT_EXCEEDED", errCode(m))
				}
			}
		})
	}
}

// TestHTTPTooLargeChunked sends an oversized body without a Content-Length.
func TestHTTPTooLargeChunked(t *testing.T) {
	checkGoroutines(t)
	ts := serveHTTP(t, newFakeHandler(), HTTPOptions{MaxBodyBytes: 1024})
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte(`{"id":1,"method":"echo","params":{"x":"`))
		pw.Write([]byte(strings.Repeat("a", 4096)))
		pw.Close()
	}()
	req, err := http.NewRequest("POST", ts.url+"/rpc", pr)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := ts.client.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, 413, resp.StatusCode)
	require.Equal(t, "LIMIT_EXCEEDED", errCode(readJSON(t, resp)))
}

func TestHTTPStreamNDJSONAndSSE(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	ts := serveHTTP(t, h, HTTPOptions{})

	resp := ts.do("POST", "/rpc", `{"id":1,"method":"stream"}`, auth())
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, "application/x-ndjson", resp.Header.Get("Content-Type"))
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, `{"id":1,"ok":true,"data":{"streaming":true}}
{"method":"exec.output","params":{"n":0}}
{"method":"exec.output","params":{"n":1}}
{"method":"exec.output","params":{"n":2}}
`, string(b))
	require.NoError(t, <-h.followed)

	resp = ts.do("POST", "/rpc", `{"jsonrpc":"2.0","id":2,"method":"stream"}`, with(auth(), "Accept", "text/event-stream"))
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	b, _ = io.ReadAll(resp.Body)
	require.Equal(t, `data: {"jsonrpc":"2.0","id":2,"result":{"streaming":true}}

data: {"jsonrpc":"2.0","method":"exec.output","params":{"n":0}}

data: {"jsonrpc":"2.0","method":"exec.output","params":{"n":1}}

data: {"jsonrpc":"2.0","method":"exec.output","params":{"n":2}}

`, string(b))
	require.NoError(t, <-h.followed)

	// An error response is never streamed.
	resp = ts.do("POST", "/rpc", `{"id":3,"method":"fail"}`, with(auth(), "Accept", "text/event-stream"))
	require.Equal(t, "application/json", resp.Header.Get("Content-Type"))
}

func TestAcceptsSSE(t *testing.T) {
	for accept, want := range map[string]bool{
		"text/event-stream":                         true,
		"application/json, text/event-stream;q=0.5": true,
		"TEXT/EVENT-STREAM":                         true,
		"text/event-stream;q=0":                     false,
		"text/event-stream; q=0.0":                  false,
		"application/x-ndjson":                      false,
		"*/*":                                       false,
		"":                                          false,
		"text/event-streams":                        false,
		"application/json;q=1, text/event-stream;q=0.01": true,
	} {
		require.Equal(t, want, acceptsSSE([]string{accept}), "%q", accept)
	}
}

// TestHTTPStreamFlushesAndDisconnect checks that a notification reaches the
// client while Follow is still running, and that a client going away ends
// Follow's context.
func TestHTTPStreamFlushesAndDisconnect(t *testing.T) {
	checkGoroutines(t)
	for _, accept := range []string{"application/x-ndjson", "text/event-stream"} {
		t.Run(accept, func(t *testing.T) {
			h := newGatedHandler()
			ts := serveHTTP(t, h, HTTPOptions{})

			// Flushed as produced: both lines arrive before release.
			resp := ts.do("POST", "/rpc", `{"id":1,"method":"gated"}`, with(auth(), "Accept", accept))
			r := bufio.NewReader(resp.Body)
			readEvent(t, r, accept)
			require.Contains(t, readEvent(t, r, accept), `"first"`)
			close(h.release)
			require.Contains(t, readEvent(t, r, accept), `exec.exit`)
			require.NoError(t, <-h.ended)

			// A client that hangs up mid-stream ends Follow's context.
			h.release = make(chan struct{})
			ctx, cancel := context.WithCancel(context.Background())
			req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/rpc", strings.NewReader(`{"id":2,"method":"gated"}`))
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Accept", accept)
			resp, err := ts.client.Do(req)
			require.NoError(t, err)
			r = bufio.NewReader(resp.Body)
			readEvent(t, r, accept)
			readEvent(t, r, accept)
			cancel()
			resp.Body.Close()
			select {
			case err := <-h.ended:
				require.Error(t, err)
			case <-time.After(5 * time.Second):
				t.Fatal("Follow did not end after the client went away")
			}
		})
	}
}

// readEvent reads one message: a line (NDJSON) or a "data:" event (SSE).
func readEvent(t *testing.T, r *bufio.Reader, accept string) string {
	t.Helper()
	done := make(chan string, 1)
	go func() {
		line, _ := r.ReadString('\n')
		if accept == "text/event-stream" {
			blank, _ := r.ReadString('\n')
			if blank != "\n" {
				line += "(missing blank line)"
			}
		}
		done <- line
	}()
	select {
	case line := <-done:
		require.NotEmpty(t, line)
		if accept == "text/event-stream" {
			require.True(t, strings.HasPrefix(line, "data: {"), "%q", line)
		} else {
			require.True(t, strings.HasPrefix(line, "{"), "%q", line)
		}
		return line
	case <-time.After(5 * time.Second):
		t.Fatal("no message within 5 s: not flushed?")
		return ""
	}
}

func TestHTTPSlowClients(t *testing.T) {
	checkGoroutines(t)
	ts := serveHTTP(t, newFakeHandler(), HTTPOptions{
		ReadHeaderTimeout: 300 * time.Millisecond,
		ReadBodyTimeout:   300 * time.Millisecond,
		WriteStallTimeout: 300 * time.Millisecond,
	})
	addr := ts.srv.Addr().String()

	t.Run("slow header", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "POST /rpc HTTP/1.1\r\nHost: localhost\r\n")
		require.NoError(t, err)
		start := time.Now()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		io.Copy(io.Discard, c) // returns when the server closes
		require.Less(t, time.Since(start), 5*time.Second)
	})

	t.Run("slow body", func(t *testing.T) {
		c, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		defer c.Close()
		_, err = io.WriteString(c, "POST /rpc HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer "+testToken+
			"\r\nContent-Length: 100\r\n\r\n{\"id\":1,")
		require.NoError(t, err)
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode)
	})

	t.Run("long request is not cut", func(t *testing.T) {
		// Longer than every timeout above: only a stalled write may end it.
		resp := ts.do("POST", "/rpc", `{"id":1,"method":"sleep","params":{"MS":1000}}`, auth())
		require.Equal(t, 200, resp.StatusCode)
		require.Equal(t, true, readJSON(t, resp)["ok"])
		// The connection is reused for a second request after idling.
		time.Sleep(500 * time.Millisecond)
		resp = ts.do("POST", "/rpc", `{"id":2,"method":"sleep","params":{"MS":500}}`, auth())
		require.Equal(t, true, readJSON(t, resp)["ok"])
	})
}

func TestHTTPMaxInFlight(t *testing.T) {
	checkGoroutines(t)
	h := newFakeHandler()
	ts := serveHTTP(t, h, HTTPOptions{MaxInFlight: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", ts.url+"/rpc", strings.NewReader(`{"id":1,"method":"block"}`))
	req.Header.Set("Authorization", "Bearer "+testToken)
	var wg sync.WaitGroup
	wg.Go(func() {
		resp, err := ts.client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
	})
	<-h.blocked
	resp := ts.do("POST", "/rpc", `{"id":2,"method":"echo"}`, auth())
	require.Equal(t, 503, resp.StatusCode)
	require.Equal(t, "LIMIT_EXCEEDED", errCode(readJSON(t, resp)))
	cancel()
	wg.Wait()
	require.Eventually(t, func() bool {
		resp := ts.do("POST", "/rpc", `{"id":3,"method":"echo"}`, auth())
		resp.Body.Close()
		return resp.StatusCode == 200
	}, 5*time.Second, 20*time.Millisecond)
}

func TestHTTPShutdown(t *testing.T) {
	checkGoroutines(t)
	h := newGatedHandler()
	ts := serveHTTP(t, h, HTTPOptions{})
	resp := ts.do("POST", "/rpc", `{"id":1,"method":"gated"}`, auth())
	r := bufio.NewReader(resp.Body)
	readEvent(t, r, "")
	readEvent(t, r, "")

	// Shutdown waits for the stream; it ends when its command does.
	shut := make(chan error, 1)
	go func() { shut <- ts.srv.Shutdown(context.Background()) }()
	select {
	case <-shut:
		t.Fatal("Shutdown returned while a stream was running")
	case <-time.After(200 * time.Millisecond):
	}
	_, err := net.Dial("tcp", ts.srv.Addr().String())
	require.Error(t, err, "still accepting during shutdown")
	close(h.release)
	require.Contains(t, readEvent(t, r, ""), "exec.exit")
	require.NoError(t, <-shut)

	// Close ends a stream that does not end by itself.
	h2 := newGatedHandler()
	ts2 := serveHTTP(t, h2, HTTPOptions{})
	resp = ts2.do("POST", "/rpc", `{"id":1,"method":"gated"}`, auth())
	r = bufio.NewReader(resp.Body)
	readEvent(t, r, "")
	readEvent(t, r, "")
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	require.Error(t, ts2.srv.Shutdown(ctx))
	select {
	case err := <-h2.ended:
		require.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Follow did not end on Close")
	}
	select {
	case err := <-ts2.done:
		require.NoError(t, err)
		ts2.done <- nil // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
}

func TestHTTPGatewayMount(t *testing.T) {
	checkGoroutines(t)
	var got []byte
	gw := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok":true,"output":"gw"}`)
	})
	ts := serveHTTP(t, newFakeHandler(), HTTPOptions{Gateway: gw, MaxBodyBytes: 100})
	resp := ts.do("POST", "/execute", `{"call":1}`, auth())
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, map[string]any{"ok": true, "output": "gw"}, readJSON(t, resp))
	require.Equal(t, `{"call":1}`, string(got))

	for _, tc := range []struct {
		method, body string
		header       map[string]string
		status       int
	}{
		{"POST", `{}`, nil, 401},
		{"POST", `{}`, map[string]string{"Authorization": "Bearer nope"}, 401},
		{"GET", ``, auth(), 405},
		{"POST", strings.Repeat("x", 200), auth(), 413},
	} {
		resp := ts.do(tc.method, "/execute", tc.body, tc.header)
		require.Equal(t, tc.status, resp.StatusCode)
		m := readJSON(t, resp)
		require.Equal(t, false, m["ok"], "a ToolResult-shaped error")
		require.NotEmpty(t, errCode(m))
	}
}

// TestHTTPNotFoundListsEveryPath: a 404 names every path the server
// serves (it left out /mcp, /console/, /metrics, /livez and /readyz).
func TestHTTPNotFoundListsEveryPath(t *testing.T) {
	checkGoroutines(t)
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {})
	ts := serveHTTP(t, newFakeHandler(), HTTPOptions{Probes: ok, Console: ok, MCP: ok, Metrics: ok})
	resp := ts.do("GET", "/nope", "", auth())
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	msg := readJSON(t, resp)["error"].(map[string]any)["message"].(string)
	for _, p := range []string{"/rpc", "/healthz", "/livez", "/readyz", "/metrics", "/mcp", "/console/"} {
		require.Contains(t, msg, p)
	}
	bare := serveHTTP(t, newFakeHandler(), HTTPOptions{})
	resp = bare.do("GET", "/nope", "", auth())
	msg = readJSON(t, resp)["error"].(map[string]any)["message"].(string)
	require.NotContains(t, msg, "/mcp", "only what this server serves")
}
