package console

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
)

const token = "console-test-token"

type harness struct {
	rt  *runtime.Runtime
	con *Console
	srv *httptest.Server
}

func newHarness(t *testing.T, write bool, recordDir string) *harness {
	t.Helper()
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop()})
	con := New(Options{API: rt, Sessions: rt, Write: write, BearerToken: token, RecordDir: recordDir, Logger: zerolog.Nop()})
	srv := httptest.NewServer(con)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return &harness{rt: rt, con: con, srv: srv}
}

func (h *harness) call(t *testing.T, method string, params any) map[string]any {
	t.Helper()
	raw, _ := json.Marshal(params)
	reply, err := h.rt.Handle(context.Background(), &protocol.Call{Method: method, Params: raw})
	require.NoError(t, err)
	b, _ := json.Marshal(reply.Data)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// login follows a fresh one-time URL with a cookie jar and returns the
// logged-in client.
func (h *harness) login(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(h.con.LoginURL(h.srv.URL))
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "/console/", resp.Request.URL.Path, "the redirect drops the token from the address")
	require.Empty(t, resp.Request.URL.RawQuery)
	return c
}

func TestLoginOnceCookieAndHeaders(t *testing.T) {
	h := newHarness(t, false, "")
	plain := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	// Nothing without logging in.
	resp, err := plain.Get(h.srv.URL + "/console/api/sessions")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	u := h.con.LoginURL(h.srv.URL)
	resp, err = plain.Get(u)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	assert.Equal(t, "/console/", resp.Header.Get("Location"))
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			cookie = c
		}
	}
	require.NotNil(t, cookie)
	assert.True(t, cookie.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, cookie.SameSite)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'self'")

	// The token works once.
	resp, err = plain.Get(u)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusForbidden, resp.StatusCode, "a login URL replayed is refused")

	// The cookie opens the API and the page.
	req, _ := http.NewRequest(http.MethodGet, h.srv.URL+"/console/api/sessions", nil)
	req.AddCookie(cookie)
	resp, err = plain.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	req, _ = http.NewRequest(http.MethodGet, h.srv.URL+"/console/", nil)
	req.AddCookie(cookie)
	resp, err = plain.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(body), "vendor/xterm.js")
	assert.NotContains(t, string(body), "<script>", "no inline script")

	// A forged cookie does not.
	req, _ = http.NewRequest(http.MethodGet, h.srv.URL+"/console/api/sessions", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: strings.Repeat("0", 64)})
	resp, err = plain.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// Programs use the bearer token, and get login URLs with it.
	req, _ = http.NewRequest(http.MethodPost, h.srv.URL+"/console/api/login-url", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err = plain.Do(req)
	require.NoError(t, err)
	var out map[string]string
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	resp.Body.Close()
	assert.True(t, strings.HasPrefix(out["url"], h.srv.URL+"/console/login?token="), out["url"])
	// The scheme is case-insensitive, as /rpc has it (issue 23 §4).
	for _, scheme := range []string{"bearer ", "BEARER "} {
		req, _ = http.NewRequest(http.MethodPost, h.srv.URL+"/console/api/login-url", nil)
		req.Header.Set("Authorization", scheme+token)
		resp, err = plain.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "scheme %q", scheme)
	}
	req, _ = http.NewRequest(http.MethodPost, h.srv.URL+"/console/api/login-url", nil)
	req.Header.Set("Authorization", "Bearer wrong")
	resp, err = plain.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

func wsURL(h *harness, sid string) string {
	return "ws" + strings.TrimPrefix(h.srv.URL, "http") + "/console/ws?session=" + url.QueryEscape(sid)
}

