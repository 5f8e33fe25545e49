package console

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Login tokens are good once and briefly; a cookie lasts a working day.
const (
	loginTTL    = 5 * time.Minute
	cookieTTL   = 12 * time.Hour
	cookieName  = "trl_console"
	maxLogins   = 64
	maxSessions = 256
)

// auth holds the one-time login tokens and the cookies they were
// exchanged for, both by their SHA-256 (a memory dump or a log line shows
// no usable secret).
type auth struct {
	bearer [32]byte // SHA-256 of the daemon's bearer token; zero when none
	hasTok bool

	mu      sync.Mutex
	logins  map[[32]byte]time.Time
	cookies map[[32]byte]time.Time
}

func newAuth(bearer string) *auth {
	a := &auth{logins: map[[32]byte]time.Time{}, cookies: map[[32]byte]time.Time{}}
	if bearer != "" {
		a.bearer, a.hasTok = sha256.Sum256([]byte(bearer)), true
	}
	return a
}

func secret() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// newLogin returns a fresh one-time login token.
func (a *auth) newLogin() string {
	tok := secret()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expire(time.Now())
	if len(a.logins) >= maxLogins {
		for k := range a.logins { // drop one: a flood cannot grow the map
			delete(a.logins, k)
			break
		}
	}
	a.logins[sha256.Sum256([]byte(tok))] = time.Now().Add(loginTTL)
	return tok
}

// redeem spends a login token: true once, for a token not expired.
func (a *auth) redeem(tok string) (cookie string, ok bool) {
	h := sha256.Sum256([]byte(tok))
	now := time.Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	a.expire(now)
	exp, found := a.logins[h]
	if !found || now.After(exp) {
		return "", false
	}
	delete(a.logins, h)
	if len(a.cookies) >= maxSessions {
		var oldest [32]byte
		var at time.Time
		for k, t := range a.cookies {
			if at.IsZero() || t.Before(at) {
				oldest, at = k, t
			}
		}
		delete(a.cookies, oldest)
	}
	c := secret()
	a.cookies[sha256.Sum256([]byte(c))] = now.Add(cookieTTL)
	return c, true
}

func (a *auth) expire(now time.Time) {
	for k, t := range a.logins {
		if now.After(t) {
			delete(a.logins, k)
		}
	}
	for k, t := range a.cookies {
		if now.After(t) {
			delete(a.cookies, k)
		}
	}
}

// check accepts a request with a live console cookie, or, for programs,
// the daemon's bearer token.
func (a *auth) check(r *http.Request) bool {
	if c, err := r.Cookie(cookieName); err == nil && c.Value != "" {
		h := sha256.Sum256([]byte(c.Value))
		a.mu.Lock()
		exp, ok := a.cookies[h]
		a.mu.Unlock()
		if ok && time.Now().Before(exp) {
			return true
		}
	}
	if a.hasTok {
		// The scheme is case-insensitive (RFC 9110 §11.1), as /rpc has it.
		const prefix = "bearer "
		v := r.Header.Get("Authorization")
		if len(v) > len(prefix) && strings.EqualFold(v[:len(prefix)], prefix) {
			h := sha256.Sum256([]byte(strings.TrimSpace(v[len(prefix):])))
			return subtle.ConstantTimeCompare(h[:], a.bearer[:]) == 1
		}
	}
	return false
}
