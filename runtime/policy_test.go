package runtime

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/protocol"
)

// testPolicy denies rm and kubectl delete, asks before git push and curl,
// and takes unknown words (eval, $cmd) to a person.
const testPolicy = `
default: allow
unknown: ask
rules:
  - match: {program: [rm, shred]}
    action: deny
    reason: deleting files is not allowed here
    dangerous: true
  - match: {program: ["kubectl delete"]}
    action: deny
    reason: no cluster changes
  - match: {program: ["git push", curl]}
    action: ask
    reason: leaves the machine
  - match: {regex: 'DROP TABLE'}
    action: deny
    reason: no schema changes
`

func policyRuntime(t *testing.T, timeout time.Duration) *Runtime {
	t.Helper()
	p, err := policy.Parse([]byte(testPolicy), "test-policy.yaml")
	require.NoError(t, err)
	return newRuntime(t, Options{Policy: policy.NewEvaluator(p), Approvals: approval.New(approval.Options{Timeout: timeout})})
}

var agent = protocol.Caller{Transport: "test", Actor: "agent"}

func agentCtx() context.Context { return protocol.WithCaller(context.Background(), agent) }

func approverCtx() context.Context {
	return protocol.WithCaller(context.Background(), protocol.Caller{Transport: "test", Actor: "a person", Approver: true})
}

// TestPolicyThroughTheDaemon runs a table of command lines through the
// real runtime on sh and bash: an allowed line runs, a denied one is
// refused with COMMAND_DENIED and nothing in it runs (its marker file is
// still there, nothing it would print was printed), one to ask about
// awaits approval without running.
func TestPolicyThroughTheDaemon(t *testing.T) {
	const (
		allow = "allow"
		deny  = "deny"
		ask   = "ask"
	)
	cases := []struct{ line, want string }{
		{"echo hi", allow},
		{"ls / >/dev/null", allow},
		{"git status 2>/dev/null; true", allow},
		{"printf '%s\\n' rm", allow},
		{"echo 'rm -rf /'", allow},
		{"true && echo ok", allow},
		{"for i in 1 2; do echo $i; done", allow},
		{"f() { echo f; }; f", allow},
		{"cat <<'EOF'\nrm -rf /\nEOF", allow},
		{"x=$(echo hi); echo $x", allow},
		{"rm -f MARK", deny},
		{"cd /tmp && rm -f MARK", deny},
		{"echo a; rm -f MARK", deny},
		{"true || rm -f MARK", deny},
		{"echo a | rm -f MARK", deny},
		{"(rm -f MARK)", deny},
		{"{ rm -f MARK; }", deny},
		{"echo $(rm -f MARK)", deny},
		{"echo `rm -f MARK`", deny},
		{"if true; then rm -f MARK; fi", deny},
		{"for f in MARK; do rm -f $f; done", deny},
		{"while false; do rm -f MARK; done", deny},
		{"case x in x) rm -f MARK;; esac", deny},
		{"f() { rm -f MARK; }; f", deny},
		{"sudo rm -f MARK", deny},
		{"env FOO=1 rm -f MARK", deny},
		{"command rm -f MARK", deny},
		{"exec rm -f MARK", deny},
		{"time rm -f MARK", deny},
		{"nice -n 5 rm -f MARK", deny},
		{"nohup rm -f MARK", deny},
		{"timeout 5 rm -f MARK", deny},
		{"echo MARK | xargs rm -f", deny},
		{"sh -c 'rm -f MARK'", deny},
		{"bash -c \"rm -f MARK\"", deny},
		{"/bin/rm -f MARK", deny},
		{"\\rm -f MARK", deny},
		{"shred MARK", deny},
		{"kubectl delete pod x", deny},
		{"echo 'DROP TABLE users' | cat", deny},
		{"git push origin main", ask},
		{"cd /tmp; git push", ask},
		{"curl -s http://127.0.0.1:1/ || true", ask},
		{"eval 'rm -f MARK'", deny},
		{"cmd=ls; $cmd", ask},
		{"eval echo hi", ask},
		{"source /dev/null", ask},
	}
	require.GreaterOrEqual(t, len(cases), 40)
	rt := policyRuntime(t, time.Minute)
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		if _, err := os.Stat(shell); err != nil {
			t.Logf("skipping %s: %v", shell, err)
			continue
		}
		t.Run(filepath.Base(shell), func(t *testing.T) {
			dir := t.TempDir()
			mark := filepath.Join(dir, "marker")
			info, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: shell, WorkingDir: dir})
			require.NoError(t, err)
			for _, tc := range cases {
				require.NoError(t, os.WriteFile(mark, []byte("x"), 0o600))
				line := strings.ReplaceAll(tc.line, "MARK", mark)
				st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: info.SessionID, Command: &line})
				switch tc.want {
				case allow:
					require.NoError(t, err, "%q", tc.line)
					assert.Equal(t, protocol.StateExited, st.State, "%q runs", tc.line)
					assert.Nil(t, st.Approval, "%q needed no approval", tc.line)
				case deny:
					require.Error(t, err, "%q must be denied", tc.line)
					assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code, "%q", tc.line)
					_, statErr := os.Stat(mark)
					assert.NoError(t, statErr, "%q: the marker is still there, nothing ran", tc.line)
				case ask:
					require.NoError(t, err, "%q", tc.line)
					assert.Equal(t, protocol.StateAwaitingApproval, st.State, "%q awaits approval", tc.line)
					require.NotNil(t, st.Approval)
					assert.NotEmpty(t, st.Approval.ApprovalID)
					assert.Nil(t, st.ExitCode, "%q has not run", tc.line)
					// Withdrawn: the agent cancels it.
					res, err := rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: st.ExecID})
					require.NoError(t, err)
					assert.True(t, res.Canceled)
					end, err := rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
					require.NoError(t, err)
					assert.Equal(t, protocol.StateExited, end.State)
					assert.True(t, end.Canceled)
				}
			}
		})
	}
}

