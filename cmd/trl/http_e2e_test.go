package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const e2eToken = "e2e-token-6f1d0c0f3a9b4e27a1c2"

// httpDaemon is a `trl serve --http 127.0.0.1:0` with its bound address.
type httpDaemon struct {
	*daemon
	url    string
	client *http.Client
}

var httpAddrRE = regexp.MustCompile(`"http":"([0-9.:\[\]]+)"`)

// startHTTPDaemon starts trl serve with HTTP on a free loopback port and the
// token in its environment, and waits until it answers.
func startHTTPDaemon(t *testing.T, args ...string) *httpDaemon {
	t.Helper()
	return startHTTPDaemonBin(t, trlBin, args...)
}

// startHTTPDaemonBin is startHTTPDaemon with the binary bin.
func startHTTPDaemonBin(t *testing.T, bin string, args ...string) *httpDaemon {
	t.Helper()
	socket := filepath.Join(t.TempDir(), "trl.sock")
	d := &daemon{socket: socket, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(bin, append([]string{"serve", "--socket", socket, "--log-level", "debug", "--http", "127.0.0.1:0"}, args...)...)
	d.cmd.Env = append(os.Environ(), "TRL_AUTH_TOKEN="+e2eToken)
	d.cmd.Stderr = d.stderr
	require.NoError(t, d.cmd.Start())
	go func() { d.done <- d.cmd.Wait() }()
	var addr string
	require.Eventually(t, func() bool {
		if m := httpAddrRE.FindStringSubmatch(d.stderr.String()); m != nil {
			addr = m[1]
		}
		if addr == "" || !strings.Contains(d.stderr.String(), `"message":"trl serving"`) {
			return false
		}
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "daemon did not listen: %s", d.stderr)
	hd := &httpDaemon{daemon: d, url: "http://" + addr, client: &http.Client{Transport: &http.Transport{}}}
	t.Cleanup(func() {
		hd.client.CloseIdleConnections()
		d.stop(t)
	})
	return hd
}

// post sends body to path with the given headers (Host is set as the
// request's Host) and returns the response; its body is closed at cleanup.
func (d *httpDaemon) post(t *testing.T, path, body string, header map[string]string) *http.Response {
	t.Helper()
	return d.request(t, context.Background(), http.MethodPost, path, body, header)
}

func (d *httpDaemon) request(t *testing.T, ctx context.Context, method, path, body string, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, method, d.url+path, strings.NewReader(body))
	require.NoError(t, err)
	for k, v := range header {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := d.client.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func bearer(extra ...string) map[string]string {
	h := map[string]string{"Authorization": "Bearer " + e2eToken}
	for i := 0; i+1 < len(extra); i += 2 {
		h[extra[i]] = extra[i+1]
	}
	return h
}

func bodyJSON(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m), "body %q", b)
	return m
}

func errorCode(m map[string]any) string {
	e, _ := m["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

func TestHTTPRefusesWithoutToken(t *testing.T) {
	cmd := exec.Command(trlBin, "serve", "--socket", filepath.Join(t.TempDir(), "s.sock"), "--http", "127.0.0.1:0")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TRL_AUTH_TOKEN=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "TRL_AUTH_TOKEN=")
	out, err := cmd.CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "TRL_AUTH_TOKEN")
	assert.Contains(t, string(out), "refusing")
}

func TestHTTPWarnsOnNonLoopback(t *testing.T) {
	d := startHTTPDaemon(t, "--http", "0.0.0.0:0")
	assert.Contains(t, d.stderr.String(), "non-loopback")
}

func TestHTTPAuthEndToEnd(t *testing.T) {
	d := startHTTPDaemon(t)
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(d.url, "http://"))
	ping := `{"id":"p","method":"system.ping"}`
	for _, tc := range []struct {
		name   string
		path   string
		header map[string]string
		status int
		code   string
	}{
		{"good token", "/rpc", bearer(), 200, ""},
		{"missing", "/rpc", nil, 401, "AUTH_FAILED"},
		{"wrong", "/rpc", map[string]string{"Authorization": "Bearer " + strings.Repeat("z", len(e2eToken))}, 401, "AUTH_FAILED"},
		{"wrong length", "/rpc", map[string]string{"Authorization": "Bearer " + e2eToken[:len(e2eToken)-1]}, 401, "AUTH_FAILED"},
		{"longer", "/rpc", map[string]string{"Authorization": "Bearer " + e2eToken + "0"}, 401, "AUTH_FAILED"},
		{"query-string token", "/rpc?token=" + e2eToken, nil, 401, "AUTH_FAILED"},
		{"query access_token", "/rpc?access_token=" + e2eToken, nil, 401, "AUTH_FAILED"},
		{"gateway without token", "/execute", nil, 401, "AUTH_FAILED"},
		{"bad Host", "/rpc", bearer("Host", "attacker.example:"+port), 403, "AUTH_FAILED"},
		{"localhost Host", "/rpc", bearer("Host", "localhost:"+port), 200, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := d.post(t, tc.path, ping, tc.header)
			require.Equal(t, tc.status, resp.StatusCode)
			m := bodyJSON(t, resp)
			if tc.code == "" {
				require.Equal(t, true, m["ok"], "%v", m)
				require.Equal(t, "p", m["id"])
				return
			}
			require.Equal(t, false, m["ok"])
			require.Equal(t, tc.code, errorCode(m))
		})
	}

	// The health check needs no token and says nothing else.
	resp := d.request(t, context.Background(), http.MethodGet, "/healthz", "", nil)
	require.Equal(t, 200, resp.StatusCode)
	b, _ := io.ReadAll(resp.Body)
	require.Equal(t, "{\"ok\":true}\n", string(b))
	assert.Empty(t, resp.Header.Get("Access-Control-Allow-Origin"), "no CORS")

	// JSON-RPC over HTTP; a method error is 200 with the error envelope.
	resp = d.post(t, "/rpc", `{"jsonrpc":"2.0","id":9,"method":"session.info","params":{"session_id":"nope"}}`, bearer())
	require.Equal(t, 200, resp.StatusCode)
	m := bodyJSON(t, resp)
	require.Equal(t, "SESSION_NOT_FOUND", m["error"].(map[string]any)["data"].(map[string]any)["code"])

	// Not JSON → 400 INVALID_PARAMS; a wrong method → 405.
	resp = d.post(t, "/rpc", "ping please", bearer())
	require.Equal(t, 400, resp.StatusCode)
	require.Equal(t, "INVALID_PARAMS", errorCode(bodyJSON(t, resp)))
	resp = d.request(t, context.Background(), http.MethodGet, "/rpc", "", bearer())
	require.Equal(t, 405, resp.StatusCode)
	require.Equal(t, "POST", resp.Header.Get("Allow"))
}

