// Package transport owns how requests reach the method table: framing a
// byte stream into messages with a size cap, per-connection lifetimes and
// concurrency, and the listeners — the unix socket (file mode, stale-socket
// replacement, peer credentials), stdio, and HTTP (bearer auth, Host check
// against DNS rebinding, body caps, slow-client timeouts, NDJSON and
// server-sent-event streams).
//
// It turns bytes into messages and messages into protocol.Calls; what a
// method means is the protocol.Handler's business. The HTTP server mounts
// the gateway adapter as a plain http.Handler behind its own checks. It
// never imports session or exec.
package transport
