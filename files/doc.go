// Package files owns the daemon's file operations (SPEC §15): read in
// chunks or by lines, atomic whole-file writes and appends, exact-string
// edits, listings, stat, mkdir, remove and move, on the real filesystem.
//
// Every path is opened relative to the descriptor of a root directory
// with openat2: under --fs-root with RESOLVE_BENEATH, so that the kernel,
// not a string check, refuses `..`, absolute symlinks and symlinks that
// point outside, even one swapped in while the call runs. Every operation
// after resolution works on descriptors and single path components (the
// *at calls), so nothing is resolved twice. An operation runs with a
// caller's Identity when one is given (a session's uid and gid under
// --isolate; see identity.go), so it can do exactly what that uid can.
//
// The package knows nothing of sessions, JSON or transports: the caller
// passes a Scope (the directory relative paths start from, and the
// identity) and maps this package's sentinel errors to wire codes.
package files
