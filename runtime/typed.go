package runtime

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"unicode"

	"mvdan.cc/sh/v3/syntax"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/internal/nesting"
	"github.com/trl-project/trl/internal/terminput"
	"github.com/trl-project/trl/internal/termwait"
	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/protocol"
)

// Under a command policy, what exec.input types where a shell would run it
// is checked as command lines (SPEC §16): into a shell that reads at its
// prompt (a nested `bash`, or a shell a command put in place of the
// session's with `exec`), and typed ahead while nothing reads but a
// shell leads the terminal's foreground job. A shell runs a statement
// when the line that completes it is typed, so the check follows the
// shell, not the call:
//
//   - text typed without a line end waits in the terminal: it is kept and
//     checked with the rest of its line when a later call ends it (`git `,
//     then `push --force origin main` and Enter, was two harmless lines);
//   - a line continued onto the next (a trailing backslash, an open quote,
//     block or here-document) is kept until its statement is complete,
//     which is then checked whole (`git \` and ` push --force` ran);
//   - only plain text, Enter, C-c (which throws the statement away), C-u
//     (the line) and C-d can be typed there: the terminal's erase and kill characters, line
//     editing, completion and history keys would make a line the check
//     did not see (`rx` DEL `m F` ran rm), so they are refused;
//   - secret input is checked too; only a shell's `read -s` (a password
//     read: canonical mode without echo) and a program that is no shell
//     take what is typed as data.
//
// A refused call types nothing and leaves what was kept as it was.

// typedText is what was typed into one command's terminal under a policy
// that its shell has not run yet.
type typedText struct {
	line string // typed, its line not yet ended
	stmt string // ended lines of a statement not yet complete
}

// inputReader is who will read what exec.input types into c: the shell
// it must be checked for (comm, "" when it is data for a program or a
// password), or ok false when that cannot be told.
func (rt *Runtime) inputReader(c *exec.Job) (comm string, ok bool) {
	s := c.Session()
	if s == nil {
		return "", false
	}
	st, err := s.InputWait()
	if err != nil {
		return "", false
	}
	shellPID := s.Info().PID
	// trlShell: the session's own shell, not replaced by an exec, reads
	// only with its `read` builtin, whose input is data for the command.
	trlShell := func(pid int) bool { return pid == shellPID && !s.Replaced() }
	if st.Waiting {
		if st.Kind == termwait.KindPassword || !shells[st.Reader.Comm] || trlShell(st.Reader.Pid) {
			return "", true // a password read (`read -s`), or data for a program
		}
		return st.Reader.Comm, true
	}
	// Nothing reads: typed ahead, it goes to whoever reads next. That may
	// be a shell the foreground job runs under (a nested `bash -i` whose
	// `sleep` leads the job), once its command is done.
	pid := st.Foreground
	for range 32 {
		if pid <= 1 || trlShell(pid) {
			return "", true
		}
		comm, ppid, ok := procParent(pid)
		if !ok {
			return "", true
		}
		if shells[comm] {
			return comm, true
		}
		if pid == shellPID {
			return "", true
		}
		pid = ppid
	}
	return "", true
}

// procParent reads pid's command name and parent from /proc/PID/stat.
func procParent(pid int) (comm string, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, false
	}
	open, end := strings.IndexByte(string(b), '('), strings.LastIndexByte(string(b), ')')
	if open < 0 || end < open {
		return "", 0, false
	}
	f := strings.Fields(string(b[end+1:])) // state, ppid, …
	if len(f) < 2 {
		return "", 0, false
	}
	ppid, err = strconv.Atoi(f[1])
	return string(b[open+1 : end]), ppid, err == nil
}