// readMessage reads one NDJSON line or one SSE event within 10 s.
func readMessage(t *testing.T, r *bufio.Reader, sse bool) map[string]any {
	t.Helper()
	type result struct {
		line string
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := r.ReadString('\n')
		if err == nil && sse {
			var blank string
			blank, err = r.ReadString('\n')
			if err == nil && blank != "\n" {
				err = fmt.Errorf("event not ended by a blank line: %q", blank)
			}
		}
		ch <- result{line, err}
	}()
	select {
	case res := <-ch:
		require.NoError(t, res.err, "after %q", res.line)
		line := res.line
		if sse {
			require.True(t, strings.HasPrefix(line, "data: "), "%q", line)
			line = strings.TrimPrefix(line, "data: ")
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "%q", line)
		return m
	case <-time.After(10 * time.Second):
		t.Fatal("no message within 10 s")
		return nil
	}
}

func TestHTTPStreamingEndToEnd(t *testing.T) {
	d := startHTTPDaemon(t)
	for _, sse := range []bool{false, true} {
		t.Run(fmt.Sprintf("sse=%v", sse), func(t *testing.T) {
			header := bearer()
			want := "application/x-ndjson"
			if sse {
				header = bearer("Accept", "text/event-stream")
				want = "text/event-stream"
			}
			resp := d.post(t, "/rpc", `{"id":"s1","method":"exec.stream","params":{"command":"echo one; sleep 1; echo two >&2"}}`, header)
			require.Equal(t, 200, resp.StatusCode)
			require.Equal(t, want, resp.Header.Get("Content-Type"))
			r := bufio.NewReader(resp.Body)
			first := readMessage(t, r, sse)
			require.Equal(t, "s1", first["id"])
			streamID := first["data"].(map[string]any)["stream_id"]
			require.NotEmpty(t, streamID)

			// "one" arrives while the command still sleeps.
			start := time.Now()
			out := readMessage(t, r, sse)
			require.Equal(t, "exec.output", out["method"])
			require.Equal(t, "one\n", out["params"].(map[string]any)["data"])
			second := readMessage(t, r, sse)
			require.Equal(t, "two\n", second["params"].(map[string]any)["data"])
			require.Equal(t, "stderr", second["params"].(map[string]any)["stream"])
			assert.Greater(t, time.Since(start), 500*time.Millisecond, "the first chunk was held back until the end")
			exit := readMessage(t, r, sse)
			require.Equal(t, "exec.exit", exit["method"])
			require.Equal(t, float64(0), exit["params"].(map[string]any)["exit_code"])
			rest, _ := io.ReadAll(r)
			require.Empty(t, string(rest), "nothing after exec.exit")
		})
	}
}