// TestApprovalApproved: an asked command waits, holding its session, runs
// once an approver approves, and its result says who approved; the
// agent's own call to exec.approve is refused.
func TestApprovalApproved(t *testing.T) {
	rt := policyRuntime(t, time.Minute)
	line := "git push 2>/dev/null; echo pushed"
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line})
	require.NoError(t, err)
	require.Equal(t, protocol.StateAwaitingApproval, st.State)
	require.Equal(t, protocol.ReasonApproval, st.Reason)
	require.NotNil(t, st.Approval)
	assert.Equal(t, "leaves the machine", st.Approval.Reason)
	assert.Contains(t, st.Approval.Command, "git push")

	other := "echo next"
	_, err = rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &other})
	require.Error(t, err)
	pe := protocol.AsError(err)
	assert.Equal(t, protocol.CodeSessionBusy, pe.Code, "the session is held while the command awaits approval")
	sum, ok := pe.Data.(protocol.ExecSummary)
	require.True(t, ok, "SESSION_BUSY carries the waiting command: %T", pe.Data)
	assert.Equal(t, protocol.StateAwaitingApproval, sum.State)

	_, err = rt.ExecApprove(agentCtx(), protocol.ExecApproveParams{ApprovalID: st.Approval.ApprovalID, Decision: "approve"})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeAuthFailed, protocol.AsError(err).Code, "the agent cannot approve its own command")

	waited := make(chan protocol.ExecStatus, 1)
	go func() {
		end, _ := rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
		waited <- end
	}()
	res, err := rt.ExecApprove(approverCtx(), protocol.ExecApproveParams{ApprovalID: st.Approval.ApprovalID, Decision: "approve", Reason: "fine"})
	require.NoError(t, err)
	assert.Equal(t, st.ExecID, res.ExecID)
	var end protocol.ExecStatus
	select {
	case end = <-waited:
	case <-time.After(20 * time.Second):
		t.Fatal("the approved command did not run")
	}
	assert.Equal(t, protocol.StateExited, end.State)
	require.NotNil(t, end.ExitCode)
	assert.Equal(t, 0, *end.ExitCode)
	assert.Equal(t, "pushed\n", end.Stdout)
	require.NotNil(t, end.Approval)
	assert.Equal(t, "approve", end.Approval.Decision)
	assert.Equal(t, "a person", end.Approval.Approver)
	assert.Equal(t, "fine", end.Approval.DecisionReason)
}

// TestApprovalDeniedAndTimedOut: a denial ends the command without running
// it (exit 126, reason denied; with check, COMMAND_DENIED); no decision
// within the approval timeout is a denial too (fail-closed).
func TestApprovalDeniedAndTimedOut(t *testing.T) {
	rt := policyRuntime(t, 400*time.Millisecond)
	dir := t.TempDir()
	mark := filepath.Join(dir, "pushed")
	line := "git push 2>/dev/null; touch " + mark

	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: "", Command: &line})
	require.NoError(t, err)
	require.Equal(t, protocol.StateAwaitingApproval, st.State)
	_, err = rt.ExecApprove(approverCtx(), protocol.ExecApproveParams{ApprovalID: st.Approval.ApprovalID, Decision: "deny", Reason: "not today"})
	require.NoError(t, err)
	end, err := rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
	require.NoError(t, err)
	assert.Equal(t, protocol.StateExited, end.State)
	assert.Equal(t, protocol.ReasonDenied, end.Reason)
	require.NotNil(t, end.ExitCode)
	assert.Equal(t, 126, *end.ExitCode)
	assert.Equal(t, "not today", end.Approval.DecisionReason)
	_, statErr := os.Stat(mark)
	assert.True(t, os.IsNotExist(statErr), "a denied command never ran")

	// Nobody decides: denied at the timeout, as not run.
	st, err = rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line, Check: true})
	require.NoError(t, err, "the first answer is the awaiting status, even with check")
	end, err = rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}, TimeoutMS: ptr(int64(20_000))})
	require.NoError(t, err)
	assert.Equal(t, protocol.ReasonDenied, end.Reason)
	assert.True(t, end.Approval.TimedOut, "no decision within the timeout is a denial")
	_, statErr = os.Stat(mark)
	assert.True(t, os.IsNotExist(statErr))

	// The session is free again.
	ok := "echo free"
	after, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &ok})
	require.NoError(t, err)
	assert.Equal(t, "free\n", after.Stdout)

	// exec.run with check waits for nothing: a denied command with check
	// reports COMMAND_DENIED once it is decided.
	bad := "rm -rf " + dir
	_, err = rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &bad, Check: true})
	assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code)
}

