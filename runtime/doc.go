// Package runtime is trl's method table: it binds the wire protocol to
// sessions and commands, maps domain errors to wire codes in exactly one
// place (errors.go), keeps the daemon's counters, writes the audit trail,
// and shuts down in order.
//
// Transports reach it only through protocol.Handler.
package runtime
