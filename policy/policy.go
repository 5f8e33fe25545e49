// Package policy owns trl's command policy (SPEC §16): the YAML file that
// says which command lines run, which are refused and which wait for a
// person, and the evaluation of one command line against it.
//
// A line is parsed with a real shell parser (mvdan.cc/sh/v3/syntax), never
// matched by regular expressions over the raw text for finding programs:
// every simple command in lists, pipelines, subshells, command and process
// substitutions, loop and branch bodies, function bodies, alias values and
// `trap` strings is checked, and wrappers such as sudo, env, xargs, timeout
// or `bash -c '…'` are looked through. What cannot be known before the
// line runs (`$cmd` as the program, eval, source, a script read from a
// pipe) takes the policy's `unknown` action. Each simple command gets the
// action of the first rule it matches (or the default); the strictest
// action of the line wins: deny > ask > allow.
//
// The package decides only. Refusing a command, holding it for approval
// (package approval) and auditing the decision belong to the caller.
package policy

import (
	"fmt"
	"sync/atomic"
)

// Action is what a policy does with a command. The order of the values is
// their strictness: a larger value wins.
type Action int

const (
	// Allow lets the command run.
	Allow Action = iota + 1
	// Ask holds the command until a person approves it.
	Ask
	// Deny refuses the command; nothing runs.
	Deny
)

func (a Action) String() string {
	switch a {
	case Allow:
		return "allow"
	case Ask:
		return "ask"
	case Deny:
		return "deny"
	}
	return fmt.Sprintf("Action(%d)", int(a))
}

func parseAction(s string) (Action, bool) {
	switch s {
	case "allow":
		return Allow, true
	case "ask":
		return Ask, true
	case "deny":
		return Deny, true
	}
	return 0, false
}

// Input is one command line and where it is about to run.
type Input struct {
	// Line is the command line as the agent sent it.
	Line string
	// Cwd is the session's working directory when the line is submitted
	// (a `cd` inside the line is not followed).
	Cwd string
	// Session is the session's name (or id when it has no name).
	Session string
	// Actor is who sent the line, as the transport authenticated it.
	Actor string
	// Aliases are the session's aliases from earlier lines (and from a
	// state it was given): where the line uses one, its value is checked
	// as the shell will run it. Not modified.
	Aliases map[string]string
}

// Decision is the policy's answer for one line.
type Decision struct {
	Action Action
	// Rule is the index in the file's rules of the rule that decided, or
	// -1 when the default or unknown action did (or no policy is loaded).
	Rule int
	// RuleName names the deciding rule for people: its `name`, or a
	// description such as `rules[2] (program: git push)`; "default" or
	// "unknown" when no rule decided.
	RuleName string
	// Reason is shown to the agent and to the approver.
	Reason string
	// Dangerous is the deciding rule's `dangerous` flag.
	Dangerous bool
	// Command is the simple command that decided, as written (for a
	// command inside `bash -c '…'`, the inner text).
	Command string
	// Aliases are the aliases the line defines (with literal values):
	// the next lines' Input.Aliases, once it has run.
	Aliases map[string]string
}

// Evaluator holds the policy in force and swaps it atomically, so that a
// reload (SIGHUP) never blocks or races an evaluation. Its zero value has
// no policy and allows everything.
type Evaluator struct {
	p atomic.Pointer[Policy]
}

// NewEvaluator returns an evaluator holding p (nil: no policy).
func NewEvaluator(p *Policy) *Evaluator {
	e := &Evaluator{}
	e.p.Store(p)
	return e
}

// Reload reads the policy file at path and puts it in force. A file that
// does not load is refused and the policy in force is kept; the error
// names the line and the problem.
func (e *Evaluator) Reload(path string) error {
	p, err := Load(path)
	if err != nil {
		return err
	}
	e.p.Store(p)
	return nil
}

// Policy is the policy in force, nil when none is loaded.
func (e *Evaluator) Policy() *Policy { return e.p.Load() }

// Evaluate decides a line with the policy in force. Without a policy every
// line is allowed.
func (e *Evaluator) Evaluate(in Input) Decision {
	p := e.p.Load()
	if p == nil {
		return Decision{Action: Allow, Rule: -1, RuleName: "default", Reason: "no policy is loaded"}
	}
	return p.Evaluate(in)
}