// TestApprovalOnAStream: exec.stream says the command awaits approval and
// then the decision, as exec.approval notifications, before its output.
func TestApprovalOnAStream(t *testing.T) {
	rt := policyRuntime(t, time.Minute)
	line := "git push 2>/dev/null; echo streamed"
	started, follow, err := rt.ExecStream(agentCtx(), protocol.ExecParams{Command: &line})
	require.NoError(t, err)
	var notes []any
	awaiting := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- follow(context.Background(), func(method string, params any) error {
			if n, ok := params.(protocol.ApprovalNotification); ok && n.State == protocol.StateAwaitingApproval {
				awaiting <- n.Approval.ApprovalID
			}
			notes = append(notes, params)
			return nil
		})
	}()
	var id string
	select {
	case id = <-awaiting:
	case <-time.After(10 * time.Second):
		t.Fatal("no exec.approval notification")
	}
	_, err = rt.ExecApprove(approverCtx(), protocol.ExecApproveParams{ApprovalID: id, Decision: "approve"})
	require.NoError(t, err)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the stream did not end")
	}
	require.GreaterOrEqual(t, len(notes), 3)
	first, ok := notes[0].(protocol.ApprovalNotification)
	require.True(t, ok)
	assert.Equal(t, started.StreamID, first.StreamID)
	second, ok := notes[1].(protocol.ApprovalNotification)
	require.True(t, ok)
	assert.Equal(t, protocol.StateRunning, second.State)
	assert.Equal(t, "approve", second.Approval.Decision)
	var out strings.Builder
	for _, n := range notes[2:] {
		if o, ok := n.(protocol.OutputNotification); ok {
			out.WriteString(o.Data)
		}
	}
	assert.Equal(t, "streamed\n", out.String())
	exit, ok := notes[len(notes)-1].(protocol.ExitNotification)
	require.True(t, ok)
	assert.Equal(t, 0, exit.ExitCode)
}

// TestPolicyOnTypedLines: lines typed with exec.input into a nested shell
// waiting at its prompt are checked as command lines: a denied one (or one
// that would need approval) is refused with nothing typed; an allowed one
// runs; text typed to a program that is not a shell is not a command line.
func TestPolicyOnTypedLines(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs bash for the nested shell:", err)
	}
	rt := policyRuntime(t, time.Minute)
	dir := t.TempDir()
	mark := filepath.Join(dir, "marker")
	require.NoError(t, os.WriteFile(mark, []byte("x"), 0o600))
	nested := "bash --norc --noprofile -i"
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &nested})
	require.NoError(t, err)
	require.Equal(t, protocol.StateWaitingInput, st.State, "the nested shell waits at its prompt")

	_, err = rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("rm -f " + mark), protocol.Key("Enter")}})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code)
	_, err = rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("git push origin\n")}})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code, "a line that needs approval cannot be typed past it")
	assert.Contains(t, protocol.AsError(err).Message, "exec.run")

	ok, err := rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("echo typed-ok"), protocol.Key("Enter")}})
	require.NoError(t, err)
	assert.Contains(t, ok.Stdout, "typed-ok")
	_, statErr := os.Stat(mark)
	assert.NoError(t, statErr, "the denied line never reached the shell")

	_, err = rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("exit"), protocol.Key("Enter")}})
	require.NoError(t, err)
	end, err := rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
	require.NoError(t, err)
	assert.Equal(t, protocol.StateExited, end.State)

	// Text for a program that is not a shell is not checked.
	reader := "read -r line; echo got:$line"
	st, err = rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &reader})
	require.NoError(t, err)
	require.Equal(t, protocol.StateWaitingInput, st.State)
	got, err := rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("rm -rf /"), protocol.Key("Enter")}, Until: &[]string{}})
	require.NoError(t, err)
	assert.Contains(t, got.Stdout, "got:rm -rf /\n", "typed as data, the line reached the program")
}

// TestTypeIntoGoesThroughTheRuntime: a person's typing in the console
// reaches the running command through the runtime, which audits it with
// the console's actor and the command's exec_id; at a password prompt it
// is a secret: masked in the output, never in the audit log.
func TestTypeIntoGoesThroughTheRuntime(t *testing.T) {
	var audit syncBuffer
	log := zerolog.New(&audit)
	rt := newRuntime(t, Options{Audit: &log})
	line := "printf 'Name: '; read n; printf 'Password: '; stty -echo; read pw; stty echo; echo; echo \"hello $n, $pw\""
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line})
	require.NoError(t, err)
	require.Equal(t, protocol.StateWaitingInput, st.State)
	console := protocol.WithCaller(context.Background(), protocol.Caller{Transport: "console", Actor: "console"})
	require.NoError(t, rt.TypeInto(console, st.SessionID, []byte("ada\r")))
	_, err = rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID})
	require.NoError(t, err)
	require.NoError(t, rt.TypeInto(console, st.SessionID, []byte("s3cret-pass\r")))
	end, err := rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
	require.NoError(t, err)
	assert.Contains(t, end.Stdout, "hello ada, ***", "the password typed at a no-echo prompt is masked")
	assert.NotContains(t, end.Stdout, "s3cret-pass")
	logged := audit.String()
	assert.Contains(t, logged, `"actor":"console"`)
	assert.Contains(t, logged, `"exec_id":"`+st.ExecID+`"`)
	assert.Contains(t, logged, `"secret":true`)
	assert.NotContains(t, logged, "s3cret-pass")
	assert.Error(t, rt.TypeInto(console, "no-such-session", []byte("x")))
}

