package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromium finds Debian's headless browser (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium is not installed: the console's browser test needs it (.ci/run installs Debian's chromium)")
	return ""
}

// browse opens url in a fresh headless Chromium, lets the page run for a
// few seconds of virtual time, and returns the DOM; with shot it also
// saves a screenshot there.
func browse(t *testing.T, bin, url, shot string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=6000", "--window-size=1100,700"}
	if shot != "" {
		args = append(args, "--screenshot="+shot)
	} else {
		args = append(args, "--dump-dom")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	cmd.Stderr = nil
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", out)
	return string(out)
}

var loginURLRE = regexp.MustCompile(`"url":"(http://[^"]+/console/login\?token=[0-9a-f]+)"`)

// TestConsoleInABrowser logs into the console in a real headless Chromium
// with the one-time URL, sees the session list, and opens a session whose
// live terminal shows a command's output and vi's screen.
func TestConsoleInABrowser(t *testing.T) {
	t.Parallel() // its own daemon and browser
	bin := chromium(t)
	rec := t.TempDir()
	d := startHTTPDaemon(t, "--console", "--record", rec)
	c := dial(t, d.socket)
	s := data(t, c.call("session.create", map[string]any{"name": "agent-1", "env": map[string]string{"TERM": "xterm-256color"}}))
	sid := s["session_id"].(string)
	data(t, c.call("exec.run", map[string]any{"session_id": sid, "command": `printf '\033[1;32mbuild ok\033[0m\n'; echo marker-from-agent`}))

	login := func(next string) string {
		resp := d.post(t, "/console/api/login-url", "", bearer())
		var out map[string]string
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
		require.NotEmpty(t, out["url"])
		return out["url"] + next
	}
	// The serve log carries a login URL too.
	require.Regexp(t, loginURLRE, d.stderr.String())
	// The browser's own icon request is answered without a login.
	icon := d.request(t, context.Background(), http.MethodGet, "/favicon.ico", "", nil)
	icon.Body.Close()
	assert.Equal(t, http.StatusNoContent, icon.StatusCode)

	dom := browse(t, bin, login(""), "")
	assert.True(t, strings.Contains(dom, `data-session="`+sid+`"`), "the session list shows the session")
	assert.True(t, strings.Contains(dom, "agent-1"))

	// The page's WebSocket runs in real time beside Chromium's virtual
	// clock: a loaded machine may need another look.
	seen := func(next string, want ...string) string {
		var dom string
		for range 4 {
			dom = browse(t, bin, login(next), "")
			ok := true
			for _, w := range want {
				ok = ok && strings.Contains(dom, w)
			}
			if ok {
				break
			}
		}
		return dom
	}
	dom = seen("&next=%23session/"+sid, "marker-from-agent")
	assert.True(t, strings.Contains(dom, "marker-from-agent"), "the live terminal shows the command's output")
	assert.True(t, strings.Contains(dom, "Read-only"), "the view says it is read-only")

	// A replayed login URL shows no console.
	u := login("")
	browse(t, bin, u, "")
	dom = browse(t, bin, u, "")
	assert.False(t, strings.Contains(dom, "agent-1"))
	assert.True(t, strings.Contains(dom, "already used"), "a replayed login URL is refused")

	// The documentation's screenshots come from console's
	// TestConsoleScreenshots; these only show the page draws.
	shots := t.TempDir()
	browse(t, bin, login(""), filepath.Join(shots, "console-sessions.png"))
	browse(t, bin, login("&next=%23session/"+sid), filepath.Join(shots, "console-terminal.png"))
	if _, err := exec.LookPath("vi"); err == nil {
		file := filepath.Join(t.TempDir(), "notes.txt")
		require.NoError(t, os.WriteFile(file, []byte("agents-edit-files-in-vi\n"), 0o644))
		st := data(t, c.call("exec.run", map[string]any{"session_id": sid, "command": "vi " + file}))
		require.Equal(t, "waiting_input", st["state"])
		dom = seen("&next=%23session/"+sid, "gents-edit-files-in-vi", "1L, 24B")
		browse(t, bin, login("&next=%23session/"+sid), filepath.Join(shots, "console-vi.png"))
		assert.True(t, strings.Contains(dom, "gents-edit-files-in-vi") && strings.Contains(dom, "1L, 24B"), "vi's screen is painted from the session's screen")
		data(t, c.call("exec.input", map[string]any{"session_id": sid, "input": []any{map[string]any{"key": "Escape"}, ":q!", map[string]any{"key": "Enter"}}}))
	}
	for _, f := range []string{"console-sessions.png", "console-terminal.png"} {
		info, err := os.Stat(filepath.Join(shots, f))
		require.NoError(t, err)
		assert.Greater(t, info.Size(), int64(5000), f)
	}
	// The recording holds what the terminal showed.
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(rec, sid+".cast"))
		return strings.Contains(string(b), "marker-from-agent")
	}, 10*time.Second, 100*time.Millisecond)
}