// dialViewer opens a viewer with the login cookie and the page's Origin.
func dialViewer(t *testing.T, h *harness, c *http.Client, sid, origin string) (*websocket.Conn, *http.Response, error) {
	t.Helper()
	hdr := http.Header{}
	hdr.Set("Origin", origin)
	u, _ := url.Parse(h.srv.URL + "/console/")
	for _, ck := range c.Jar.Cookies(u) {
		hdr.Add("Cookie", ck.Name+"="+ck.Value)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return websocket.Dial(ctx, wsURL(h, sid), &websocket.DialOptions{HTTPHeader: hdr})
}

// readUntil reads binary frames until their text contains want.
func readUntil(t *testing.T, conn *websocket.Conn, want string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var all strings.Builder
	for !strings.Contains(all.String(), want) {
		typ, p, err := conn.Read(ctx)
		require.NoError(t, err, "waiting for %q in %q", want, all.String())
		if typ == websocket.MessageBinary {
			all.Write(p)
		}
	}
	return all.String()
}

func TestViewersFollowTheSession(t *testing.T) {
	h := newHarness(t, false, "")
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo before-viewers"})
	c := h.login(t)

	// Cross-origin upgrades are refused.
	_, resp, err := dialViewer(t, h, c, sid, "http://evil.example")
	require.Error(t, err)
	require.NotNil(t, resp)
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	// So are viewers without the cookie.
	_, resp, err = dialViewer(t, h, &http.Client{Jar: mustJar()}, sid, h.srv.URL)
	require.Error(t, err)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)

	// Two viewers: both start from the screen and follow the output.
	var conns []*websocket.Conn
	for range 2 {
		conn, _, err := dialViewer(t, h, c, sid, h.srv.URL)
		require.NoError(t, err)
		defer conn.CloseNow()
		readUntil(t, conn, "before-viewers")
		conns = append(conns, conn)
	}
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo live-line"})
	for _, conn := range conns {
		readUntil(t, conn, "live-line")
	}

	// Read-only: typing is refused and reaches nothing.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "read x; echo typed=$x", "yield_ms": 300})
	require.Equal(t, "waiting_input", st["state"])
	require.NoError(t, conns[0].Write(ctx, websocket.MessageText, []byte(`{"type":"input","data":"sneaky\r"}`)))
	for {
		typ, p, err := conns[0].Read(ctx)
		require.NoError(t, err)
		if typ == websocket.MessageText && strings.Contains(string(p), "read-only") {
			break
		}
	}
	st = h.call(t, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 300})
	assert.Equal(t, "waiting_input", st["state"], "nothing was typed")
	h.call(t, "exec.input", map[string]any{"session_id": sid, "input": "ok\r"})
}

func mustJar() *cookiejar.Jar { j, _ := cookiejar.New(nil); return j }

func TestConsoleWrite(t *testing.T) {
	h := newHarness(t, true, "")
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	c := h.login(t)
	conn, _, err := dialViewer(t, h, c, sid, h.srv.URL)
	require.NoError(t, err)
	defer conn.CloseNow()
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "read x; echo typed=$x"})
	require.Equal(t, "waiting_input", st["state"])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, conn.Write(ctx, websocket.MessageText, []byte(`{"type":"input","data":"hi\r"}`)))
	st = h.call(t, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000, "until": []string{}})
	assert.Equal(t, "exited", st["state"])
	assert.Contains(t, st["stdout"], "typed=hi")
}

// A viewer that reads nothing while a command floods the terminal never
// slows the command; the queue stays bounded, and the viewer is repainted
// from the screen when it reads again.
func TestStalledViewer(t *testing.T) {
	h := newHarness(t, false, "")
	// A frame whose write makes no progress for the limit (10 s) drops
	// the viewer; in a loaded full run the flood outlasted it once and
	// the viewer read "unexpected EOF". This test is about the queue and
	// the command, not that limit.
	h.con.viewer.write = 2 * time.Minute
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	c := h.login(t)
	conn, _, err := dialViewer(t, h, c, sid, h.srv.URL)
	require.NoError(t, err)
	defer conn.CloseNow()

	goruntime.GC()
	var before goruntime.MemStats
	goruntime.ReadMemStats(&before)
	peak := before.HeapInuse
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			var m goruntime.MemStats
			goruntime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
		}
	}()
	start := time.Now()
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "head -c 100000000 /dev/zero | tr '\\0' x; echo; echo flood-done", "max_output_bytes": 1024, "until": []string{}})
	elapsed := time.Since(start)
	close(stop)
	<-sampled
	assert.Equal(t, "exited", st["state"])
	assert.Less(t, elapsed, 60*time.Second, "a stalled viewer does not hold the command")
	// The viewer's queue is bounded (1 MiB), and the screen keeps at most
	// its pending limit: 100 MB through the daemon grows its heap by a
	// few MiB, not by the flood.
	assert.Less(t, peak-before.HeapInuse, uint64(48<<20), "heap grew by %d MiB during a 100 MB flood to a stalled viewer", (peak-before.HeapInuse)>>20)
	t.Logf("heap in use grew by %d KiB during the flood", (peak-before.HeapInuse)>>10)
	// The viewer catches up (a repaint from the screen shows the end).
	readUntil(t, conn, "flood-done")
}