// TestApprovalNotLeftForACommandThatCannotStart: a command the policy
// would ask about but that cannot start (a NUL byte no shell can run, or
// a busy session) leaves no approval pending for a person.
func TestApprovalNotLeftForACommandThatCannotStart(t *testing.T) {
	p, err := policy.Parse([]byte(testPolicy), "test-policy.yaml")
	require.NoError(t, err)
	approvals := approval.New(approval.Options{Timeout: time.Minute})
	rt := newRuntime(t, Options{Policy: policy.NewEvaluator(p), Approvals: approvals})
	bad := "git push \x00"
	_, err = rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &bad})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeInvalidParams, protocol.AsError(err).Code)
	busy := "sleep 30"
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &busy, YieldMS: ptr(int64(50))})
	require.NoError(t, err)
	push := "git push"
	_, err = rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &push})
	assert.Equal(t, protocol.CodeSessionBusy, protocol.AsError(err).Code)
	for _, in := range approvals.List() {
		assert.NotNil(t, in.Outcome, "no approval is left pending: %+v", in)
	}
	_, err = rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: st.ExecID, Signal: "KILL"})
	require.NoError(t, err)
}

// TestApprovalWithdrawnWhenTheSessionGoes: a command waiting for a
// person's approval whose session is destroyed never runs, and its
// approval is withdrawn at once rather than left for a person to decide
// about a session that no longer exists.
func TestApprovalWithdrawnWhenTheSessionGoes(t *testing.T) {
	p, err := policy.Parse([]byte(testPolicy), "test-policy.yaml")
	require.NoError(t, err)
	approvals := approval.New(approval.Options{Timeout: time.Minute})
	rt := newRuntime(t, Options{Policy: policy.NewEvaluator(p), Approvals: approvals})
	s, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{})
	require.NoError(t, err)
	push := "git push"
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: s.SessionID, Command: &push})
	require.NoError(t, err)
	require.NotNil(t, st.Approval, "git push waits for a person: %+v", st)
	// The command holds the session: only a forced destroy ends it.
	_, err = rt.SessionDestroy(agentCtx(), protocol.SessionDestroyParams{SessionID: s.SessionID, Force: true})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		for _, in := range approvals.List() {
			if in.Outcome == nil {
				return false
			}
		}
		return true
	}, 10*time.Second, 10*time.Millisecond, "the approval is still pending after its session was destroyed: %+v", approvals.List())
	in, err := approvals.Get(st.Approval.ApprovalID)
	require.NoError(t, err)
	assert.False(t, in.Outcome.Approved())
	assert.Contains(t, in.Outcome.Reason, "session")
}

// typedInputSetup is the typed-input tests' runtime under testPolicy, a
// marker file that rm would remove, and denied, which asserts an input
// was refused with COMMAND_DENIED and the marker is still there.
func typedInputSetup(t *testing.T) (*Runtime, string, func(*testing.T, string, error)) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs bash for the nested shell:", err)
	}
	rt := policyRuntime(t, time.Minute)
	mark := filepath.Join(t.TempDir(), "marker")
	require.NoError(t, os.WriteFile(mark, []byte("x"), 0o600))
	return rt, mark, func(t *testing.T, what string, err error) {
		t.Helper()
		require.Error(t, err, what)
		assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code, "%s: %v", what, err)
		_, statErr := os.Stat(mark)
		require.NoError(t, statErr, "%s: the marker was removed", what)
	}
}

