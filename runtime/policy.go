package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"maps"
	"slices"
	"strings"
	"time"

	"mvdan.cc/sh/v3/syntax"

	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// Command policy and approval (SPEC §16). Every command line a client asks
// to run (exec.run, exec.stream, and so every front-end) is checked here,
// before it reaches the shell: allowed, it runs; denied, nothing runs and
// the caller gets COMMAND_DENIED; asked, the command becomes a Job that
// awaits approval (its Gate), holding its session, until a person
// decides or the approval times out (a denial: fail-closed).

// admit checks line against the policy for a command in s. It returns no
// gate when the command may run, COMMAND_DENIED when it may not, and a
// gate when a person must decide.
//
// env is the command's env (exec.run's): checked with the line (withEnv),
// but its values are not logged; they may be secrets.
func (rt *Runtime) admit(ctx context.Context, s *session.Session, line string, env map[string]string, stdin *string) (*approvalGate, error) {
	if rt.opts.Policy == nil || rt.opts.Policy.Policy() == nil {
		return nil, nil
	}
	caller := protocol.CallerFrom(ctx)
	d := rt.opts.Policy.Evaluate(policy.Input{Line: withEnv(line, env), Cwd: s.Info().WorkingDir, Session: sessionName(s), Actor: caller.Actor, Aliases: s.Aliases()})
	if d.Action != policy.Deny {
		// The aliases the line defines are the shell's once it runs
		// (allowed, or approved: an ask is remembered too, which is only
		// stricter): a later line that uses one is checked with its
		// value. A denied line defines none.
		s.NoteAliases(d.Aliases)
	}
	switch d.Action {
	case policy.Deny:
		return nil, rt.deny(s, caller.Actor, line, d, "the command policy denies this command ("+d.RuleName+"): "+d.Reason+"; nothing was run")
	case policy.Ask:
		if why := rt.opts.NoApprover; why != "" {
			d.Reason += "; no one can approve it here: " + why
			return nil, rt.deny(s, caller.Actor, line, d, "the command policy asks a person about this command ("+d.RuleName+"): "+d.Reason+"; so it is denied at once and nothing was run")
		}
		if rt.opts.Approvals == nil {
			return nil, protocol.Errorf(protocol.CodeInternal, "the command policy asks for approval but the daemon has no approval registry")
		}
		key := caller.ApprovalKey
		p, created, err := rt.opts.Approvals.Ask(ctx, approval.Request{Key: key, Whole: whole(line, env, stdin), Rule: d.RuleName, Reason: d.Reason, Dangerous: d.Dangerous,
			Command: d.Command, Session: s.ID(), Actor: caller.Actor})
		if err != nil {
			return nil, err
		}
		g := &approvalGate{p: p, decision: d, line: line}
		if created {
			rt.auditDecision(s, caller.Actor, line, d, "asked", nil)
		}
		return g, nil
	default:
		metrics.Get().PolicyDecision(d.Action.String(), "ran")
		return nil, nil
	}
}

// admitState checks a state given to session.create (SPEC §17) against
// the policy, as the lines that would define it: its functions were
// defined unchecked (a state whose `ls` ran `rm -v "$@"` let `ls f`
// delete f under a policy denying rm), and its variables and aliases are
// checked as assignments (a PROMPT_COMMAND the shell would run later, an
// alias's value). Only a state the policy allows may be applied: one it
// would ask a person about is refused too, since nothing waits for an
// approval while a session is made.
//
// The session's env (session.create's env) is checked the same way, as
// export lines: {"env": {"BASH_ENV": f}} ran f's commands in every later
// bash the session started.
func (rt *Runtime) admitState(ctx context.Context, name string, env map[string]string, st *protocol.ShellState) error {
	if (st == nil && len(env) == 0) || rt.opts.Policy == nil || rt.opts.Policy.Policy() == nil {
		return nil
	}
	caller := protocol.CallerFrom(ctx)
	script, cwd := withEnv("", env), ""
	if st != nil {
		script, cwd = withEnv(stateScript(st), env), st.Cwd
	}
	d := rt.opts.Policy.Evaluate(policy.Input{Line: script, Cwd: cwd, Session: name, Actor: caller.Actor})
	if d.Action == policy.Allow {
		return nil
	}
	metrics.Get().PolicyDecision(d.Action.String(), "denied")
	// The state's text is not logged: its variables may hold secrets.
	rt.auditDecision(nil, caller.Actor, "(the env or state given to session.create "+name+")", d, "denied", nil)
	msg := "the command policy denies this session's env or state (" + d.RuleName + "): " + d.Reason + "; no session was made"
	if d.Action == policy.Ask {
		msg = "the command policy asks a person about this session's env or state (" + d.RuleName + "): " + d.Reason +
			"; session.create cannot wait for an approval, so no session was made: create it without that part of the state and define it with exec.run"
	}
	return &protocol.Error{Code: protocol.CodeCommandDenied, Message: msg,
		Data: protocol.PolicyDecision{Rule: d.RuleName, Reason: d.Reason, Dangerous: d.Dangerous, Command: d.Command}}
}

