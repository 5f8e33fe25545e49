package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/session"
)

// filesURL is the /files URL of path in the default session.
func (d *httpDaemon) filesURL(path string, extra ...string) string {
	q := url.Values{"path": {path}}
	for i := 0; i+1 < len(extra); i += 2 {
		q.Set(extra[i], extra[i+1])
	}
	return d.url + "/files?" + q.Encode()
}

func (d *httpDaemon) do(t *testing.T, method, u string, body io.Reader, header map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
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

// TestHTTPFilesEndToEnd: PUT and GET /files, ranges, the token and the
// Host check, and the errors' statuses.
func TestHTTPFilesEndToEnd(t *testing.T) {
	d := startHTTPDaemon(t)
	dir := t.TempDir()
	p := filepath.Join(dir, "new/dir/f.bin")
	content := make([]byte, 300000)
	for i := range content {
		content[i] = byte(i * 7)
	}
	resp := d.do(t, http.MethodPut, d.filesURL(p, "mode", "0600"), bytes.NewReader(content), bearer())
	m := bodyJSON(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", m)
	sum := sha256.Sum256(content)
	assert.Equal(t, hex.EncodeToString(sum[:]), m["data"].(map[string]any)["sha256"])
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())

	resp = d.do(t, http.MethodGet, d.filesURL(p), nil, bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, content, got)
	resp = d.do(t, http.MethodGet, d.filesURL(p), nil, bearer("Range", "bytes=1000-1999"))
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	got, _ = io.ReadAll(resp.Body)
	assert.Equal(t, content[1000:2000], got)
	resp = d.do(t, http.MethodGet, d.filesURL(p), nil, bearer("Range", "bytes=0-9,299990-"))
	require.Equal(t, http.StatusPartialContent, resp.StatusCode)
	got, _ = io.ReadAll(resp.Body)
	assert.Contains(t, resp.Header.Get("Content-Type"), "multipart/byteranges")
	assert.True(t, bytes.Contains(got, content[:10]) && bytes.Contains(got, content[299990:]), "both ranges arrive")
	resp = d.do(t, http.MethodHead, d.filesURL(p), nil, bearer())
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "300000", resp.Header.Get("Content-Length"))

	resp = d.do(t, http.MethodPut, d.filesURL(filepath.Join(dir, "no/f"), "create_dirs", "false"), bytes.NewReader(nil), bearer())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "FILE_NOT_FOUND", errorCode(bodyJSON(t, resp)))
	resp = d.do(t, http.MethodGet, d.filesURL(dir), nil, bearer())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Equal(t, "IS_A_DIRECTORY", errorCode(bodyJSON(t, resp)))
	resp = d.do(t, http.MethodGet, d.filesURL(p, "session", "nope"), nil, bearer())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.Equal(t, "SESSION_NOT_FOUND", errorCode(bodyJSON(t, resp)))

	// Behind the token and the Host check.
	resp = d.do(t, http.MethodGet, d.filesURL(p), nil, nil)
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp = d.do(t, http.MethodPut, d.filesURL(p), bytes.NewReader([]byte("x")), map[string]string{"Authorization": "Bearer wrong"})
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	resp = d.do(t, http.MethodGet, d.filesURL(p), nil, bearer("Host", "evil.example:80"))
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	b, _ := os.ReadFile(p)
	assert.Equal(t, content, b, "refused requests changed nothing")

	// A mistyped query parameter is named (it was "path is required").
	resp = d.do(t, http.MethodGet, d.url+"/files?pth="+url.QueryEscape(p), nil, bearer())
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	body, _ := io.ReadAll(resp.Body)
	assert.Contains(t, string(body), `unknown query parameter \"pth\"`)
	resp = d.do(t, http.MethodGet, d.filesURL(p)+"&_=1700000000", nil, bearer())
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a cache-buster is let by")
}

// TestHTTPFilesOfProcAndSys: GET /files of a /proc file (which refuses
// to seek for its size) and of a /sys file (which says 4096 bytes
// whatever it holds) sends the file as read, whole; fs.read of them
// answers their content and the size it found.
func TestHTTPFilesOfProcAndSys(t *testing.T) {
	d := startHTTPDaemon(t)
	resp := d.do(t, http.MethodGet, d.filesURL("/proc/version"), nil, bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	want, err := os.ReadFile("/proc/version")
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got))

	// A /sys file says 4096 bytes; a tracefs one says 0 and holds more.
	for _, p := range []string{"/sys/kernel/mm/transparent_hugepage/enabled", "/sys/kernel/tracing/available_tracers"} {
		if want, err = os.ReadFile(p); err != nil || len(want) == 0 {
			t.Logf("%s: not here or empty, not tried", p)
			continue
		}
		resp = d.do(t, http.MethodGet, d.filesURL(p), nil, bearer())
		require.Equal(t, http.StatusOK, resp.StatusCode, p)
		got, err = io.ReadAll(resp.Body)
		require.NoError(t, err, "%s: the body is whole (a length of 4096 left it short)", p)
		assert.Equal(t, string(want), string(got), p)
	}

	resp = d.post(t, "/rpc", `{"id":1,"method":"fs.read","params":{"path":"/proc/version"}}`, bearer())
	data := bodyJSON(t, resp)["data"].(map[string]any)
	version := mustRead(t, "/proc/version")
	assert.Equal(t, string(version), data["data"])
	assert.EqualValues(t, len(version), data["size"])
	assert.Equal(t, true, data["complete"])
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}