// TestTypedLinesCheckedAsTheShellRunsThem: every way the helpers typed a
// denied line into a nested shell past the check is refused, with the
// marker file still there after each: a backslash continuation in one
// call, a line begun in one call and ended in the next, a DEL the
// terminal applies, secret input, a shell put in place of the session's
// with exec, and text typed ahead while the nested shell runs a command.
// A line a person could type still runs, and C-c throws a kept line away.
func TestTypedLinesCheckedAsTheShellRunsThem(t *testing.T) {
	rt, mark, denied := typedInputSetup(t)
	typeIn := func(id string, in ...protocol.InputItem) (protocol.ExecStatus, error) {
		return rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: id, Input: protocol.InputList(in)})
	}
	for _, nested := range []string{"bash --norc --noprofile -i", "bash --norc --noprofile"} {
		t.Run(nested, func(t *testing.T) {
			st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &nested})
			require.NoError(t, err)
			require.Equal(t, protocol.StateWaitingInput, st.State)
			id := st.ExecID

			_, err = typeIn(id, protocol.Text("rm \\\n -f "+mark+"\n"))
			denied(t, "a backslash continuation", err)
			_, err = typeIn(id, protocol.Text("r"), protocol.Text("m -f "+mark))
			require.NoError(t, err, "no line ended: nothing runs yet")
			_, err = typeIn(id, protocol.Key("Enter"))
			denied(t, "a line ended in a later call", err)
			_, err = typeIn(id, protocol.Key("C-u"))
			require.NoError(t, err, "C-u throws the line away")
			_, err = typeIn(id, protocol.Text("rx\x7fm -f "+mark+"\n"))
			denied(t, "a DEL the terminal applies", err)
			_, err = rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: id, Input: protocol.InputList{protocol.Text("rm -f " + mark + "\n")}, Secret: true})
			denied(t, "secret input", err)
			_, err = typeIn(id, protocol.Key("Up"), protocol.Key("Enter"))
			denied(t, "a history key", err)
			ok, err := rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: id, Input: protocol.InputList{protocol.Text("echo \\\n typed-$((1+1))\n")}, Until: &[]string{"match:typed-2"}})
			require.NoError(t, err, "a continued line that is allowed")
			assert.Contains(t, ok.Stdout, "typed-2")

			_, err = typeIn(id, protocol.Text("sleep 1\n"))
			require.NoError(t, err)
			_, err = typeIn(id, protocol.Text("rm -f "+mark+"\n"))
			denied(t, "typed ahead while the nested shell runs sleep", err)

			_, err = typeIn(id, protocol.Text("for f in "+mark+"; do\n"))
			require.NoError(t, err, "an open block runs nothing yet")
			_, err = typeIn(id, protocol.Text("rm -f \"$f\"; done\n"))
			denied(t, "the block the last line completes", err)
			if strings.HasSuffix(nested, "-i") {
				_, err = typeIn(id, protocol.Key("C-c"), protocol.Text("echo x\n"))
				denied(t, "text after C-c in one call, which the shell may read before the signal", err)
				_, err = typeIn(id, protocol.Key("C-c"))
				require.NoError(t, err)
				ok, err = rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: id, Input: protocol.InputList{protocol.Text("echo after-$((2+1))\n")}, Until: &[]string{"match:after-3"}})
				require.NoError(t, err, "C-c threw the open block away")
				assert.Contains(t, ok.Stdout, "after-3", "%+v", ok)
			}

			_, err = rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: id, Signal: "KILL"})
			require.NoError(t, err)
			_, err = rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: id, Until: &[]string{}})
			require.NoError(t, err)
		})
	}
	// A shell a command put in place of the session's: another one, or
	// the very same program and arguments.
	for _, line := range []string{"exec bash --norc --noprofile -i", "exec /bin/sh -i"} {
		t.Run(line, func(t *testing.T) {
			s, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: "/bin/sh"})
			require.NoError(t, err)
			st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: s.SessionID, Command: &line})
			require.NoError(t, err)
			require.Equal(t, protocol.StateWaitingInput, st.State)
			_, err = typeIn(st.ExecID, protocol.Text("rm -f "+mark+"\n"))
			denied(t, "a shell in place of the session's", err)
			_, err = rt.SessionDestroy(agentCtx(), protocol.SessionDestroyParams{SessionID: s.SessionID, Force: true})
			require.NoError(t, err)
		})
	}
	t.Run("a shell by another name", func(t *testing.T) {
		py := filepath.Join(t.TempDir(), "py")
		require.NoError(t, os.Symlink("/bin/bash", py))
		line := py + " --norc --noprofile -i"
		st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line})
		require.NoError(t, err)
		require.Equal(t, protocol.StateWaitingInput, st.State)
		_, err = typeIn(st.ExecID, protocol.Text("rm -f "+mark+"\n"))
		denied(t, "bash run as py", err)
		_, err = rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: st.ExecID, Signal: "KILL"})
		require.NoError(t, err)
		_, err = rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
		require.NoError(t, err)
	})
}

// TestAliasesCheckedOnLaterLines: an alias defined by one line, or given
// to the session in its state, is checked with its value where a later
// line uses it (`alias s=env`, then `s rm F`, removed F before); an alias
// that uses its own name (`alias ls='ls -F'`) is still allowed.
func TestAliasesCheckedOnLaterLines(t *testing.T) {
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("needs bash:", err)
	}
	rt := policyRuntime(t, time.Minute)
	mark := filepath.Join(t.TempDir(), "marker")
	require.NoError(t, os.WriteFile(mark, []byte("x"), 0o600))
	run := func(id, line string) (protocol.ExecStatus, error) {
		return rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: id, Command: &line})
	}
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		s, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: shell})
		require.NoError(t, err)
		_, err = run(s.SessionID, "alias s=env; alias ls='ls -F'")
		require.NoError(t, err)
		_, err = run(s.SessionID, "s rm -f "+mark)
		require.Error(t, err, shell)
		assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code, shell)
		st, err := run(s.SessionID, "ls -d /")
		require.NoError(t, err, shell)
		assert.Equal(t, "//\n", st.Stdout, "%s: the alias ran", shell)
	}
	// A state's alias that runs rm is refused where it is defined, at
	// session.create (TestPolicySeesEnvAndState); one that is harmless
	// alone is remembered, and checked where a later line uses it.
	_, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: "/bin/bash",
		State: &protocol.ShellState{Shell: "bash", Aliases: map[string]string{"tidy": "rm -f " + mark}}})
	require.Error(t, err, "a state whose alias runs rm")
	assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code)
	s, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: "/bin/bash",
		State: &protocol.ShellState{Shell: "bash", Aliases: map[string]string{"s": "env"}}})
	require.NoError(t, err)
	_, err = run(s.SessionID, "s rm -f "+mark)
	require.Error(t, err, "an alias the session's state gave it")
	assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code)
	f, err := rt.SessionFork(agentCtx(), protocol.SessionForkParams{SessionID: s.SessionID})
	require.NoError(t, err)
	_, err = run(f.SessionID, "s rm -f "+mark)
	require.Error(t, err, "an alias a fork carried")
	_, statErr := os.Stat(mark)
	assert.NoError(t, statErr, "the marker is still there")

	// A denied line defines no alias: ls stays ls.
	s, err = rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: "/bin/bash"})
	require.NoError(t, err)
	_, err = run(s.SessionID, "alias ls='rm -i'")
	require.Error(t, err)
	_, err = run(s.SessionID, "ls -d /")
	assert.NoError(t, err, "the denied alias was remembered")
}

