package console

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIconWithoutLogin: the browser's icon requests answer without a
// login (no 401 in the console's log or the browser's).
func TestIconWithoutLogin(t *testing.T) {
	h := newHarness(t, false, "")
	resp, err := http.Get(h.srv.URL + "/console/favicon.svg")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "image/svg+xml", resp.Header.Get("Content-Type"))
	resp, err = http.Get(h.srv.URL + "/favicon.ico")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNoContent, resp.StatusCode)
	// Nothing else opens without the cookie.
	resp, err = http.Get(h.srv.URL + "/console/app.js")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
}

// TestBrowserTitlesAndRecordings: the session page is titled with the
// session's name (its id when it has none), and recordings are listed by
// session name and start time.
func TestBrowserTitlesAndRecordings(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec, err := NewRecorder(dir, 0, h.rt, zerolog.Nop())
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	defer func() { cancel(); <-done }()
	b := newBrowser(t)

	named := h.call(t, "session.create", map[string]any{"shell": "/bin/sh", "name": "agent-7"})["session_id"].(string)
	plain := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	h.call(t, "exec.run", map[string]any{"session_id": named, "command": "echo recorded"})

	openSessionPage(t, h, b, named)
	b.waitTrue(`document.title === "agent-7 · trl console" && document.getElementById("session-title").innerText.startsWith("Session agent-7")`, "the page titled with the name")
	openSessionPage(t, h, b, plain)
	b.waitTrue(`document.title === "`+plain+` · trl console"`, "the page titled with the id when there is no name")

	require.Eventually(t, func() bool {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.recs[named] != nil && rec.recs[plain] != nil
	}, 10*time.Second, 10*time.Millisecond)
	c := h.login(t)
	resp, err := c.Get(h.srv.URL + "/console/api/recordings")
	require.NoError(t, err)
	var list struct {
		Recordings []recordingInfo `json:"recordings"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
	resp.Body.Close()
	require.Len(t, list.Recordings, 2)
	byID := map[string]recordingInfo{}
	for _, r := range list.Recordings {
		byID[r.SessionID] = r
	}
	assert.Equal(t, "agent-7", byID[named].SessionName)
	assert.Empty(t, byID[plain].SessionName)
	started, err := time.Parse(time.RFC3339, byID[named].Started)
	require.NoError(t, err)
	assert.WithinDuration(t, time.Now(), started, time.Minute)

	b.navigate(h.con.LoginURL(h.srv.URL) + "&next=%23recordings")
	b.waitTrue(`document.querySelectorAll("#recordings .recording").length === 2`, "two recordings listed")
	var items []string
	require.NoError(t, b.eval(`[...document.querySelectorAll("#recordings .recording")].map((li) => li.innerText)`, &items))
	all := strings.Join(items, "\n")
	assert.Contains(t, all, "agent-7")
	assert.Contains(t, all, "started ")
	assert.Contains(t, all, plain)
}

// TestBrowserListsWaiting: the top of the sessions page lists, live, the
// commands waiting for input with their prompt and what they want; one
// that is answered leaves the list.
func TestBrowserListsWaiting(t *testing.T) {
	h := newHarness(t, false, "")
	b := newBrowser(t)
	deploy := h.call(t, "session.create", map[string]any{"shell": "/bin/sh", "name": "deployer"})["session_id"].(string)
	login := h.call(t, "session.create", map[string]any{"shell": "/bin/sh", "name": "logger-in"})["session_id"].(string)
	b.navigate(h.con.LoginURL(h.srv.URL))
	b.waitTrue(`document.getElementById("waiting-none") && !document.getElementById("waiting-none").hidden`, "nothing waiting yet")

	st := h.call(t, "exec.run", map[string]any{"session_id": deploy, "command": "printf 'Deploy to prod? [y/N] '; read answer; echo got $answer"})
	require.Equal(t, "waiting_input", st["state"])
	st2 := h.call(t, "exec.run", map[string]any{"session_id": login, "command": "printf 'Password: '; stty -echo; read pw; stty echo; echo done"})
	require.Equal(t, "waiting_input", st2["state"])
	b.waitTrue(`document.querySelectorAll("#waiting .waiting-cmd").length === 2`, "two commands listed as waiting")
	var items []string
	require.NoError(t, b.eval(`[...document.querySelectorAll("#waiting .waiting-cmd")].map((li) => li.innerText)`, &items))
	all := strings.Join(items, "\n")
	t.Logf("waiting: %q", items)
	assert.Contains(t, all, "deployer wants a line Deploy to prod? [y/N]")
	assert.Contains(t, all, "logger-in wants a password Password:")
	assert.Contains(t, all, "$ printf 'Deploy to prod? [y/N] '")

	h.call(t, "exec.input", map[string]any{"session_id": deploy, "input": "y\r", "until": []string{}})
	b.waitTrue(`document.querySelectorAll("#waiting .waiting-cmd").length === 1`, "the answered command leaves the list")
	h.call(t, "exec.input", map[string]any{"session_id": login, "input": "pw\r", "secret": true, "until": []string{}})
	b.waitTrue(`document.querySelectorAll("#waiting .waiting-cmd").length === 0 && !document.getElementById("waiting-none").hidden`, "nothing waiting")
}

// TestBrowserDoesNotAnswerQueries: a program's terminal query (device
// attributes) is answered once, by the session's screen model; the
// page's xterm.js, which could type into the session (--console-write),
// does not answer it a second time.
func TestBrowserDoesNotAnswerQueries(t *testing.T) {
	h := newHarness(t, true, "")
	b := newBrowser(t)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
	openSessionPage(t, h, b, sid)
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "timeout_s": 30, "command": `stty raw -echo; printf '\033[c'; sleep 2; x=$(dd bs=1024 count=1 iflag=nonblock 2>/dev/null); stty sane; printf '%s' "$x" | od -An -c | tr -d ' \n'; echo`})
	require.Equal(t, "exited", st["state"], "%v", st)
	out := st["stdout"].(string)
	assert.Equal(t, 1, strings.Count(out, "033["), "one answer to the query, not one from the server and one from the page: %q", out)

	// vi asks for focus reports and queries the terminal: the page sends
	// nothing nobody typed.
	if _, err := exec.LookPath("vi"); err != nil {
		return
	}
	require.NoError(t, b.eval(`window.sent = []; { const send = viewer.ws.send.bind(viewer.ws); viewer.ws.send = (d) => { window.sent.push(d); send(d); }; }`, nil))
	file := filepath.Join(t.TempDir(), "a.txt")
	require.NoError(t, os.WriteFile(file, []byte("quiet\n"), 0o644))
	st = h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "vi " + file})
	require.Equal(t, "waiting_input", st["state"])
	sameScreen(t, h, b, sid, "vi")
	var sent []string
	require.NoError(t, b.eval(`window.sent`, &sent))
	assert.Empty(t, sent, "the page sent input nobody typed")
	h.call(t, "exec.input", map[string]any{"session_id": sid, "input": []any{map[string]any{"key": "Escape"}, ":q!", map[string]any{"key": "Enter"}}, "until": []string{}})
}
