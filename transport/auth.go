package transport

import (
	"crypto/sha256"

	"crypto/subtle"
	"github.com/trl-project/trl/protocol"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// bearer checks Authorization headers against one token.
type bearer struct {
	sum [sha256.Size]byte
}

func newBearer(token string) bearer { return bearer{sum: sha256.Sum256([]byte(token))} }

// newApprover is the approver token's bearer, nil when there is none.
func newApprover(token string) *bearer {
	if token == "" {
		return nil
	}
	b := newBearer(token)
	return &b
}

// approverMethods are what the approver token may call: deciding, and
// seeing what waits.
var approverMethods = map[string]bool{protocol.MethodExecApprove: true, protocol.MethodExecList: true}

// check reports whether r carries the token as "Authorization: Bearer
// <token>". Both sides are hashed first, so the comparison takes the same
// time whatever the token's length and however much of it matches. Only the
// header counts: a token in the URL ends up in logs and is never accepted.
func (b bearer) check(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	const scheme = "bearer "
	if len(h) < len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		// Hash anyway, so a missing header costs what a wrong one does.
		got := sha256.Sum256([]byte(h))
		subtle.ConstantTimeCompare(got[:], b.sum[:])
		return false
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(h[len(scheme):])))
	return subtle.ConstantTimeCompare(got[:], b.sum[:]) == 1
}

// isLoopbackAddr reports whether a listener is bound to a loopback address
// only (127.0.0.0/8 or ::1); the unspecified address is not.
func isLoopbackAddr(a net.Addr) bool {
	tcp, ok := a.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// isLoopbackHost reports whether a Host header names this machine by a
// loopback name: localhost (or a name under .localhost), 127.0.0.0/8 or
// [::1], with or without a port. A DNS-rebinding page reaches a loopback
// port under its own domain name, which this refuses.
func isLoopbackHost(host string) bool {
	if h, port, err := net.SplitHostPort(host); err == nil {
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return false
		}
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