// TestAwaitingApprovalHoldsTheSession: a command awaiting approval holds
// its session as a running one does, and everything says so: session.info
// and session.list say busy (they said idle), SESSION_BUSY says what to
// do with an approval (it said to answer with exec.input), destroy without
// force is refused (it destroyed the session), and once cancelled the
// command that never ran ends where the shell was (cwd was "").
func TestAwaitingApprovalHoldsTheSession(t *testing.T) {
	rt := policyRuntime(t, time.Minute)
	s, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: "/bin/sh", WorkingDir: "/usr"})
	require.NoError(t, err)
	line := "git push origin main"
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: s.SessionID, Command: &line})
	require.NoError(t, err)
	require.Equal(t, protocol.StateAwaitingApproval, st.State)

	in, err := rt.SessionInfo(agentCtx(), protocol.SessionRef{SessionID: s.SessionID})
	require.NoError(t, err)
	assert.Equal(t, "busy", in.State)
	list, err := rt.SessionList(agentCtx(), protocol.SessionListParams{})
	require.NoError(t, err)
	for _, l := range list.Sessions {
		if l.SessionID == s.SessionID {
			assert.Equal(t, "busy", l.State)
		}
	}
	other := "echo next"
	_, err = rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: s.SessionID, Command: &other})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeSessionBusy, protocol.AsError(err).Code)
	assert.Contains(t, err.Error(), "approval")
	assert.NotContains(t, err.Error(), "exec.input")
	_, err = rt.SessionDestroy(agentCtx(), protocol.SessionDestroyParams{SessionID: s.SessionID})
	require.Error(t, err, "destroy without force")
	assert.Equal(t, protocol.CodeSessionBusy, protocol.AsError(err).Code)
	assert.Contains(t, err.Error(), `"force": true`, "says how to destroy it anyway")

	res, err := rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: st.ExecID})
	require.NoError(t, err)
	assert.Equal(t, protocol.ExecCancelResult{Canceled: true}, res, "withdrawn: no signal was sent")
	end, err := rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
	require.NoError(t, err)
	assert.Equal(t, protocol.StateExited, end.State)
	assert.Equal(t, "/usr", end.Cwd, "it never ran: the shell is where it was")
	require.NotNil(t, end.ExitCode)
	assert.Equal(t, 126, *end.ExitCode, "a command that never ran, not one interrupted (130)")
	assert.True(t, end.Canceled)
	in, err = rt.SessionInfo(agentCtx(), protocol.SessionRef{SessionID: s.SessionID})
	require.NoError(t, err)
	assert.Equal(t, "idle", in.State)
}

// TestTypedInputTheTerminalWouldRemap: what reviewers typed past the
// typed-line check is refused: a character `stty` made special (erase q,
// then "qqqqqrm -f M" was checked as echo's argument), readline's `bind`,
// C-d handing a half-typed line to the shell, an alias defined in the
// nested shell then used there, and bash's history expansion (`!!:1-$`
// after `echo rm -f M`).
func TestTypedInputTheTerminalWouldRemap(t *testing.T) {
	rt, mark, denied := typedInputSetup(t)
	for _, nested := range []string{"bash --norc --noprofile -i", "sh -i"} {
		t.Run(nested, func(t *testing.T) {
			start := func(line string) (string, func(in ...protocol.InputItem) error) {
				st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line})
				require.NoError(t, err)
				require.Equal(t, protocol.StateWaitingInput, st.State)
				return st.ExecID, func(in ...protocol.InputItem) error {
					_, err := rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList(in)})
					return err
				}
			}
			end := func(id string) {
				_, err := rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: id, Signal: "KILL"})
				require.NoError(t, err)
				_, err = rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: id, Until: &[]string{}})
				require.NoError(t, err)
			}
			id, typeIn := start("stty erase q; " + nested)
			denied(t, "a character stty made the erase", typeIn(protocol.Text("echo qqqqqrm -f "+mark+"\n")))
			end(id)
			run := "stty sane"
			_, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &run})
			require.NoError(t, err)

			id, typeIn = start(nested)
			denied(t, "stty typed", typeIn(protocol.Text("stty erase q\n")))
			denied(t, "bind", typeIn(protocol.Text("bind '\"z\":\"rm -f "+mark+"\\n\"'\n")))
			denied(t, "C-d after text", typeIn(protocol.Text("rm -f "+mark), protocol.Key("C-d"), protocol.Key("C-d")))
			require.NoError(t, typeIn(protocol.Key("C-u")))
			require.NoError(t, typeIn(protocol.Text("alias s=env\n")))
			denied(t, "an alias defined in the nested shell", typeIn(protocol.Text("s rm -f "+mark+"\n")))
			if strings.HasPrefix(nested, "bash") {
				require.NoError(t, typeIn(protocol.Text("echo rm -f "+mark+"\n")))
				denied(t, "history expansion", typeIn(protocol.Text("!!:1-$\n")))
				denied(t, "quick substitution", typeIn(protocol.Text("^echo ^\n")))
				require.NoError(t, typeIn(protocol.Text("test 1 != 2 && echo ok\n")), "a ! that expands nothing")
			}
			end(id)
		})
	}
}

