package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/runtime"
)

const testApproverToken = "approver-token-for-the-console-test"

// approvalHarness is a console on a runtime with a policy that asks a
// person before `git push`, approvals enabled.
func approvalHarness(t *testing.T) *harness {
	t.Helper()
	p, err := policy.Parse([]byte("default: allow\nrules:\n  - match: {program: [\"git push\"]}\n    action: ask\n    reason: leaves the machine\n    dangerous: true\n"), "p.yaml")
	require.NoError(t, err)
	rt := runtime.New(runtime.Options{Logger: zerolog.Nop(), Policy: policy.NewEvaluator(p), Approvals: approval.New(approval.Options{Timeout: time.Minute})})
	con := New(Options{API: rt, Sessions: rt, Approve: true, ApproverToken: testApproverToken, BearerToken: token, Logger: zerolog.Nop()})
	srv := httptest.NewServer(con)
	t.Cleanup(func() {
		srv.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	})
	return &harness{rt: rt, con: con, srv: srv}
}

// TestBrowserApprovesAndDenies: a person logged in with the operator's URL
// sees the commands the policy holds, with the rule's reason, and approves
// one and denies another with a reason, in headless Chromium; the
// approved command runs, the denied one never does.
func TestBrowserApprovesAndDenies(t *testing.T) {
	h := approvalHarness(t)
	b := newBrowser(t)
	one := h.call(t, "session.create", map[string]any{"shell": "/bin/sh", "name": "pusher"})["session_id"].(string)
	two := h.call(t, "session.create", map[string]any{"shell": "/bin/sh", "name": "other"})["session_id"].(string)
	a := h.call(t, "exec.run", map[string]any{"session_id": one, "command": "git push 2>/dev/null; echo pushed-one"})
	require.Equal(t, "awaiting_approval", a["state"])
	d := h.call(t, "exec.run", map[string]any{"session_id": two, "command": "git push 2>/dev/null; echo pushed-two"})
	require.Equal(t, "awaiting_approval", d["state"])

	b.navigate(h.con.LoginURL(h.srv.URL)) // the operator's URL: an approver's
	b.waitTrue(`document.querySelectorAll("#approvals .approval").length === 2 && !document.getElementById("approvals-box").hidden`, "two commands await approval")
	var items []string
	require.NoError(t, b.eval(`[...document.querySelectorAll("#approvals .approval")].map((li) => li.innerText)`, &items))
	all := strings.Join(items, "\n")
	assert.Contains(t, all, "pusher")
	assert.Contains(t, all, "dangerous · leaves the machine")
	assert.Contains(t, all, "$ git push 2>/dev/null; echo pushed-one")

	click := func(sessionName, button, reason string) {
		t.Helper()
		require.NoError(t, b.eval(`(() => { const li = [...document.querySelectorAll("#approvals .approval")].find((li) => li.innerText.includes(`+jsString(sessionName)+`));
			li.querySelector("input").value = `+jsString(reason)+`; li.querySelector("button.`+button+`").click(); return true; })()`, nil))
	}
	click("pusher", "approve", "fine by me")
	click("other", "deny", "not this one")
	approved := h.call(t, "exec.wait", map[string]any{"exec_id": a["exec_id"], "until": []string{}})
	assert.Equal(t, "pushed-one\n", approved["stdout"])
	ap, _ := approved["approval"].(map[string]any)
	assert.Equal(t, "fine by me", ap["decision_reason"])
	assert.Contains(t, ap["approver"], "console")
	denied := h.call(t, "exec.wait", map[string]any{"exec_id": d["exec_id"], "until": []string{}})
	assert.Equal(t, "denied", denied["reason"])
	assert.Equal(t, "", denied["stdout"], "the denied command never ran")
	b.waitTrue(`document.getElementById("approvals-box").hidden`, "nothing awaits approval any more")
}

// TestAgentLoginCannotApprove: a login URL asked for with the agent's
// token watches but cannot approve; one asked for with the approver's
// token can; the agent's bearer token itself cannot.
func TestAgentLoginCannotApprove(t *testing.T) {
	h := approvalHarness(t)
	st := h.call(t, "exec.run", map[string]any{"command": "git push"})
	require.Equal(t, "awaiting_approval", st["state"])
	id := st["approval"].(map[string]any)["approval_id"].(string)
	body := `{"approval_id":"` + id + `","decision":"approve"}`

	urlWith := func(tok string) string {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/console/api/login-url", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var out map[string]string
		require.NoError(t, jsonDecode(resp.Body, &out))
		return out["url"]
	}
	post := func(c *http.Client, header map[string]string) int {
		req, _ := http.NewRequest(http.MethodPost, h.srv.URL+"/console/api/approve", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp.StatusCode
	}
	assert.Equal(t, http.StatusForbidden, post(http.DefaultClient, map[string]string{"Authorization": "Bearer " + token}), "the agent's bearer token cannot approve")
	agent := h.loginWith(t, urlWith(token))
	assert.Equal(t, http.StatusForbidden, post(agent, nil), "a console the agent's token logged into cannot approve")
	person := h.loginWith(t, urlWith(testApproverToken))
	assert.Equal(t, http.StatusOK, post(person, nil), "a console the approver's token logged into can")
}

// loginWith follows a one-time login URL with a cookie jar and returns the
// logged-in client.
func (h *harness) loginWith(t *testing.T, url string) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err := c.Get(url)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return c
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// TestBrowserShowsForkParent: the session list says which session a fork
// came from.
func TestBrowserShowsForkParent(t *testing.T) {
	h := newHarness(t, false, "")
	b := newBrowser(t)
	h.call(t, "session.create", map[string]any{"shell": "/bin/sh", "name": "origin"})
	h.call(t, "session.fork", map[string]any{"session_id": "origin", "name": "trial"})
	b.navigate(h.con.LoginURL(h.srv.URL))
	b.waitTrue(`[...document.querySelectorAll("#sessions tbody tr")].some((tr) => tr.innerText.includes("trial forked from origin"))`, "the fork names its parent")
}