// admitInput checks what exec.input types into c (see above). It
// returns COMMAND_DENIED when a statement it completes is denied or would
// need an approval (typed input cannot wait for a person), or when it
// holds a key or character that cannot be checked.
func (rt *Runtime) admitInput(ctx context.Context, c *exec.Job, items []terminput.Item, secret bool) error {
	if rt.opts.Policy == nil || rt.opts.Policy.Policy() == nil {
		return nil
	}
	comm, ok := rt.inputReader(c)
	if !ok {
		return nil
	}
	if comm == "" {
		rt.forgetTyped(c) // a program took the terminal's input as data
		return nil
	}
	rt.typedMu.Lock()
	defer rt.typedMu.Unlock()
	t := rt.typed[c]
	var stmts []string
	endLine := func() {
		full := t.stmt + t.line + "\n"
		t.line = ""
		if incomplete(full) {
			t.stmt = full
			return
		}
		t.stmt = ""
		if strings.TrimSpace(full) != "" {
			stmts = append(stmts, strings.TrimSuffix(full, "\n"))
		}
	}
	for i, it := range items {
		switch it.Kind {
		case terminput.Text, terminput.Paste:
			for _, r := range it.Value {
				switch {
				case r == '\n' || r == '\r':
					endLine()
				case unicode.IsPrint(r) || r == ' ':
					t.line += string(r)
				default:
					return uncheckable(comm, fmt.Sprintf("the control character %U", r))
				}
			}
		case terminput.Key:
			switch it.Value {
			case "Enter", "C-m", "C-j":
				endLine()
			case "C-c":
				if i < len(items)-1 {
					// The shell throws the statement away when it handles
					// the signal, which may be after it has read what
					// follows in the same write (a test saw it join the
					// open block).
					return protocol.Errorf(protocol.CodeCommandDenied, "under the command policy, C-c typed where %s would run a line must come last in its exec.input: the shell may read what follows before it throws its statement away; nothing was typed. Send the rest in the next call", comm)
				}
				t = typedText{} // the shell throws the statement away
			case "C-u":
				// The terminal's kill character, and readline's kill to
				// the start of the line: the cursor is at its end, no key
				// that moves it being allowed.
				t.line = ""
			case "C-d":
			default:
				return uncheckable(comm, "the key "+it.Value)
			}
		case terminput.EOF:
		}
	}
	caller := protocol.CallerFrom(ctx)
	s := c.Session()
	for _, l := range stmts {
		d := rt.opts.Policy.Evaluate(policy.Input{Line: l, Cwd: s.Info().WorkingDir, Session: sessionName(s), Actor: caller.Actor, Aliases: s.Aliases()})
		var msg string
		switch d.Action {
		case policy.Deny:
			msg = "the command policy denies this line typed into " + comm + " (" + d.RuleName + "): " + d.Reason + "; nothing was typed"
		case policy.Ask:
			msg = "this line typed into " + comm + " needs a person's approval (" + d.RuleName + ": " + d.Reason + "); nothing was typed. Leave the nested shell and run it with exec.run, where it can wait for an approval"
		default:
			continue
		}
		audited := l
		if secret {
			audited = "(secret input)"
		}
		rt.auditDecision(s, caller.Actor, audited, d, "denied", nil)
		metrics.Get().PolicyDecision(d.Action.String(), "denied")
		return &protocol.Error{Code: protocol.CodeCommandDenied, Message: msg,
			Data: protocol.PolicyDecision{Rule: d.RuleName, Reason: d.Reason, Dangerous: d.Dangerous, Command: d.Command}}
	}
	if t == (typedText{}) {
		delete(rt.typed, c)
	} else {
		rt.typed[c] = t
	}
	return nil
}

// uncheckable is the refusal of input the policy cannot check.
func uncheckable(comm, what string) error {
	return protocol.Errorf(protocol.CodeCommandDenied, "under the command policy, what is typed where %s would run it must be plain text, Enter, C-c, C-u or C-d: %s could edit, complete or recall a line the policy did not see; nothing was typed. Run commands with exec.run", comm, what)
}

// incomplete reports whether a shell that read text would wait for more
// before it runs anything: a line continued with a backslash, or an open
// quote, block, substitution or here-document.
func incomplete(text string) bool {
	body := strings.TrimSuffix(text, "\n")
	n := len(body) - len(strings.TrimRight(body, `\`))
	if n%2 == 1 {
		return true
	}
	if nesting.TooDeep(text) {
		return false // not parsed: checked as it is (the unknown action)
	}
	_, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(text), "")
	return syntax.IsIncomplete(err)
}

// forgetTyped drops what was kept of c's typed text.
func (rt *Runtime) forgetTyped(c *exec.Job) {
	rt.typedMu.Lock()
	delete(rt.typed, c)
	rt.typedMu.Unlock()
}
