package console

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// castEvents reads a recording's output and input events.
func castEvents(t *testing.T, path string) (out, in string) {
	t.Helper()
	out, in, _ = castStreams(t, path)
	return out, in
}

// castStreams reads a recording's output ("o"), input ("i") and marker
// ("m") events.
func castStreams(t *testing.T, path string) (out, in string, marks []string) {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan(), "no header")
	var o, i strings.Builder
	for sc.Scan() {
		var ev []any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		text, ok := ev[2].(string)
		require.True(t, ok, "%v", ev)
		switch ev[1] {
		case "o":
			o.WriteString(text)
		case "i":
			i.WriteString(text)
		case "m":
			marks = append(marks, text)
		}
	}
	return o.String(), i.String(), marks
}

// TestConsolePasswordInputIsSecret is issue 23 §2's third reproduction: a
// person typing at a no-echo prompt (read -s) in the console was recorded
// in clear in the .cast "i" events. What is typed at a password prompt is
// a secret: the recording shows stars, and the program printing it back
// shows it masked, in the recording and in the command's result.
func TestConsolePasswordInputIsSecret(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, true, dir)
	rec := startRecorder(t, h, dir)

	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/bash"})["session_id"].(string)
	rec.waitFor(t, sid)
	c := h.login(t)
	conn, _, err := dialViewer(t, h, c, sid, h.srv.URL)
	require.NoError(t, err)
	defer conn.CloseNow()

	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": `read -r -s -p 'Password: ' pw; echo; echo "you typed $pw"`})
	require.Equal(t, "waiting_input", st["state"])
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	for _, ch := range "c0nsole-pw\r" { // a person types key by key
		frame, _ := json.Marshal(control{Type: "input", Data: string(ch)})
		require.NoError(t, conn.Write(wctx, websocket.MessageText, frame))
	}
	st = h.call(t, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000, "until": []string{}})
	assert.Equal(t, "exited", st["state"])
	assert.Contains(t, st["stdout"], "you typed ***")
	assert.NotContains(t, st["stdout"], "c0nsole")
	// The console hands each key to the recording just after it reaches
	// the terminal, so the last may come after the command's end.
	typed := strings.Repeat("*", len("c0nsole-pw\r"))
	require.Eventually(t, func() bool {
		b, _ := os.ReadFile(filepath.Join(dir, sid+".cast"))
		return strings.Count(string(b), `,"i","*"]`) == len(typed)
	}, 10*time.Second, 20*time.Millisecond, "every key is recorded")
	rec.stop()

	out, in := castEvents(t, filepath.Join(dir, sid+".cast"))
	assert.NotContains(t, in, "c0nsole", "the .cast input events hold the password")
	assert.Equal(t, typed, in)
	assert.NotContains(t, out, "c0nsole")
	assert.Contains(t, out, "you typed ***")
}
