// Package exec runs one command at a time in a session and owns what
// happens to it: the timeout and its escalation (SIGINT, then SIGKILL to
// the command's process group, then the whole session), cancellation, and
// where its output goes.
//
// Output always takes one path: the session hands bytes to a Sink as the
// kernel delivers them. A buffered exec.run collects them into a bounded
// head+tail Collector; a streamed exec.stream (see Stream) keeps a bounded
// window and pushes chunks to subscribers. Both are Sinks of the same
// Execution.
package exec