func TestRecording(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec, err := NewRecorder(dir, 0, h.rt, zerolog.Nop())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()

	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	deadline := time.Now().Add(10 * time.Second)
	for {
		rec.mu.Lock()
		_, ok := rec.recs[sid]
		rec.mu.Unlock()
		if ok || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "read a; read b; echo got-$a"})
	require.Equal(t, "waiting_input", st["state"])
	h.call(t, "exec.input", map[string]any{"session_id": sid, "input": "visible\r"})
	h.call(t, "exec.input", map[string]any{"session_id": sid, "input": "pw\r", "secret": true, "until": []string{}})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo recorded-line; exit 3"})
	time.Sleep(200 * time.Millisecond)
	cancel()
	<-done

	f, err := os.Open(filepath.Join(dir, sid+".cast"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan())
	var hdr map[string]any
	require.NoError(t, json.Unmarshal(sc.Bytes(), &hdr), "header: %s", sc.Text())
	assert.EqualValues(t, 2, hdr["version"])
	assert.EqualValues(t, 80, hdr["width"])
	assert.EqualValues(t, 24, hdr["height"])
	var out, in strings.Builder
	var marks []string
	last := -1.0
	for sc.Scan() {
		var ev []any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev), "event line: %s", sc.Text())
		require.Len(t, ev, 3)
		ts := ev[0].(float64)
		assert.GreaterOrEqual(t, ts, last, "times never go back")
		last = ts
		switch ev[1] {
		case "o":
			out.WriteString(ev[2].(string))
		case "i":
			in.WriteString(ev[2].(string))
		case "m":
			marks = append(marks, ev[2].(string))
		default:
			t.Errorf("unexpected event code %v", ev[1])
		}
	}
	assert.Contains(t, out.String(), "recorded-line")
	assert.Contains(t, out.String(), "got-visible")
	assert.Equal(t, "visible\r***", in.String(), "input events, the secret masked")
	assert.NotContains(t, out.String()+in.String(), "pw")
	assert.Equal(t, []string{"$ read a; read b; echo got-$a", "exit 0", "$ echo recorded-line; exit 3", "exit 3"}, marks, "markers at the command boundaries")

	b, err := os.ReadFile(filepath.Join(dir, sid+".commands.jsonl"))
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	require.Len(t, lines, 2)
	var cmd map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[1]), &cmd))
	assert.Equal(t, "echo recorded-line; exit 3", cmd["command"])
	assert.EqualValues(t, 3, cmd["exit_code"])

	// The console lists and serves it.
	c := h.login(t)
	resp, err := c.Get(h.srv.URL + "/console/api/recordings")
	require.NoError(t, err)
	var list struct {
		Recordings []map[string]any `json:"recordings"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	require.Len(t, list.Recordings, 1)
	resp, err = c.Get(h.srv.URL + "/console/api/recordings/" + sid + ".cast")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	resp, err = c.Get(h.srv.URL + "/console/api/recordings/..%2Fescape.cast")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}

func TestRecordingCutAtItsLimit(t *testing.T) {
	dir := t.TempDir()
	rec := &recording{start: time.Now(), limit: 200}
	f, err := os.Create(filepath.Join(dir, "x.cast"))
	require.NoError(t, err)
	rec.cast, rec.buf = f, bufio.NewWriter(f)
	for range 20 {
		rec.event("o", []byte("0123456789"))
	}
	_ = rec.buf.Flush()
	f.Close()
	b, _ := os.ReadFile(filepath.Join(dir, "x.cast"))
	assert.LessOrEqual(t, len(b), 300)
	assert.Contains(t, string(b), "recording cut at its limit of 200 bytes")
}

// Fifty sessions streaming output and five viewers: the session list
// stays quick.
func TestManySessionsAndViewers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts fifty shells")
	}
	h := newHarness(t, false, "")
	var ids []string
	for range 50 {
		sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
		h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "while :; do echo tick $(date +%s%N); sleep 0.2; done", "yield_ms": 10})
		ids = append(ids, sid)
	}
	c := h.login(t)
	for i := range 5 {
		conn, _, err := dialViewer(t, h, c, ids[i*10], h.srv.URL)
		require.NoError(t, err)
		defer conn.CloseNow()
		readUntil(t, conn, "tick")
	}
	var worst time.Duration
	for range 10 {
		start := time.Now()
		resp, err := c.Get(h.srv.URL + "/console/api/sessions")
		require.NoError(t, err)
		var out struct {
			Sessions struct {
				Sessions []map[string]any `json:"sessions"`
			} `json:"sessions"`
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		resp.Body.Close()
		require.Len(t, out.Sessions.Sessions, 50)
		worst = max(worst, time.Since(start))
	}
	assert.Less(t, worst, 10*time.Second, "the list stays live (generous: 2 shared cores, -race)")
	t.Logf("slowest session list of 50 streaming sessions with 5 viewers: %s", worst)
	for _, sid := range ids {
		h.call(t, "exec.cancel", map[string]any{"session_id": sid, "signal": "KILL"})
	}
}

func openFDs(t *testing.T) int {
	entries, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(entries)
}

// TestViewersClosed: a viewer that leaves before its first frames is
// closed by the server too (each one kept its socket for the daemon's
// life).
func TestViewersClosed(t *testing.T) {
	h := newHarness(t, false, "")
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	c := h.login(t)
	conn, _, err := dialViewer(t, h, c, sid, h.srv.URL)
	require.NoError(t, err)
	conn.CloseNow()
	time.Sleep(200 * time.Millisecond)
	before := openFDs(t)
	for range 30 {
		conn, _, err := dialViewer(t, h, c, sid, h.srv.URL)
		require.NoError(t, err)
		conn.CloseNow()
	}
	assert.Eventually(t, func() bool { return openFDs(t) <= before+3 }, 10*time.Second, 50*time.Millisecond,
		"the server closed the viewers that left: %d fds, %d before", openFDs(t), before)

}

// TestViewerToldTheSessionEnded: a viewer of a session that ends (a
// destroy, `exit`) is told so, with the cause, and the connection is
// closed; it used to stay open on a dead terminal for as long as the
// page did.
func TestViewerToldTheSessionEnded(t *testing.T) {
	h := newHarness(t, false, "")
	c := h.login(t)
	for _, end := range []struct{ how, cause string }{{"destroy", "destroyed"}, {"exit 3", "status 3"}} {
		t.Run(end.how, func(t *testing.T) {
			sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
			conn, _, err := dialViewer(t, h, c, sid, h.srv.URL)
			require.NoError(t, err)
			defer conn.CloseNow()
			readUntil(t, conn, "")
			if end.how == "destroy" {
				h.call(t, "session.destroy", map[string]any{"session_id": sid})
			} else {
				h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo last-words; " + end.how})
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			var ended map[string]any
			var out strings.Builder
			for {
				typ, p, err := conn.Read(ctx)
				if err != nil {
					require.Equal(t, websocket.StatusNormalClosure, websocket.CloseStatus(err), "closed normally: %v", err)
					break
				}
				if typ == websocket.MessageBinary {
					out.Write(p)
					continue
				}
				var m map[string]any
				require.NoError(t, json.Unmarshal(p, &m))
				if m["type"] == "ended" {
					ended = m
				}
			}
			require.NotNil(t, ended, "the viewer was told the session ended")
			assert.Contains(t, ended["message"], end.cause)
			if end.how != "destroy" {
				assert.Contains(t, out.String(), "last-words", "the last output came before the end")
			}
		})
	}
}
