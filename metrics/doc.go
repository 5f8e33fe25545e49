// Package metrics owns trl's Prometheus metrics and its HTTP probes
// (SPEC §12): /metrics in the Prometheus text format, /livez and /readyz.
//
// The runtime, session and transport packages report through the small
// Recorder interface with one-line calls to Get(), the process-wide
// recorder. Until cmd/trl installs one with Set it is a no-op, so library
// users and tests that do not care pay nothing. No metric is labelled
// with a session, stream or exec id: label values come from small fixed
// sets (method names, outcomes, error codes, transports).
package metrics
