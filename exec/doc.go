// Package exec owns commands: each command a client starts is one Job
// (job.go), from the request that starts it to the last read of its
// retained output, and the Registry (registry.go) is the one registry of
// them — by exec_id, the one each session runs, and the finished ones for
// a bounded time and number.
//
// A Job owns its timeout and the escalation after it (SIGINT, then
// SIGKILL to the command's process group, then the whole session),
// cancellation (one supervisor goroutine sends every signal), how it
// ended, where its output is kept, and how far the statuses returned so
// far have carried it. The session only runs the command line (Line) and
// hands its bytes over.
//
// Output always takes one path: the session hands bytes to a Sink as the
// kernel delivers them, through the Job's Watch (when output came, the
// prompt) to its Store: a buffered exec.run collects them into a bounded
// head+tail Collector; a streamed exec.stream keeps a bounded window
// (Stream) and pushes chunks to subscribers.
package exec