// TestHTTPFilesBigAndLean: a 256 MiB upload and download are byte-exact
// and the daemon's peak RSS grows by less than 48 MiB: the file streams
// between socket and disk, never held in memory.
func TestHTTPFilesBigAndLean(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 512 MiB through the daemon")
	}
	bin, err := plainBin()
	require.NoError(t, err)
	d := startHTTPDaemonBin(t, bin)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	const size = 256 << 20
	f, err := os.Create(src)
	require.NoError(t, err)
	h := sha256.New()
	rng := rand.NewChaCha8([32]byte{1, 2, 3})
	_, err = io.Copy(io.MultiWriter(f, h), io.LimitReader(rng, size))
	require.NoError(t, err)
	require.NoError(t, f.Close())
	want := hex.EncodeToString(h.Sum(nil))

	// A small round trip first, so the baseline includes the code paths.
	resp := d.do(t, http.MethodPut, d.filesURL(filepath.Join(dir, "warm")), bytes.NewReader([]byte("warm")), bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = d.do(t, http.MethodGet, d.filesURL(filepath.Join(dir, "warm")), nil, bearer())
	io.Copy(io.Discard, resp.Body)
	pid := d.cmd.Process.Pid
	base := peakRSS(t, pid)

	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	dst := filepath.Join(dir, "uploaded")
	req, err := http.NewRequest(http.MethodPut, d.filesURL(dst), in)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+e2eToken)
	req.ContentLength = size
	resp, err = d.client.Do(req)
	require.NoError(t, err)
	m := bodyJSON(t, resp)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", m)
	assert.Equal(t, want, m["data"].(map[string]any)["sha256"])
	assert.EqualValues(t, size, m["data"].(map[string]any)["size"])

	resp = d.do(t, http.MethodGet, d.filesURL(dst), nil, bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	h.Reset()
	n, err := io.Copy(h, resp.Body)
	require.NoError(t, err)
	assert.EqualValues(t, size, n)
	assert.Equal(t, want, hex.EncodeToString(h.Sum(nil)), "the download is byte-exact")

	grew := peakRSS(t, pid) - base
	t.Logf("peak RSS grew %.1f MiB moving 2×256 MiB", float64(grew)/(1<<20))
	assert.Less(t, grew, int64(48<<20), fmt.Sprintf("peak RSS grew %d bytes", grew))
}

// TestHTTPFilesIsolated: under --isolate, PUT and GET /files run as the
// session's uid, like fs.*.
func TestHTTPFilesIsolated(t *testing.T) {
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := 2007000000 + os.Getpid()%50000*16
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-e2e-httpfshomes-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	d := startHTTPDaemon(t, "--isolate", "--uid-range", fmt.Sprintf("%d-%d", first, first+15), "--isolate-homes", homes)
	c := dial(t, d.socket)
	a := data(t, c.call("session.create", map[string]any{}))["session_id"].(string)
	b := data(t, c.call("session.create", map[string]any{}))["session_id"].(string)
	resp := d.do(t, http.MethodPut, d.filesURL("private", "session", a, "mode", "0600"), bytes.NewReader([]byte("A's")), bearer())
	m := bodyJSON(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", m)
	path := m["data"].(map[string]any)["path"].(string)
	st, err := os.Stat(path)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, int(st.Sys().(*syscall.Stat_t).Uid), first, "the upload is the session's")
	// b does not see a's home (bound into a's namespace only); in a
	// directory both see, a's mode-600 file is still not b's.
	resp = d.do(t, http.MethodGet, d.filesURL(path, "session", b), nil, bearer())
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	resp.Body.Close()
	resp = d.do(t, http.MethodGet, d.filesURL(path, "session", a), nil, bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, _ := io.ReadAll(resp.Body)
	assert.Equal(t, "A's", string(got))
	path = filepath.Join(sharedDir(t), "private")
	resp = d.do(t, http.MethodPut, d.filesURL(path, "session", a, "mode", "0600"), bytes.NewReader([]byte("A's")), bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode, "%v", bodyJSON(t, resp))
	resp = d.do(t, http.MethodGet, d.filesURL(path, "session", b), nil, bearer())
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	assert.Equal(t, "PERMISSION_DENIED", errorCode(bodyJSON(t, resp)))
	resp = d.do(t, http.MethodPut, d.filesURL(path, "session", b), bytes.NewReader([]byte("B's")), bearer())
	assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	resp = d.do(t, http.MethodGet, d.filesURL(path, "session", a), nil, bearer())
	require.Equal(t, http.StatusOK, resp.StatusCode)
	got, _ = io.ReadAll(resp.Body)
	assert.Equal(t, "A's", string(got))
}
