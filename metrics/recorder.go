package metrics

import (
	"errors"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/trl-project/trl/protocol"
)

// Recorder receives the events the metrics count. Implementations must be
// safe for concurrent use and must not block.
type Recorder interface {
	// SessionCreated counts a session whose shell started.
	SessionCreated()
	// CommandDone counts a finished command of method (exec.run,
	// exec.stream, ...) with how it ended, how long it ran and how many
	// bytes it wrote to each stream.
	CommandDone(method string, outcome Outcome, d time.Duration, stdoutBytes, stderrBytes int64)
	// Request counts one answered request: its transport (unix, http,
	// stdio), method and code ("OK" or a SPEC §3 error code).
	Request(transport, method, code string)
	// ConnOpened and ConnClosed track a transport's open connections.
	ConnOpened(transport string)
	ConnClosed(transport string)
	// ConsoleViewers moves the gauge of web console viewers by delta
	// (+1 when one connects, -1 when it leaves).
	ConsoleViewers(delta int)
	// PolicyDecision counts one decision on a command line (SPEC §16):
	// the policy's action (allow, ask, deny) and the outcome (ran,
	// denied, approved, rejected, timed_out, canceled).
	PolicyDecision(action, outcome string)
	// FileOp counts one file operation (fs.read, fs.write, ..., or
	// http.get and http.put for /files) with its code ("OK" or a SPEC §3
	// error code) and the bytes it read or wrote.
	FileOp(op, code string, bytes int64)
}

// Outcome is how a command ended.
type Outcome string

// The outcomes of a command.
const (
	OutcomeOK       Outcome = "ok"       // exit status 0
	OutcomeFailed   Outcome = "failed"   // a non-zero exit status
	OutcomeTimeout  Outcome = "timeout"  // killed by its timeout
	OutcomeCanceled Outcome = "canceled" // ended by exec.cancel
)

// OutcomeOf classifies a command's end.
func OutcomeOf(exitCode int, timedOut, canceled bool) Outcome {
	switch {
	case timedOut:
		return OutcomeTimeout
	case canceled:
		return OutcomeCanceled
	case exitCode != 0:
		return OutcomeFailed
	}
	return OutcomeOK
}

// Code is the code label of a request that ended with err: "OK" for nil,
// else its wire error code.
func Code(err error) string {
	if err == nil {
		return "OK"
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return string(pe.Code)
	}
	return string(protocol.AsError(err).Code)
}

type holder struct{ r Recorder }

var current atomic.Pointer[holder]

// Get returns the process-wide recorder (a no-op until Set is called).
func Get() Recorder {
	if h := current.Load(); h != nil {
		return h.r
	}
	return Nop{}
}

// Set installs r as the process-wide recorder; nil restores the no-op.
func Set(r Recorder) {
	if r == nil {
		current.Store(nil)
		return
	}
	current.Store(&holder{r})
}

// HTTPConnState is an http.Server ConnState hook that tracks the HTTP
// transport's open connections (a hijacked one, a WebSocket, leaves the
// count when it is handed over).
func HTTPConnState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		Get().ConnOpened("http")
	case http.StateClosed, http.StateHijacked:
		Get().ConnClosed("http")
	}
}

// Nop is a Recorder that records nothing.
type Nop struct{}

func (Nop) SessionCreated()                                          {}
func (Nop) CommandDone(string, Outcome, time.Duration, int64, int64) {}
func (Nop) Request(string, string, string)                           {}
func (Nop) ConnOpened(string)                                        {}
func (Nop) ConnClosed(string)                                        {}
func (Nop) ConsoleViewers(int)                                       {}
func (Nop) PolicyDecision(string, string)                            {}
func (Nop) FileOp(string, string, int64)                             {}