// TestConsoleCommandWithNoDaemonSaysHow: `trl console` with no daemon at
// the address says how to start one and how to name its address (it
// printed only "connection refused"), without telling the user to fix
// an address that may be right.
func TestConsoleCommandWithNoDaemonSaysHow(t *testing.T) {
	defer func(w time.Duration) { consoleWait = w }(consoleWait)
	consoleWait = 300 * time.Millisecond
	addr := freeAddr(t)
	var stdout, stderr strings.Builder
	t.Setenv("TRL_AUTH_TOKEN", "x")
	start := time.Now()
	code := consoleCmd([]string{"--http", addr}, &stdout, &stderr)
	assert.Equal(t, 1, code)
	assert.GreaterOrEqual(t, time.Since(start), consoleWait, "it asked again for consoleWait")
	assert.Contains(t, stderr.String(), "no daemon answered at http://"+addr+" within 300ms")
	assert.Contains(t, stderr.String(), "trl serve --http ADDR --console")
	assert.NotContains(t, stderr.String(), "pass the address")
}

// freeAddr is a loopback address nothing listens on.
func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestConsoleWaitsForTheDaemon: `trl serve ... & trl console`, as the
// README has it, gets its URL from a daemon that listens a moment after
// trl console first asks (it failed every time: connection refused).
func TestConsoleWaitsForTheDaemon(t *testing.T) {
	addr := freeAddr(t)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console/api/login-url" && r.Header.Get("Authorization") == "Bearer x" {
			w.Write([]byte(`{"url":"http://` + addr + `/console/login?token=abc"}`))
			return
		}
		http.Error(w, "no", http.StatusNotFound)
	})}
	served := make(chan error, 1)
	timer := time.AfterFunc(time.Second, func() {
		l, err := net.Listen("tcp", addr)
		if err != nil {
			served <- err
			return
		}
		served <- srv.Serve(l)
	})
	defer func() {
		timer.Stop()
		srv.Close()
	}()
	var stdout, stderr strings.Builder
	t.Setenv("TRL_AUTH_TOKEN", "x")
	code := consoleCmd([]string{"--http", addr}, &stdout, &stderr)
	require.Equal(t, 0, code, "%s", stderr.String())
	assert.Equal(t, "http://"+addr+"/console/login?token=abc\n", stdout.String())
}

// TestConsoleWrongTokenSaysSo: a token the daemon refuses is said to be
// the wrong one (a 401 asked whether the daemon served --console).
func TestConsoleWrongTokenSaysSo(t *testing.T) {
	t.Setenv("TRL_APPROVER_TOKEN", approverToken)
	for _, args := range [][]string{{"--console"}, nil} {
		d := startHTTPDaemon(t, args...)
		var stdout, stderr strings.Builder
		t.Setenv("TRL_AUTH_TOKEN", "wrong")
		code := consoleCmd([]string{"--http", d.url}, &stdout, &stderr)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr.String(), "TRL_AUTH_TOKEN here does not match the TRL_AUTH_TOKEN the daemon was started with", "serve %v", args)
		assert.NotContains(t, stderr.String(), "is the daemon serving")

		stderr.Reset()
		t.Setenv("TRL_APPROVER_TOKEN", "wrong")
		code = consoleCmd([]string{"--http", d.url, "--approver"}, &stdout, &stderr)
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr.String(), "TRL_APPROVER_TOKEN here does not match", "serve %v", args)
		t.Setenv("TRL_APPROVER_TOKEN", approverToken)
	}
}
