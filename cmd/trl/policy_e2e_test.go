package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const approverToken = "approver-token-9d2c1b7e5a0f4c38b6e1"

const e2ePolicy = `
default: allow
rules:
  - match: {program: rm}
    action: deny
    reason: no deleting
  - match: {program: ["git push"]}
    action: ask
    reason: leaves the machine
`

// TestPolicyEndToEnd runs the daemon with --policy and an approver token:
// a denied command is COMMAND_DENIED over HTTP; an asked one awaits
// approval, which the agent's token cannot give and the approver's token
// can (and that token can do nothing else); SIGHUP with a broken file
// keeps the policy in force, with a good one replaces it.
func TestPolicyEndToEnd(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(e2ePolicy), 0o600))
	mark := filepath.Join(dir, "marker")
	require.NoError(t, os.WriteFile(mark, []byte("x"), 0o600))
	t.Setenv("TRL_APPROVER_TOKEN", approverToken)
	d := startHTTPDaemon(t, "--policy", file)
	approver := map[string]string{"Authorization": "Bearer " + approverToken}
	rpc := func(params string, header map[string]string) map[string]any {
		t.Helper()
		return bodyJSON(t, d.post(t, "/rpc", params, header))
	}

	denied := rpc(`{"id":1,"method":"exec.run","params":{"command":"rm -f `+mark+`"}}`, bearer())
	assert.Equal(t, "COMMAND_DENIED", errorCode(denied))
	_, err := os.Stat(mark)
	require.NoError(t, err, "nothing ran")

	asked := rpc(`{"id":2,"method":"exec.run","params":{"command":"git push 2>/dev/null; echo approved-ran"}}`, bearer())
	data, _ := asked["data"].(map[string]any)
	require.Equal(t, "awaiting_approval", data["state"], "%v", asked)
	ap, _ := data["approval"].(map[string]any)
	id, _ := ap["approval_id"].(string)
	require.NotEmpty(t, id)
	execID, _ := data["exec_id"].(string)

	approve := `{"id":3,"method":"exec.approve","params":{"approval_id":"` + id + `","decision":"approve","reason":"ok"}}`
	assert.Equal(t, "AUTH_FAILED", errorCode(rpc(approve, bearer())), "the agent's token cannot approve")
	resp := d.post(t, "/rpc", `{"id":4,"method":"exec.run","params":{"command":"echo sneaky"}}`, approver)
	assert.Equal(t, 403, resp.StatusCode, "the approver's token cannot run commands")
	assert.Equal(t, "AUTH_FAILED", errorCode(bodyJSON(t, resp)))

	ok := rpc(approve, approver)
	require.Equal(t, true, ok["ok"], "%v", ok)
	end := rpc(`{"id":5,"method":"exec.wait","params":{"exec_id":"`+execID+`","until":[]}}`, bearer())
	data, _ = end["data"].(map[string]any)
	assert.Equal(t, "exited", data["state"])
	assert.Equal(t, "approved-ran\n", data["stdout"])

	// A broken policy is refused on SIGHUP; the one in force stays.
	require.NoError(t, os.WriteFile(file, []byte("rules:\n  - match: {program: rm}\n    acton: allow\n"), 0o600))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return containsAll(d.stderr.String(), "policy reload refused", "acton") }, 10*time.Second, 20*time.Millisecond, "%s", d.stderr)
	assert.Equal(t, "COMMAND_DENIED", errorCode(rpc(`{"id":6,"method":"exec.run","params":{"command":"rm -f `+mark+`"}}`, bearer())))
	// A good one replaces it.
	require.NoError(t, os.WriteFile(file, []byte("default: allow\n"), 0o600))
	require.NoError(t, d.cmd.Process.Signal(syscall.SIGHUP))
	require.Eventually(t, func() bool { return containsAll(d.stderr.String(), "policy reloaded") }, 10*time.Second, 20*time.Millisecond, "%s", d.stderr)
	ran := rpc(`{"id":7,"method":"exec.run","params":{"command":"rm -f `+mark+`"}}`, bearer())
	require.Equal(t, true, ran["ok"], "%v", ran)
	_, err = os.Stat(mark)
	assert.True(t, os.IsNotExist(err), "allowed by the reloaded policy, rm ran")
}

// TestPolicyRefusesABadFileAtStart: the daemon does not start on a policy
// it cannot load, and says which line is wrong.
func TestPolicyRefusesABadFileAtStart(t *testing.T) {
	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte("default: allow\nrules:\n  - match: {program: rm}\n    action: maybe\n"), 0o600))
	out, err := exec.Command(trlBin, "serve", "--socket", filepath.Join(t.TempDir(), "s.sock"), "--policy", file).CombinedOutput()
	require.Error(t, err, "%s", out)
	assert.Contains(t, string(out), "line 4")
	assert.Contains(t, string(out), "maybe")
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