// stateScript is st as the bash lines that would define it, for the
// policy: exported and other variables, aliases and functions.
func stateScript(st *protocol.ShellState) string {
	var b strings.Builder
	q := func(v string) string {
		if s, err := syntax.Quote(v, syntax.LangBash); err == nil {
			return s
		}
		return "\"$unquotable\"" // an expansion: the policy's unknown action
	}
	for _, k := range slices.Sorted(maps.Keys(st.Env)) {
		b.WriteString("export " + k + "=" + valueWord(st.Env[k]) + "\n")
	}
	for _, v := range st.Vars {
		switch {
		case v.Kind == "nameref":
			b.WriteString("declare -n " + v.Name + "=" + valueWord(v.Value) + "\n")
		case v.Array != nil:
			b.WriteString(v.Name + "=(")
			for _, e := range v.Array {
				b.WriteString(valueWord(e) + " ")
			}
			b.WriteString(")\n")
		case v.Assoc != nil:
			b.WriteString("declare -A " + v.Name + "=(")
			for _, k := range slices.Sorted(maps.Keys(v.Assoc)) {
				b.WriteString("[" + valueWord(k) + "]=" + valueWord(v.Assoc[k]) + " ")
			}
			b.WriteString(")\n")
		default:
			b.WriteString(v.Name + "=" + valueWord(v.Value) + "\n")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(st.Aliases)) {
		b.WriteString("alias " + q(k+"="+st.Aliases[k]) + "\n")
	}
	for _, k := range slices.Sorted(maps.Keys(st.Functions)) {
		b.WriteString(st.Functions[k] + "\n")
	}
	return b.String()
}

// valueWord is a variable's value as one word for the policy's check.
// What a value holds is data, not code (the variables the shell runs
// later, PROMPT_COMMAND and the like, are checked by name), so a value
// whose quoting could make the check read the line otherwise (control
// characters, which need $'…'; &> and $', which make it read the line as
// dash too) is written as a stand-in: under a policy that denies what no
// rule allows, a value with a newline had the line denied.
func valueWord(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] == 0x7f {
			return "'value'"
		}
	}
	if strings.Contains(v, "&>") || strings.Contains(v, "$'") {
		return "'value'"
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// whole is a digest of everything a command runs with (approval.Request's
// Whole): its line, env and stdin.
func whole(line string, env map[string]string, stdin *string) string {
	h := sha256.New()
	h.Write([]byte(withEnv(line, env)))
	if stdin != nil {
		h.Write([]byte{0})
		h.Write([]byte(*stdin))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// withEnv is the line the policy checks for text run with env (exec.run's
// env): each variable exported first, then the text, as the command gets
// them. `{"env": {"BASH_ENV": f}, "command": "bash -c true"}` ran f's
// commands unchecked, while `BASH_ENV=f bash -c true` is checked.
func withEnv(text string, env map[string]string) string {
	if len(env) == 0 {
		return text
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(env)) {
		b.WriteString("export " + k + "=" + valueWord(env[k]) + "\n")
	}
	return b.String() + text
}

// shells are the programs whose prompt takes command lines: what is typed
// into one waiting for input is checked as command lines (typed.go).
var shells = map[string]bool{"sh": true, "dash": true, "bash": true, "zsh": true, "ksh": true, "mksh": true, "busybox": true, "ash": true, "fish": true,
	"rbash": true, "ksh93": true, "csh": true, "tcsh": true, "yash": true, "posh": true}

func sessionName(s *session.Session) string {
	if n := s.Name(); n != "" {
		return n
	}
	return s.ID()
}

// approvalGate is an exec.Gate backed by a pending approval.
type approvalGate struct {
	p        *approval.Pending
	decision policy.Decision
	line     string
}

func (g *approvalGate) Decided() <-chan struct{} { return g.p.Done() }

func (g *approvalGate) Approved() bool {
	o, ok := g.p.Outcome()
	return ok && o.Approved()
}

// info is the approval as a status shows it.
func (g *approvalGate) info() *protocol.Approval {
	a := &protocol.Approval{ApprovalID: g.p.ID(), Rule: g.decision.RuleName, Reason: g.decision.Reason,
		Dangerous: g.decision.Dangerous, Command: g.decision.Command}
	if o, ok := g.p.Outcome(); ok {
		a.Decision, a.DecisionReason, a.Approver, a.TimedOut = string(o.Decision), o.Reason, o.Approver, o.TimedOut
	}
	return a
}

// approvalOf is j's approval, nil when it needed none.
func approvalOf(j *exec.Job) *protocol.Approval {
	g, ok := j.Gate().(*approvalGate)
	if !ok {
		return nil
	}
	return g.info()
}

// unapproved is called when a gated command ended without running and
// nobody decided: its approval timed out (audited here, as the registry's
// timer decided it), or the agent cancelled the command or its session
// ended while it waited (the approval is withdrawn, so no person is asked
// about a command that no longer waits).
func (rt *Runtime) unapproved(j *exec.Job, x exec.Exit) {
	g, ok := j.Gate().(*approvalGate)
	if !ok {
		return
	}
	if x.Canceled {
		_ = rt.opts.Approvals.Decide(g.p.ID(), approval.Deny, "the command was cancelled before a decision", "trl")
		rt.auditDecision(j.Session(), j.Actor(), g.line, g.decision, "canceled", nil)
		metrics.Get().PolicyDecision(g.decision.Action.String(), "canceled")
		return
	}
	o, ok := g.p.Outcome()
	switch {
	case ok && o.TimedOut:
		rt.auditDecision(j.Session(), j.Actor(), g.line, g.decision, "timed_out", &o)
		metrics.Get().PolicyDecision(g.decision.Action.String(), "timed_out")
	case !ok && x.SessionExited:
		reason := "the session ended before a decision"
		if x.Cause != nil {
			reason += ": " + x.Cause.Error()
		}
		_ = rt.opts.Approvals.Decide(g.p.ID(), approval.Deny, reason, "trl")
		rt.auditDecision(j.Session(), j.Actor(), g.line, g.decision, "session_ended", nil)
		metrics.Get().PolicyDecision(g.decision.Action.String(), "session_ended")
	}
}

// auditDecision writes one audit event per policy decision: the rule,
// the decision, who decided and why, how long it waited; the command cut
// as every audit event cuts it, never its output.
func (rt *Runtime) auditDecision(s *session.Session, actor, line string, d policy.Decision, outcome string, o *approval.Outcome) {
	if s != nil {
		line = s.MaskText(line)
	}
	ev := rt.audit.Info().
		Str("event", "policy").
		Str("actor", actor).
		Str("command", cut(line, 4096)).
		Str("action", d.Action.String()).
		Str("rule", d.RuleName).
		Str("reason", d.Reason).
		Bool("dangerous", d.Dangerous).
		Str("outcome", outcome)
	if s != nil {
		ev = ev.Str("session", s.ID())
	}
	if o != nil {
		ev = ev.Str("approver", o.Approver).Str("decision", string(o.Decision)).Str("decision_reason", o.Reason).
			Int64("waited_ms", o.Waited.Milliseconds())
	}
	ev.Msg("policy decision")
}

// ExecApprove is the typed exec.approve: a person's decision on a pending
// approval. Only an approver may call it.
func (rt *Runtime) ExecApprove(ctx context.Context, p protocol.ExecApproveParams) (protocol.ExecApproveResult, error) {
	return serve(rt, ctx, protocol.MethodExecApprove, func() (protocol.ExecApproveResult, error) { return rt.execApprove(ctx, p) })
}

func (rt *Runtime) execApprove(ctx context.Context, p protocol.ExecApproveParams) (protocol.ExecApproveResult, error) {
	caller := protocol.CallerFrom(ctx)
	if !caller.Approver {
		return protocol.ExecApproveResult{}, protocol.Errorf(protocol.CodeAuthFailed, "only an approver may decide approvals: a person in the web console (--console-approve), or POST /rpc with TRL_APPROVER_TOKEN; the agent's token and the socket cannot")
	}
	if rt.opts.Approvals == nil {
		return protocol.ExecApproveResult{}, protocol.Errorf(protocol.CodeInvalidState, "this daemon has no command policy (trl serve --policy FILE), so nothing awaits approval")
	}
	if p.ApprovalID == "" {
		return protocol.ExecApproveResult{}, protocol.Errorf(protocol.CodeInvalidParams, "approval_id is required (the status's approval.approval_id)")
	}
	d := approval.Decision(p.Decision)
	if d != approval.Approve && d != approval.Deny {
		return protocol.ExecApproveResult{}, protocol.Errorf(protocol.CodeInvalidParams, "decision must be \"approve\" or \"deny\", got %q", clip(p.Decision, 32))
	}
	info, err := rt.opts.Approvals.Get(p.ApprovalID)
	if err == nil {
		err = rt.opts.Approvals.Decide(p.ApprovalID, d, p.Reason, caller.Actor)
	}
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return protocol.ExecApproveResult{}, protocol.Errorf(protocol.CodeInvalidParams, "no approval %q is pending; decided and timed-out ones are kept %s", clip(p.ApprovalID, 64), approval.DefaultRemember)
	case errors.Is(err, approval.ErrDecided):
		return protocol.ExecApproveResult{}, protocol.Errorf(protocol.CodeInvalidState, "approval %s was already decided", clip(p.ApprovalID, 64))
	case err != nil:
		return protocol.ExecApproveResult{}, err
	}
	if decided, err := rt.opts.Approvals.Get(p.ApprovalID); err == nil && decided.Outcome != nil {
		outcome := "approved"
		if !decided.Outcome.Approved() {
			outcome = "rejected"
		}
		dec := policy.Decision{Action: policy.Ask, RuleName: info.Rule, Reason: info.Reason, Dangerous: info.Dangerous, Command: info.Command}
		rt.auditDecision(nil, info.Actor, info.Command, dec, outcome, decided.Outcome)
		metrics.Get().PolicyDecision(policy.Ask.String(), outcome)
	}
	res := protocol.ExecApproveResult{ApprovalID: p.ApprovalID, Decision: string(d)}
	for _, j := range rt.jobs.List() {
		if g, ok := j.Gate().(*approvalGate); ok && g.p.ID() == p.ApprovalID {
			res.ExecID = j.ID()
		}
	}
	return res, nil
}

// approvalStatus fills the approval part of a status: the approval, and
// while it is pending the awaiting state.
func approvalStatus(st *protocol.ExecStatus, j *exec.Job, x exec.Exit, ended bool) {
	st.Approval = approvalOf(j)
	if st.Approval == nil {
		return
	}
	if !ended && j.Awaiting() {
		st.State, st.Reason = protocol.StateAwaitingApproval, protocol.ReasonApproval
		st.DurationMS = time.Since(j.Started()).Milliseconds()
	}
	if ended && x.Denied {
		st.Reason = protocol.ReasonDenied
	}
}

// followApproval sends a streamed command's exec.approval notifications:
// one while it awaits approval, one with the decision. A command that
// needed no approval sends none.
func followApproval(ctx context.Context, j *exec.Job, emit protocol.Emitter) error {
	g, ok := j.Gate().(*approvalGate)
	if !ok {
		return nil
	}
	if j.Awaiting() {
		if err := emit(protocol.NotifyExecApproval, protocol.ApprovalNotification{StreamID: j.ID(), State: protocol.StateAwaitingApproval, Approval: *g.info()}); err != nil {
			return err
		}
		select {
		case <-j.Gated():
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	state := protocol.StateRunning
	if x, ended := j.Exit(); ended && x.NotRun {
		state = protocol.StateExited
	}
	return emit(protocol.NotifyExecApproval, protocol.ApprovalNotification{StreamID: j.ID(), State: state, Approval: *g.info()})
}

// deny audits and counts d as denied and returns the COMMAND_DENIED error
// with message.
func (rt *Runtime) deny(s *session.Session, actor, line string, d policy.Decision, message string) error {
	rt.auditDecision(s, actor, line, d, "denied", nil)
	metrics.Get().PolicyDecision(d.Action.String(), "denied")
	return &protocol.Error{
		Code:    protocol.CodeCommandDenied,
		Message: message,
		Data:    protocol.PolicyDecision{Rule: d.RuleName, Reason: d.Reason, Dangerous: d.Dangerous, Command: d.Command},
	}
}