// TestTypedInputBounded: what is typed into a nested shell under a policy
// is bounded, in one call and in one open statement (an open quote and
// 40,000 lines took 15 s of CPU, and 16 MiB calls could pin a core for
// hours).
func TestTypedInputBounded(t *testing.T) {
	rt, _, denied := typedInputSetup(t)
	line := "bash --norc --noprofile"
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line})
	require.NoError(t, err)
	require.Equal(t, protocol.StateWaitingInput, st.State)
	typeIn := func(in ...protocol.InputItem) error {
		_, err := rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList(in)})
		return err
	}
	denied(t, "a big call", typeIn(protocol.Text("echo '\n"+strings.Repeat("x\n", 40_000))))
	require.NoError(t, typeIn(protocol.Text("echo '\n")))
	line200 := strings.Repeat("x", 199) + "\n"
	for range 4 {
		if err = typeIn(protocol.Text(strings.Repeat(line200, 30))); err != nil {
			break
		}
	}
	denied(t, "an open statement grown past the bound", err)
	_, err = rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: st.ExecID, Signal: "KILL"})
	require.NoError(t, err)
}

// TestTypedIntoZsh: a nested zsh with its line editor takes checked
// input (its terminal modes, inlcr among them, read as remapped and every
// input was refused), and a denied line is still refused there.
func TestTypedIntoZsh(t *testing.T) {
	if _, err := osexec.LookPath("zsh"); err != nil {
		t.Skip("needs zsh:", err)
	}
	rt, mark, denied := typedInputSetup(t)
	line := "zsh -f"
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line})
	require.NoError(t, err)
	require.Equal(t, protocol.StateWaitingInput, st.State)
	ok, err := rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("echo typed-$((1+1))\n")}, Until: &[]string{"match:typed-2"}})
	require.NoError(t, err)
	assert.Contains(t, ok.Stdout, "typed-2")
	_, err = rt.ExecInput(agentCtx(), protocol.ExecInputParams{ExecID: st.ExecID, Input: protocol.InputList{protocol.Text("rm -f " + mark + "\n")}})
	denied(t, "rm typed into zsh", err)
	_, err = rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: st.ExecID, Signal: "KILL"})
	require.NoError(t, err)
}

// TestPolicySeesEnvAndState: what a command gets through exec.run's env,
// and what a session gets from the state it is created with, are checked
// as the lines that would set them. {"env": {"BASH_ENV": f}} ran f's rm
// past a policy denying it, and a state's function `ls` that ran rm was
// defined unchecked.
func TestPolicySeesEnvAndState(t *testing.T) {
	if _, err := osexec.LookPath("bash"); err != nil {
		t.Skip("needs bash:", err)
	}
	p, err := policy.Parse([]byte("default: allow\nunknown: deny\nrules:\n  - match: {program: [rm]}\n    action: deny\n    reason: no deleting\n"), "p.yaml")
	require.NoError(t, err)
	var logged syncBuffer
	audit := zerolog.New(&logged)
	rt := newRuntime(t, Options{Policy: policy.NewEvaluator(p), Approvals: approval.New(approval.Options{}), Audit: &audit})
	ctx := agentCtx()
	dir := t.TempDir()
	victim := filepath.Join(dir, "victim")
	require.NoError(t, os.WriteFile(victim, nil, 0o644))
	envFile := filepath.Join(dir, "envf")
	require.NoError(t, os.WriteFile(envFile, []byte("rm -f "+victim+"\n"), 0o644))

	s, err := rt.SessionCreate(ctx, protocol.SessionCreateParams{Shell: "/bin/bash"})
	require.NoError(t, err)
	cmd := "bash -c true"
	_, err = rt.ExecRun(ctx, protocol.ExecParams{SessionID: s.SessionID, Command: &cmd, Env: map[string]string{"BASH_ENV": envFile}})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code)
	assert.FileExists(t, victim, "nothing ran")
	// The session's own env is checked too, and no value is logged.
	_, err = rt.SessionCreate(ctx, protocol.SessionCreateParams{Shell: "/bin/bash", Env: map[string]string{"BASH_ENV": envFile}})
	require.Error(t, err)
	assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code)
	rm := "rm -f " + victim
	_, err = rt.ExecRun(ctx, protocol.ExecParams{SessionID: s.SessionID, Command: &rm, Env: map[string]string{"GH_TOKEN": "ghp_SECRETSECRET"}})
	require.Error(t, err)
	assert.Contains(t, logged.String(), "rm -f", "the denial is audited")
	assert.NotContains(t, logged.String(), "ghp_SECRETSECRET", "env values are not logged")
	echo := `echo "$GREETING"`
	st, err := rt.ExecRun(ctx, protocol.ExecParams{SessionID: s.SessionID, Command: &echo, Env: map[string]string{"GREETING": "it's fine"}})
	require.NoError(t, err, "an ordinary variable is allowed")
	assert.Equal(t, "it's fine\n", st.Stdout)

	state := func(fn, alias, prompt string) *protocol.ShellState {
		st := &protocol.ShellState{Shell: "bash", Cwd: dir, Env: map[string]string{"PATH": os.Getenv("PATH")}}
		if fn != "" {
			st.Functions = map[string]string{"ls": fn}
		}
		if alias != "" {
			st.Aliases = map[string]string{"ll": alias}
		}
		if prompt != "" {
			st.Vars = []protocol.StateVar{{Name: "PROMPT_COMMAND", Kind: "scalar", Value: prompt}}
		}
		return st
	}
	for _, bad := range []*protocol.ShellState{
		state("ls () \n{ \n    rm -v \"$@\"\n}", "", ""),
		state("", "rm -rf", ""),
	} {
		_, err := rt.SessionCreate(ctx, protocol.SessionCreateParams{Shell: "/bin/bash", State: bad})
		require.Error(t, err)
		assert.Equal(t, protocol.CodeCommandDenied, protocol.AsError(err).Code, "%+v", bad)
	}
	assert.FileExists(t, victim)
	ok, err := rt.SessionCreate(ctx, protocol.SessionCreateParams{Shell: "/bin/bash", State: state("ls () \n{ \n    command ls -F \"$@\"\n}", "ls -l", "")})
	require.NoError(t, err, "a state the policy allows is applied")
	ls := "ls " + dir
	out, err := rt.ExecRun(ctx, protocol.ExecParams{SessionID: ok.SessionID, Command: &ls})
	require.NoError(t, err)
	assert.Contains(t, out.Stdout, "envf")
}

