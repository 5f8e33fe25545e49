// Package transport owns how requests reach the method table: framing a
// byte stream into messages with a size cap, per-connection lifetimes and
// concurrency, and the listeners — the unix socket (file mode, stale-socket
// replacement, peer credentials) and stdio.
//
// It turns bytes into messages and messages into protocol.Calls; what a
// method means is the protocol.Handler's business. It never imports session
// or exec.
package transport
