// Package console serves the web console of SPEC §11 under /console/: a
// live list of sessions, a live terminal view of each (xterm.js, vendored
// under static/vendor and embedded), each session's command transcript,
// and replays of recordings. It owns the console's own authentication (a
// one-time login URL exchanged for an HttpOnly, SameSite=Strict cookie),
// its WebSocket viewers (each with a bounded queue: a slow browser never
// slows a command, and one that falls behind is repainted from the
// screen), and the asciicast recordings of --record.
//
// It reads sessions and commands through trl's typed API (protocol.API)
// and watches a session's terminal through Sessions (the runtime).
package console

import (
	"context"
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

//go:embed static
var static embed.FS

// Sessions finds a live session to watch.
type Sessions interface {
	Session(ref string) (*session.Session, error)
	// TypeInto types a person's keys into a session's terminal, through
	// the runtime (input marks, audit, secrets at a password prompt).
	TypeInto(ctx context.Context, ref string, p []byte) error
}

// Options configure a Console.
type Options struct {
	// API is trl's typed API (session.list, exec.list, exec.read).
	API protocol.API
	// Sessions gives the console a session's terminal.
	Sessions Sessions
	// Write lets a person type into sessions (--console-write); read-only
	// otherwise.
	Write bool
	// Approve lets a person logged in with an approver's URL decide the
	// commands the policy holds (--console-approve; see approvers).
	Approve bool
	// ApproverToken is TRL_APPROVER_TOKEN: a login URL asked for with it
	// is an approver's.
	ApproverToken string
	// BearerToken, when set, is accepted from programs instead of the
	// cookie.
	BearerToken string
	// RecordDir holds the recordings the console replays; empty: none.
	RecordDir string
	Logger    zerolog.Logger
}

// Console is an http.Handler for /console/.
type Console struct {
	opts      Options
	auth      *auth
	approvers *approvers
	files     http.Handler
	viewer    viewerLimits
}

// New returns a Console.
func New(opts Options) *Console {
	sub, _ := fs.Sub(static, "static")
	return &Console{
		opts:      opts,
		auth:      newAuth(opts.BearerToken),
		approvers: newApprovers(opts.ApproverToken),
		files:     http.StripPrefix("/console/", http.FileServer(http.FS(sub))),
		viewer:    defaultViewerLimits,
	}
}

// LoginURL returns a one-time login URL on base (such as
// "http://127.0.0.1:8080"): good once, for five minutes. The daemon logs
// one at start for its operator: with Approve, it is an approver's.
func (c *Console) LoginURL(base string) string {
	return c.loginURLFor(base, c.opts.Approve)
}

func (c *Console) loginURLFor(base string, approver bool) string {
	tok := c.auth.newLogin()
	if approver {
		c.approvers.grantLogin(tok)
	}
	return strings.TrimRight(base, "/") + "/console/login?token=" + url.QueryEscape(tok)
}

// ServeHTTP routes /console/... requests.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	// xterm.js sets styles from script (its own <style> elements), hence
	// 'unsafe-inline' for styles only; no inline script is ever allowed.
	h.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")

	p := r.URL.Path
	switch {
	case p == "/console/login":
		c.login(w, r)
		return
	case p == "/console/api/login-url":
		c.loginURL(w, r)
		return
	case p == "/console/favicon.svg" || p == "/favicon.ico":
		serveIcon(w, r) // before the login: a browser asks for it on every page
		return
	}
	if !c.auth.check(r) {
		if strings.HasPrefix(p, "/console/api/") || p == "/console/ws" {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "not logged in: open the login URL that `trl console` prints"})
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte("Not logged in. Run `trl console` (or read the daemon's log) for a one-time login URL.\n"))
		return
	}
	switch {
	case p == "/console/ws":
		c.serveViewer(w, r)
	case p == "/console/api/sessions":
		c.sessions(w, r)
	case p == "/console/api/commands":
		c.commands(w, r)
	case p == "/console/api/approvals":
		c.approvals(w, r)
	case p == "/console/api/approve":
		c.approve(w, r)
	case p == "/console/api/recordings":
		c.recordings(w, r)
	case strings.HasPrefix(p, "/console/api/recordings/"):
		c.recording(w, r, strings.TrimPrefix(p, "/console/api/recordings/"))
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		c.files.ServeHTTP(w, r)
	default:
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "GET only"})
	}
}

// nextView is the console view a login may go on to: "#" and up to 200
// characters of a view's address. The length is checked apart from the
// pattern: a regexp repetition {0,200} compiles to 200 copies of its
// class, 200 KB of the daemon's memory for one check.
var nextView = regexp.MustCompile(`^#[A-Za-z0-9/_.%-]*$`)

func isNextView(s string) bool { return len(s) <= 201 && nextView.MatchString(s) }

// login exchanges a one-time token for the cookie, and drops the token
// from the address bar by redirecting.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	tok := r.URL.Query().Get("token")
	cookie, ok := c.auth.redeem(tok)
	if !ok {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte("This login link was already used or has expired. Run `trl console` for a new one.\n"))
		c.opts.Logger.Warn().Str("remote", r.RemoteAddr).Msg("console: refused a used or expired login token")
		return
	}
	c.approvers.redeemed(tok, cookie)
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: cookie, Path: "/console/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil,
		MaxAge: int(cookieTTL.Seconds()),
	})
	c.opts.Logger.Info().Str("remote", r.RemoteAddr).Msg("console: logged in")
	// next is a view of the console (a fragment such as #session/s-…),
	// never another address.
	to := "/console/"
	if next := r.URL.Query().Get("next"); isNextView(next) {
		to += next
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// loginURL gives a program holding the bearer token a one-time login
// URL for a person (`trl console`).
func (c *Console) loginURL(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "POST only"})
		return
	}
	approver := c.opts.Approve && c.approvers.bearer(r)
	if !approver && (!c.auth.hasTok || !c.auth.check(r)) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "send the daemon's bearer token: Authorization: Bearer <TRL_AUTH_TOKEN>"})
		return
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	// Asked with the agent's token, the URL watches; with the approver's,
	// it may also decide approvals.
	writeJSON(w, http.StatusOK, map[string]string{"url": c.loginURLFor(scheme+"://"+r.Host, approver)})
}

// caller marks the console's calls for the metrics and the audit log.
func caller(r *http.Request) context.Context {
	return protocol.WithCaller(r.Context(), protocol.Caller{Transport: "console", Actor: "console"})
}

// sessions lists the sessions with the command each runs.
func (c *Console) sessions(w http.ResponseWriter, r *http.Request) {
	ctx := caller(r)
	list, err := c.opts.API.SessionList(ctx, protocol.SessionListParams{})
	if err != nil {
		writeError(w, err)
		return
	}
	cmds, err := c.opts.API.ExecList(ctx, protocol.ExecListParams{})
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sessionsPage{Sessions: list, Commands: cmds, Write: c.opts.Write, Approve: c.opts.Approve && c.approvers.person(r)})
}

// sessionsPage is /console/api/sessions' answer. Approve says whether
// this viewer may decide the commands awaiting approval.
type sessionsPage struct {
	Sessions protocol.SessionListResult `json:"sessions"`
	Commands protocol.ExecList          `json:"commands"`
	Write    bool                       `json:"write"`
	Approve  bool                       `json:"approve"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, err error) {
	e := protocol.AsError(err)
	status := http.StatusBadRequest
	if e.Code == protocol.CodeSessionNotFound || e.Code == protocol.CodeStreamNotFound {
		status = http.StatusNotFound
	}
	writeJSON(w, status, map[string]string{"error": e.Message, "code": string(e.Code)})
}