// TestApprovalKeyCoversTheWholeCommand: a retry under an approval key
// gets the approval only for the same whole command: one that adds a
// curl after the approved git push is asked anew (the approval matched
// on git push alone, and the curl ran unasked).
func TestApprovalKeyCoversTheWholeCommand(t *testing.T) {
	p, err := policy.Parse([]byte(testPolicy), "test-policy.yaml")
	require.NoError(t, err)
	rt := newRuntime(t, Options{Policy: policy.NewEvaluator(p), Approvals: approval.New(approval.Options{Timeout: time.Minute, Remember: time.Minute})})
	keyed := protocol.WithCaller(context.Background(), protocol.Caller{Transport: "test", Actor: "agent", ApprovalKey: "gateway:k1"})
	mark := filepath.Join(t.TempDir(), "M")
	first := "git push 2>/dev/null; echo first"
	st, err := rt.ExecRun(keyed, protocol.ExecParams{Command: &first})
	require.NoError(t, err)
	require.Equal(t, protocol.StateAwaitingApproval, st.State)
	_, err = rt.ExecApprove(approverCtx(), protocol.ExecApproveParams{ApprovalID: st.Approval.ApprovalID, Decision: "approve"})
	require.NoError(t, err)
	end, err := rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
	require.NoError(t, err)
	assert.Equal(t, "first\n", end.Stdout)

	second := "git push 2>/dev/null; curl -s file:///dev/null; touch " + mark
	st, err = rt.ExecRun(keyed, protocol.ExecParams{Command: &second})
	require.NoError(t, err)
	require.NotNil(t, st.Approval)
	assert.Empty(t, st.Approval.Decision, "another command is asked anew, not given the first one's approval")
	_, err = rt.ExecCancel(agentCtx(), protocol.ExecCancelParams{ExecID: st.ExecID})
	require.NoError(t, err)
	_, err = rt.ExecWait(agentCtx(), protocol.ExecWaitParams{ExecID: st.ExecID, Until: &[]string{}})
	require.NoError(t, err)
	_, statErr := os.Stat(mark)
	assert.True(t, os.IsNotExist(statErr), "nothing of it ran")
}

// TestEnvValuesUnderDefaultDeny: under a policy that denies what no rule
// allows, ordinary env values pass whatever they hold (a newline, a tab,
// an escape, "&>"): they were denied, the check reading their quoting as
// code.
func TestEnvValuesUnderDefaultDeny(t *testing.T) {
	p, err := policy.Parse([]byte("default: deny\nunknown: deny\nrules:\n  - match: {program: [echo]}\n    action: allow\n"), "p.yaml")
	require.NoError(t, err)
	rt := newRuntime(t, Options{Policy: policy.NewEvaluator(p), Approvals: approval.New(approval.Options{})})
	env := map[string]string{"MSG": "line1\nline2", "TAB": "a\tb", "ESC": "\x1b[1m", "AMP": "a &> b", "Q": "it's $'x'", "PATH": os.Getenv("PATH")}
	s, err := rt.SessionCreate(agentCtx(), protocol.SessionCreateParams{Shell: "/bin/sh", Env: env})
	require.NoError(t, err, "session.create's env")
	echo := `echo "$AMP"`
	st, err := rt.ExecRun(agentCtx(), protocol.ExecParams{SessionID: s.SessionID, Command: &echo, Env: env})
	require.NoError(t, err, "exec.run's env")
	assert.Equal(t, "a &> b\n", st.Stdout)
}

// TestAskWithNoApproverDeniedAtOnce: with Options.NoApprover (trl stdio,
// a daemon no approver can reach) a command the policy asks about is
// COMMAND_DENIED at once with that reason; it waited out the approval
// timeout (5 minutes) with nobody to decide.
func TestAskWithNoApproverDeniedAtOnce(t *testing.T) {
	p, err := policy.Parse([]byte(testPolicy), "test-policy.yaml")
	require.NoError(t, err)
	rt := newRuntime(t, Options{Policy: policy.NewEvaluator(p), Approvals: approval.New(approval.Options{Timeout: time.Hour}),
		NoApprover: "nothing here can approve"})
	mark := filepath.Join(t.TempDir(), "pushed")
	line := "git push 2>/dev/null; touch " + mark
	start := time.Now()
	_, err = rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &line})
	pe := protocol.AsError(err)
	require.NotNil(t, pe)
	assert.Equal(t, protocol.CodeCommandDenied, pe.Code)
	assert.Contains(t, pe.Message, "leaves the machine; no one can approve it here: nothing here can approve")
	assert.Less(t, time.Since(start), 10*time.Second)
	_, statErr := os.Stat(mark)
	assert.True(t, os.IsNotExist(statErr), "nothing ran")
	ok := "echo free"
	after, err := rt.ExecRun(agentCtx(), protocol.ExecParams{Command: &ok})
	require.NoError(t, err)
	assert.Equal(t, "free\n", after.Stdout, "the session is free")
}
