package console

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/trl-project/trl/protocol"
)

// Approvals in the console (SPEC §16). A person decides a command the
// policy holds: the console lists what waits, and, for a person allowed to
// approve, offers Approve and Deny. Only a console session that began
// with an approver's login may decide: the one-time URL the daemon logs at
// start (its operator reads that log) when --console-approve or
// --console-write is set, or one minted with TRL_APPROVER_TOKEN (`trl
// console --approver`). A login URL minted with the agent's token, and
// the agent's bearer token itself, can watch but never approve.
type approvers struct {
	token    [32]byte // SHA-256 of TRL_APPROVER_TOKEN
	hasToken bool

	mu      sync.Mutex
	logins  map[[32]byte]bool // one-time login tokens that grant approval
	cookies map[[32]byte]bool // console cookies that may approve
}

func newApprovers(token string) *approvers {
	a := &approvers{logins: map[[32]byte]bool{}, cookies: map[[32]byte]bool{}}
	if token != "" {
		a.token, a.hasToken = sha256.Sum256([]byte(token)), true
	}
	return a
}

// grantLogin marks a one-time login token as an approver's.
func (a *approvers) grantLogin(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if len(a.logins) >= maxLogins {
		clear(a.logins) // a flood cannot grow the map; those URLs still log in, without approval
	}
	a.logins[sha256.Sum256([]byte(tok))] = true
}

// redeemed carries an approver's login over to the cookie it became.
func (a *approvers) redeemed(tok, cookie string) {
	h := sha256.Sum256([]byte(tok))
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.logins[h] {
		return
	}
	delete(a.logins, h)
	if len(a.cookies) >= maxSessions {
		clear(a.cookies)
	}
	a.cookies[sha256.Sum256([]byte(cookie))] = true
}

// person reports whether r comes from a console session that may approve
// (the cookie of an approver's login; the auth check has accepted it).
func (a *approvers) person(r *http.Request) bool {
	c, err := r.Cookie(cookieName)
	if err != nil || c.Value == "" {
		return false
	}
	h := sha256.Sum256([]byte(c.Value))
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cookies[h]
}

// bearer reports whether r carries TRL_APPROVER_TOKEN.
func (a *approvers) bearer(r *http.Request) bool {
	if !a.hasToken {
		return false
	}
	v := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(v) <= len(scheme) || !strings.EqualFold(v[:len(scheme)], scheme) {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimSpace(v[len(scheme):])))
	return subtle.ConstantTimeCompare(h[:], a.token[:]) == 1
}

// approvalsPage is /console/api/approvals' answer: the commands waiting
// for a person, and whether this viewer may decide them.
type approvalsPage struct {
	Commands   []protocol.ExecSummary `json:"commands"`
	CanApprove bool                   `json:"can_approve"`
}

// approvals lists the commands awaiting approval.
func (c *Console) approvals(w http.ResponseWriter, r *http.Request) {
	list, err := c.opts.API.ExecList(caller(r), protocol.ExecListParams{})
	if err != nil {
		writeError(w, err)
		return
	}
	page := approvalsPage{Commands: []protocol.ExecSummary{}, CanApprove: c.opts.Approve && c.approvers.person(r)}
	for _, cmd := range list.Commands {
		if cmd.State == protocol.StateAwaitingApproval {
			page.Commands = append(page.Commands, cmd)
		}
	}
	writeJSON(w, http.StatusOK, page)
}

// approve is a person's decision: POST {approval_id, decision, reason}.
func (c *Console) approve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
		return
	}
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		writeJSON(w, http.StatusUnsupportedMediaType, map[string]string{"error": "send application/json"})
		return
	}
	if !c.opts.Approve {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "this console cannot approve; start the daemon with --console-approve", "code": string(protocol.CodeAuthFailed)})
		return
	}
	if !c.approvers.person(r) {
		writeJSON(w, http.StatusForbidden, map[string]string{"error": "only a person logged in with an approver's URL may approve: the URL the daemon logs at start, or `trl console --approver` (TRL_APPROVER_TOKEN)", "code": string(protocol.CodeAuthFailed)})
		return
	}
	var p protocol.ExecApproveParams
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&p); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "body must be {\"approval_id\", \"decision\", \"reason\"}: " + err.Error()})
		return
	}
	ctx := protocol.WithCaller(r.Context(), protocol.Caller{Transport: "console", Actor: "console " + r.RemoteAddr, Approver: true})
	res, err := c.opts.API.ExecApprove(ctx, p)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
