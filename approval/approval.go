// Package approval owns the approvals that a command waits for when the
// policy says "ask" (SPEC §16): a registry of pending approvals, each
// decided once by a person (approve or deny, with a reason), or denied
// when nobody decides in time. It fails closed: a timeout, or the
// registry closing, is a denial.
//
// An approval is keyed by its call (the gateway's toolCallId, an exec
// id): a retried call finds the approval it already asked for, pending or
// recently decided, and never asks twice. Distinct calls of one agent
// have distinct keys and are never merged.
//
// The package knows nothing of commands, transports or who may approve:
// the command object asks and waits; transports authenticate approvers.
package approval

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Decision is a person's answer.
type Decision string

const (
	Approve Decision = "approve"
	Deny    Decision = "deny"
)

// Errors of Decide and Ask; runtime maps them to wire codes.
var (
	// ErrNotFound: no approval has that id (never asked, or decided
	// and forgotten).
	ErrNotFound = errors.New("no such approval")
	// ErrDecided: the approval was already decided (by a person or by
	// its timeout).
	ErrDecided = errors.New("the approval is already decided")
	// ErrBadDecision: a decision is "approve" or "deny".
	ErrBadDecision = errors.New(`a decision is "approve" or "deny"`)
	// ErrClosed: the registry is closed (the daemon is shutting down).
	ErrClosed = errors.New("approvals are closed")
)

// Reasons given by the registry itself.
const (
	ReasonTimedOut = "timed out"
	ReasonClosed   = "trl is shutting down"
)

// Request is what a command asks a person to approve.
type Request struct {
	// Key identifies the call: a retry with the same key gets the same
	// approval. Empty: every Ask is a new approval.
	Key string
	// Rule names the policy rule that asked.
	Rule string
	// Reason is the rule's reason, shown to the approver.
	Reason string
	// Dangerous is the rule's flag, shown to the approver.
	Dangerous bool
	// Command is the command line (or the simple command that matched).
	Command string
	// Session and Actor say where the command would run and who sent it.
	Session string
	Actor   string
	// Whole identifies everything the command runs with: its whole line,
	// env and stdin (a digest will do). A retry under the same Key gets
	// the approval only with the same Whole and Session: Command is the
	// simple command that asked, and `git push; curl …` under a key
	// approved for `git push; echo` ran curl unasked.
	Whole string
}

// Outcome is how an approval ended.
type Outcome struct {
	Decision Decision
	Reason   string
	// Approver is who decided; empty when the registry did (timeout,
	// shutdown).
	Approver string
	// TimedOut: nobody decided within the timeout.
	TimedOut  bool
	DecidedAt time.Time
	// Waited is from the ask to the decision.
	Waited time.Duration
}

// Approved says whether the command may run.
func (o Outcome) Approved() bool { return o.Decision == Approve }

// Info is a snapshot of one approval, for lists and events.
type Info struct {
	ID string
	Request
	Asked    time.Time
	Deadline time.Time
	// Outcome is nil while the approval is pending.
	Outcome *Outcome
}

// Pending is one approval. It is shared by every Ask with its key.
type Pending struct {
	id       string
	req      Request
	asked    time.Time
	deadline time.Time
	done     chan struct{}

	// Guarded by the registry's mutex; outcome is readable without it
	// once done is closed.
	decided bool
	outcome Outcome
	timeout Timer // the fail-closed denial
	forget  Timer // drops the decided approval from the registry
}

// ID is the approval's id (approval_id on the wire).
func (p *Pending) ID() string { return p.id }

// Request is what was asked.
func (p *Pending) Request() Request { return p.req }

// Asked is when it was first asked; Deadline when it times out.
func (p *Pending) Asked() time.Time    { return p.asked }
func (p *Pending) Deadline() time.Time { return p.deadline }

// Done is closed when the approval is decided.
func (p *Pending) Done() <-chan struct{} { return p.done }

// Outcome is the decision, and false while there is none.
func (p *Pending) Outcome() (Outcome, bool) {
	select {
	case <-p.done:
		return p.outcome, true
	default:
		return Outcome{}, false
	}
}

// Wait returns the decision, or the context's cause when it ends first.
// The approval stays pending when the waiter gives up: a retried call
// finds it.
func (p *Pending) Wait(ctx context.Context) (Outcome, error) {
	select {
	case <-p.done:
		return p.outcome, nil
	case <-ctx.Done():
		return Outcome{}, context.Cause(ctx)
	}
}

func (p *Pending) info() Info {
	in := Info{ID: p.id, Request: p.req, Asked: p.asked, Deadline: p.deadline}
	if p.decided {
		o := p.outcome
		in.Outcome = &o
	}
	return in
}

func (p *Pending) String() string { return fmt.Sprintf("approval %s (%s)", p.id, p.req.Command) }
