package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecretsMaskedEverywhere: session.create's secrets and exec.input's
// secret input are masked in results, exec.read, stream notifications,
// the screen, exec.list, the audit log and the daemon's logs (issue 23
// §2), including a secret a readline program echoes for itself.
func TestSecretsMaskedEverywhere(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	if exec.Command("python3", "-c", "import readline").Run() != nil {
		t.Skip("python3 has no readline module")
	}
	const key, typed = "sk-e2e-key-4242", "sk-e2e-typed-777"
	audit := filepath.Join(t.TempDir(), "audit.log")
	d := startDaemon(t, "--audit-log", audit)
	c := dial(t, d.socket)
	s := data(t, c.call("session.create", map[string]any{"secrets": map[string]string{"API_KEY": key}}))["session_id"]

	r := data(t, c.call("exec.run", map[string]any{"session_id": s, "command": `echo "key=$API_KEY"; echo sk-e2e-key-4242 >&2 # the audit masks it too`}))
	assert.Equal(t, "key=***\n", r["stdout"])
	assert.Equal(t, "***\n", r["stderr"])

	st := data(t, c.call("exec.stream", map[string]any{"session_id": s, "command": `printf 'sk-e2e-'; sleep 0.2; printf 'key-4242\n'`}))
	var streamed string
	for n := range c.notes {
		p := n["params"].(map[string]any)
		if n["method"] == "exec.exit" && p["stream_id"] == st["stream_id"] {
			break
		}
		if d, ok := p["data"].(string); ok {
			streamed += d
		}
	}
	assert.Equal(t, "***\n", streamed)

	r = data(t, c.call("exec.run", map[string]any{"session_id": s, "yield_ms": 10000,
		"command": `python3 -c "import readline; v = input('API key: '); print('len', len(v)); print(v)"`}))
	require.Equal(t, "waiting_input", r["state"], "%v", r)
	id := r["exec_id"]
	in := data(t, c.call("exec.input", map[string]any{"exec_id": id, "input": typed + "\r", "secret": true, "until": []string{}}))
	r = data(t, c.call("exec.wait", map[string]any{"exec_id": id, "timeout_ms": 20000, "until": []string{}}))
	assert.Equal(t, "exited", r["state"])
	out := in["stdout"].(string) + r["stdout"].(string)
	assert.Contains(t, out, "len 16\n***\n")
	rd := data(t, c.call("exec.read", map[string]any{"exec_id": id}))
	scr := data(t, c.call("session.screen", map[string]any{"session_id": s}))
	list := data(t, c.call("exec.list", map[string]any{"session_id": s}))
	time.Sleep(100 * time.Millisecond) // the logs' last lines
	auditLog, err := os.ReadFile(audit)
	require.NoError(t, err)
	everything := map[string]any{"input's result": in, "result": r, "exec.read": rd, "screen": scr, "exec.list": list,
		"audit log": string(auditLog), "daemon log": d.stderr.String()}
	for what, v := range everything {
		b, _ := json.Marshal(v)
		for _, secret := range []string{key, typed} {
			assert.NotContains(t, string(b), secret, what)
		}
	}
	assert.True(t, strings.Contains(string(auditLog), `"secret":true`), "the audit says a secret was typed")
}
