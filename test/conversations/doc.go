// Package conversations runs the golden conversations of
// testdata/conversations (see internal/golden) in-process: the real
// runtime, with real shells, served by the real transports — the socket's
// concurrent connection over net.Pipe, stdio's sequential one, and HTTP on
// a loopback listener. `go test ./test/conversations -update` rewrites the
// expected responses from the current behaviour.
package conversations
