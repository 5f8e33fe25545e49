package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/session"
)

// TestIsolateUIDReuseAcrossRestart is issue 23 §1's reproduction against
// the daemon: with a 4-uid --uid-range, session A writes mode-0600 files
// to /tmp, /var/tmp and /dev/shm and makes a SysV segment (ipcmk -M
// 4096); the daemon is restarted and its first session, which gets A's
// uid again, finds nothing of it.
func TestIsolateUIDReuseAcrossRestart(t *testing.T) {
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := 2006000000 + os.Getpid()%50000*16
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-e2e-reuse-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	args := []string{"--isolate", "--uid-range", fmt.Sprintf("%d-%d", first, first+3), "--isolate-homes", homes}
	name := "a-notes-" + session.NewID("", 6)
	leave := "umask 077; for d in /tmp /var/tmp /dev/shm; do echo sk-123 > $d/" + name + "; done; id -u; ipcmk -M 4096 | sed -n 's/^Shared memory id: //p'"

	d := startDaemon(t, args...)
	c := dial(t, d.socket)
	a := data(t, c.call("session.create", map[string]any{}))["session_id"]
	r := data(t, c.call("exec.run", map[string]any{"session_id": a, "command": leave}))
	f := strings.Fields(r["stdout"].(string))
	require.Len(t, f, 2, "A's output: %v", r)
	uid, shmid := f[0], f[1]
	require.Equal(t, fmt.Sprint(first), uid)
	require.Regexp(t, regexp.MustCompile(`^\d+$`), shmid)
	d.stop(t)

	d = startDaemon(t, args...)
	c = dial(t, d.socket)
	b := data(t, c.call("session.create", map[string]any{}))["session_id"]
	find := "id -u; cat /tmp/" + name + " /var/tmp/" + name + " /dev/shm/" + name + " 2>/dev/null; " +
		"ipcs -m -i " + shmid + " 2>/dev/null | grep -q 'shmid=" + shmid + "$' && echo SHM FOUND; echo end"
	r = data(t, c.call("exec.run", map[string]any{"session_id": b, "command": find}))
	assert.Equal(t, uid+"\nend\n", r["stdout"], "the restarted daemon's session on uid %s found the last tenant's traces", uid)

	// And within one daemon: the uids go round the 4-uid range and come
	// back to A's.
	data(t, c.call("session.destroy", map[string]any{"session_id": b}))
	a = data(t, c.call("session.create", map[string]any{}))["session_id"]
	r = data(t, c.call("exec.run", map[string]any{"session_id": a, "command": leave}))
	f = strings.Fields(r["stdout"].(string))
	require.Len(t, f, 2, "A's output: %v", r)
	uid = f[0]
	data(t, c.call("session.destroy", map[string]any{"session_id": a}))
	for i := 0; i < 4; i++ {
		s := data(t, c.call("session.create", map[string]any{}))["session_id"]
		r = data(t, c.call("exec.run", map[string]any{"session_id": s, "command": find}))
		out := r["stdout"].(string)
		if strings.HasPrefix(out, uid+"\n") {
			assert.Equal(t, uid+"\nend\n", out, "the next session on uid %s found the last tenant's traces", uid)
			return
		}
		data(t, c.call("session.destroy", map[string]any{"session_id": s}))
	}
	t.Fatalf("uid %s was not handed out again", uid)
}
