package gateway

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
)

func policyHarness(t *testing.T, approvals *approval.Registry) *harness {
	t.Helper()
	p, err := policy.Parse([]byte("default: allow\nrules:\n  - match: {program: rm}\n    action: deny\n    reason: no deleting\n  - match: {program: [\"git push\"]}\n    action: ask\n    reason: leaves the machine\n"), "p.yaml")
	require.NoError(t, err)
	rt := runtime.New(runtime.Options{Policy: policy.NewEvaluator(p), Approvals: approvals})
	h := &harness{t: t, rt: rt, g: New(rt, Options{})}
	t.Cleanup(func() {
		h.g.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, rt.Shutdown(ctx))
	})
	return h
}

// TestGatewayPolicy: a denied call answers ok:false with COMMAND_DENIED
// (never POLICY_DENIED, the gateway's own); a call to approve waits for
// the decision within its time; a retry with the same toolCallId shares
// the one approval (a person is asked once); no decision within the
// call's time fails closed and withdraws the command.
func TestGatewayPolicy(t *testing.T) {
	approvals := approval.New(approval.Options{Timeout: time.Minute})
	h := policyHarness(t, approvals)

	_, m := h.post(newCall("rm -rf /tmp/nothing-here").String())
	res := result(t, m)
	assert.Equal(t, false, res["ok"])
	assert.Equal(t, "COMMAND_DENIED", errField(res, "code"))

	// Two POSTs of one toolCallId while it awaits approval: one approval.
	body := newCall("git push 2>/dev/null; echo pushed").with("ctx.toolCallId", "call-7").with("call.args.timeoutMs", 20000).String()
	var wg sync.WaitGroup
	recs := make([]*httptest.ResponseRecorder, 2)
	for i := range recs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recs[i] = h.serve(context.Background(), body)
		}()
	}
	require.Eventually(t, func() bool { return len(approvals.List()) > 0 }, 10*time.Second, 10*time.Millisecond)
	pending := 0
	for _, in := range approvals.List() {
		if in.Outcome == nil {
			pending++
		}
	}
	assert.Equal(t, 1, pending, "one call, one approval")
	ctx := protocol.WithCaller(context.Background(), protocol.Caller{Actor: "a person", Approver: true})
	_, err := h.rt.ExecApprove(ctx, protocol.ExecApproveParams{ApprovalID: approvals.List()[0].ID, Decision: "approve"})
	require.NoError(t, err)
	wg.Wait()
	for _, rec := range recs {
		_, a := h.check(rec)
		r := result(t, a)
		assert.Equal(t, true, r["ok"], "%v", a)
		assert.Equal(t, "pushed\n", r["output"])
	}

	// Nobody decides within the call's time: denied, and withdrawn.
	_, m = h.post(newCall("git push").with("call.args.timeoutMs", 1500).String())
	res = result(t, m)
	assert.Equal(t, false, res["ok"])
	assert.Equal(t, "COMMAND_DENIED", errField(res, "code"))
	assert.Contains(t, errField(res, "message"), "none came within")
	for _, in := range approvals.List() {
		assert.NotNil(t, in.Outcome, "no approval is left pending for a withdrawn command")
	}
	_, m = h.post(newCall("echo next").String())
	assert.Equal(t, "next\n", result(t, m)["output"], "the session is free again")
}

func errField(res map[string]any, k string) string {
	e, _ := res["error"].(map[string]any)
	s, _ := e[k].(string)
	return s
}