func TestHTTPDisconnectThenAttach(t *testing.T) {
	d := startHTTPDaemon(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := d.request(t, ctx, http.MethodPost, "/rpc",
		`{"id":1,"method":"exec.stream","params":{"command":"for i in 1 2 3 4 5 6; do echo $i; sleep 0.25; done"}}`, bearer())
	r := bufio.NewReader(resp.Body)
	streamID := readMessage(t, r, false)["data"].(map[string]any)["stream_id"].(string)
	require.Equal(t, "1\n", readMessage(t, r, false)["params"].(map[string]any)["data"])
	cancel() // the client goes away mid-stream
	resp.Body.Close()

	// The command went on: attaching from offset 0 replays everything and
	// ends with its exit.
	resp = d.post(t, "/rpc", fmt.Sprintf(`{"id":2,"method":"exec.attach","params":{"stream_id":%q}}`, streamID), bearer())
	r = bufio.NewReader(resp.Body)
	require.Equal(t, true, readMessage(t, r, false)["ok"])
	var out strings.Builder
	for {
		m := readMessage(t, r, false)
		p := m["params"].(map[string]any)
		if m["method"] == "exec.exit" {
			require.Equal(t, float64(0), p["exit_code"])
			require.Equal(t, false, p["canceled"])
			break
		}
		out.WriteString(p["data"].(string))
	}
	require.Equal(t, "1\n2\n3\n4\n5\n6\n", out.String())
}

func TestHTTPLimitsEndToEnd(t *testing.T) {
	d := startHTTPDaemon(t, "--max-message-bytes", "2048", "--http-header-timeout", "1s")
	resp := d.post(t, "/rpc", `{"id":1,"method":"exec.run","params":{"command":"echo `+strings.Repeat("x", 4096)+`"}}`, bearer())
	require.Equal(t, 413, resp.StatusCode)
	require.Equal(t, "LIMIT_EXCEEDED", errorCode(bodyJSON(t, resp)))
	resp = d.post(t, "/execute", strings.Repeat(" ", 4096), bearer())
	require.Equal(t, 413, resp.StatusCode)

	// A client that never finishes its headers is dropped.
	c, err := net.Dial("tcp", strings.TrimPrefix(d.url, "http://"))
	require.NoError(t, err)
	defer c.Close()
	_, err = io.WriteString(c, "POST /rpc HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer ")
	require.NoError(t, err)
	start := time.Now()
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	_, err = io.Copy(io.Discard, c)
	require.NoError(t, err, "the server closes the connection")
	require.Less(t, time.Since(start), 10*time.Second)

	// A command longer than the header timeout is not cut.
	resp = d.post(t, "/rpc", `{"id":2,"method":"exec.run","params":{"command":"sleep 2; echo late"}}`, bearer())
	require.Equal(t, "late\n", bodyJSON(t, resp)["data"].(map[string]any)["stdout"])
}

func TestHTTPCallCommand(t *testing.T) {
	d := startHTTPDaemon(t)
	run := func(token string, args ...string) (string, error) {
		cmd := exec.Command(trlBin, append([]string{"call", "--http", d.url}, args...)...)
		cmd.Env = append(os.Environ(), "TRL_AUTH_TOKEN="+token)
		out, err := cmd.Output()
		return string(out), err
	}
	out, err := run(e2eToken, "exec.run", `{"command":"echo hi"}`)
	require.NoError(t, err)
	assert.Contains(t, out, `"stdout":"hi\n"`)
	out, err = run(e2eToken, "exec.stream", `{"command":"echo s"}`)
	require.NoError(t, err)
	assert.Contains(t, out, `"data":"s\n"`)
	assert.Contains(t, out, `"method":"exec.exit"`)
	out, err = run(e2eToken, "session.info", `{"session_id":"nope"}`)
	require.Error(t, err)
	assert.Contains(t, out, "SESSION_NOT_FOUND")
	out, err = run("wrong-token", "system.ping")
	require.Error(t, err)
	assert.Contains(t, out, "AUTH_FAILED")
	_, err = run("", "system.ping")
	require.Error(t, err)

	// --http takes host:port as serve --http does (was: unsupported
	// protocol scheme), and flags may follow METHOD.
	cmd := exec.Command(trlBin, "call", "--http", strings.TrimPrefix(d.url, "http://"), "system.ping", "--timeout", "10s")
	cmd.Env = append(os.Environ(), "TRL_AUTH_TOKEN="+e2eToken)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", b)
	assert.Contains(t, string(b), `"uptime_s"`)
}

func TestGatewayEndToEnd(t *testing.T) {
	d := startHTTPDaemon(t)
	seed, err := os.ReadFile("../../testdata/gateway/seed000_mock_request.json")
	require.NoError(t, err)
	resp := d.post(t, "/execute", string(seed), bearer("Content-Type", "application/json"))
	require.Equal(t, 200, resp.StatusCode)
	require.Equal(t, map[string]any{"ok": true, "output": "ok"}, bodyJSON(t, resp))

	// Without the token: 401, a body a gateway can read as a ToolResult.
	resp = d.post(t, "/execute", string(seed), map[string]string{"Content-Type": "application/json"})
	require.Equal(t, 401, resp.StatusCode)
	m := bodyJSON(t, resp)
	require.Equal(t, false, m["ok"])
	require.Equal(t, "AUTH_FAILED", errorCode(m))

	// A bad request names its field.
	resp = d.post(t, "/execute", `{"call":{"name":"bash.exec","args":{"cmd":"true"}},"ctx":{"runId":"r","runtimeMode":"local"},"target":{"targetId":"t","kind":"docker-runner","tenantId":"tenant"}}`, bearer())
	require.Equal(t, 400, resp.StatusCode)
	m = bodyJSON(t, resp)
	require.Equal(t, false, m["ok"])
	require.Contains(t, m["error"].(map[string]any)["message"], "ctx.sessionId")

	// State persists within a ctx.sessionId; concurrent duplicates of one
	// toolCallId run once.
	runTool := func(cmd, toolCallID string) map[string]any {
		body, _ := json.Marshal(map[string]any{
			"call":   map[string]any{"name": "bash.exec", "args": map[string]any{"cmd": cmd}},
			"ctx":    map[string]any{"runId": "r1", "sessionId": "s1", "runtimeMode": "local", "toolCallId": toolCallID},
			"target": map[string]any{"targetId": "trl-local", "kind": "docker-runner", "tenantId": "t1"},
		})
		resp := d.post(t, "/execute", string(body), bearer())
		require.Equal(t, 200, resp.StatusCode)
		return bodyJSON(t, resp)
	}
	dir := t.TempDir()
	require.Equal(t, true, runTool("cd "+dir, "c1")["ok"])
	var wg sync.WaitGroup
	var mu sync.Mutex
	var answers []any
	for range 4 {
		wg.Go(func() {
			m := runTool("echo x >> runs; sleep 0.5; wc -l < runs", "c2")
			mu.Lock()
			answers = append(answers, m["output"])
			mu.Unlock()
		})
	}
	wg.Wait()
	require.Equal(t, []any{"1\n", "1\n", "1\n", "1\n"}, answers)
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	require.NoError(t, err)
	require.Equal(t, "x\n", string(b))
}

func TestHTTPShutdownWithStream(t *testing.T) {
	d := startHTTPDaemon(t)
	resp := d.post(t, "/rpc", `{"id":1,"method":"exec.stream","params":{"command":"echo go; sleep 300"}}`, bearer())
	r := bufio.NewReader(resp.Body)
	readMessage(t, r, false)
	readMessage(t, r, false)
	start := time.Now()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		require.NoError(t, err, "daemon exit: %s", d.stderr)
		d.done <- err // for the cleanup's stop
	case <-time.After(10 * time.Second):
		t.Fatalf("daemon did not stop with an HTTP stream open: %s", d.stderr)
	}
	assert.Less(t, time.Since(start), 6*time.Second)
	// The stream ended with the command.
	rest, _ := io.ReadAll(r)
	assert.Contains(t, string(rest), "exec.exit")
}
