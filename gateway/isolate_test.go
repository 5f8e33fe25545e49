package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/session"
)

// TestIsolationPerTenantWorkspace: under isolation, the sessions of one
// (tenant, workspace) share a uid and other pairs get others (SPEC §13).
func TestIsolationPerTenantWorkspace(t *testing.T) {
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := uint32(2003000000 + os.Getpid()%50000*16)
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-gw-homes-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	rt := runtime.New(runtime.Options{Sessions: session.Options{Isolation: &session.Isolation{FirstUID: first, LastUID: first + 15, HomeRoot: homes}}})
	h := &harness{t: t, rt: rt, g: New(rt, Options{})}
	t.Cleanup(func() {
		h.g.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	uid := func(tenant, workspace, sessionID string) string {
		res := h.run(newCall("id -u").with("target.tenantId", tenant).with("target.workspaceId", workspace).with("ctx.sessionId", sessionID))
		require.Equal(t, true, res["ok"], "%v", res)
		return res["output"].(string)
	}
	a1 := uid("t1", "w1", "s1")
	a2 := uid("t1", "w1", "s2")
	b := uid("t2", "w1", "s1")
	c := uid("t1", "w2", "s1")
	assert.Equal(t, a1, a2, "one tenant's workspace has one uid")
	assert.NotEqual(t, a1, b)
	assert.NotEqual(t, a1, c)
	assert.NotEqual(t, "0\n", a1)
}
