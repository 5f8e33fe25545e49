package runtime

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

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
	// dirty: an input reached the terminal only in part (its write
	// failed), so the shell's line is not known.
	dirty bool
}

// inputReader is who will read what exec.input types into c: the shell
// it must be checked for (comm, "" when it is data for a program or a
// password), or ok false when that cannot be told.
func (rt *Runtime) inputReader(c *exec.Job) (comm string, pid int, ok bool) {
	s := c.Session()
	if s == nil {
		return "", 0, false
	}
	st, err := s.InputWait()
	if err != nil {
		return "", 0, false
	}
	shellPID := s.Info().PID
	// trlShell: the session's own shell, not replaced by an exec, reads
	// only with its `read` builtin, whose input is data for the command.
	trlShell := func(pid int) bool { return pid == shellPID && !s.Replaced() }
	if st.Waiting {
		if st.Kind == termwait.KindPassword || !isShell(st.Reader.Pid, st.Reader.Comm) || trlShell(st.Reader.Pid) {
			return "", 0, true // a password read (`read -s`), or data for a program
		}
		return st.Reader.Comm, st.Reader.Pid, true
	}
	// Nothing reads: typed ahead, it goes to whoever reads next. That may
	// be a shell the foreground job runs under (a nested `bash -i` whose
	// `sleep` leads the job), once its command is done.
	pid = st.Foreground
	if pid == 0 {
		// The sample stopped early (output or input not yet read): ask
		// the terminal itself.
		if pid, err = s.Foreground(); err != nil {
			return "", 0, false
		}
	}
	for range 32 {
		if pid <= 1 || trlShell(pid) {
			return "", 0, true
		}
		comm, ppid, ok := termwait.Parent(pid)
		if !ok {
			return "", 0, true
		}
		if isShell(pid, comm) {
			return comm, pid, true
		}
		if pid == shellPID {
			return "", 0, true
		}
		pid = ppid
	}
	return "", 0, true
}

// isShell reports whether process pid, named comm, is a shell: by its
// name, or by the program it runs (a shell run through a link of another
// name, `ln -s /bin/bash py; ./py -i`, is named py).
func isShell(pid int, comm string) bool {
	if shells[comm] {
		return true
	}
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	return err == nil && shells[path.Base(exe)]
}

// admitInput checks what exec.input types into c (see above). It
// returns COMMAND_DENIED when a statement it completes is denied or would
// need an approval (typed input cannot wait for a person), or when it
// holds a key or character that cannot be checked. Otherwise it returns
// done, which the caller calls once it has written the input (ok: all of
// it): only then is what was typed kept as the shell's, and until then no
// other input to c is checked (an input checked second but written first
// would make a line no check saw).
func (rt *Runtime) admitInput(ctx context.Context, c *exec.Job, items []terminput.Item, secret bool) (done func(ok bool), err error) {
	done = func(bool) {}
	if rt.opts.Policy == nil || rt.opts.Policy.Policy() == nil {
		return done, nil
	}
	comm, reader, ok := rt.inputReader(c)
	if !ok {
		return done, protocol.Errorf(protocol.CodeCommandDenied, "under the command policy, input is typed only where trl can tell who reads it, and it cannot now; nothing was typed")
	}
	if comm == "" {
		rt.forgetTyped(c) // a program took the terminal's input as data
		return done, nil
	}
	s := c.Session()
	modes, err := s.TerminalModes()
	if err != nil {
		return done, protocol.Errorf(protocol.CodeCommandDenied, "under the command policy, input is typed into %s only while the terminal's modes can be read: %v; nothing was typed", comm, err)
	}
	if modes.Remaps {
		return done, uncheckable(comm, "the terminal's dropping of CR (stty igncr; stty sane restores it)")
	}
	unlock := rt.lockInput(c)
	rt.typedMu.Lock()
	t := rt.typed[c]
	rt.typedMu.Unlock()
	if t.dirty && !(len(items) == 1 && items[0].Kind == terminput.Key && items[0].Value == "C-c") {
		unlock()
		return done, protocol.Errorf(protocol.CodeCommandDenied, "earlier input reached %s only in part, so what its line holds is not known: type C-c alone first to throw it away; nothing was typed", comm)
	}
	typed := 0
	for _, it := range items {
		typed += len(it.Value)
	}
	if typed > maxTyped {
		unlock()
		return done, protocol.Errorf(protocol.CodeCommandDenied, "under the command policy, at most %d bytes are typed into %s in one call (each line is checked as the shell will run it); nothing was typed. Run long scripts with exec.run", maxTyped, comm)
	}
	var stmts []string
	long := false
	endLine := func() {
		full := t.stmt + t.line + "\n"
		t.line = ""
		if len(full) > maxTyped {
			long = true
			return
		}
		if incomplete(full) {
			t.stmt = full
			return
		}
		t.stmt = ""
		if strings.TrimSpace(full) != "" {
			stmts = append(stmts, strings.TrimSuffix(full, "\n"))
		}
	}
	refuse := func(err error) (func(bool), error) {
		unlock()
		return func(bool) {}, err
	}
	for i, it := range items {
		switch it.Kind {
		case terminput.Text, terminput.Paste:
			for _, r := range it.Value {
				switch {
				case r == '\n' || r == '\r':
					endLine()
				case r < utf8.RuneSelf && bytes.IndexByte(modes.Special, byte(r)) >= 0:
					return refuse(uncheckable(comm, fmt.Sprintf("%q, which the terminal treats as a special character (stty; stty sane restores it),", r)))
				case unicode.IsPrint(r) || r == ' ':
					t.line += string(r)
				default:
					return refuse(uncheckable(comm, fmt.Sprintf("the control character %U", r)))
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
					return refuse(protocol.Errorf(protocol.CodeCommandDenied, "under the command policy, C-c typed where %s would run a line must come last in its exec.input: the shell may read what follows before it throws its statement away; nothing was typed. Send the rest in the next call", comm))
				}
				t = typedText{} // the shell throws the statement away
			case "C-u":
				// The terminal's kill character, and readline's kill to
				// the start of the line: the cursor is at its end, no key
				// that moves it being allowed.
				t.line = ""
			case "C-d":
				if t.line != "" {
					// The terminal hands a half-typed line to the shell,
					// which runs it at the end of its input.
					return refuse(uncheckable(comm, "C-d after text on the line"))
				}
			default:
				return refuse(uncheckable(comm, "the key "+it.Value))
			}
		case terminput.EOF:
			if t.line != "" {
				return refuse(uncheckable(comm, "the end-of-file character after text on the line"))
			}
		}
	}
	if long || len(t.line) > maxTyped {
		return refuse(protocol.Errorf(protocol.CodeCommandDenied, "under the command policy, a statement typed into %s may be at most %d bytes (an open quote, block or here-document keeps it open); nothing was typed. Type C-c to throw it away, and run long scripts with exec.run", comm, maxTyped))
	}
	caller := protocol.CallerFrom(ctx)
	var aliases []map[string]string
	for _, l := range stmts {
		if prog := remapper(l); prog != "" {
			return refuse(uncheckable(comm, prog+", which changes what the keys typed next do,"))
		}
		if why := readsOtherwise(comm, reader, l); why != "" {
			return refuse(uncheckable(comm, why))
		}
		d := rt.opts.Policy.Evaluate(policy.Input{Line: l, Cwd: s.Info().WorkingDir, Session: sessionName(s), Actor: caller.Actor, Aliases: s.Aliases()})
		var msg string
		switch d.Action {
		case policy.Deny:
			msg = "the command policy denies this line typed into " + comm + " (" + d.RuleName + "): " + d.Reason + "; nothing was typed"
		case policy.Ask:
			msg = "this line typed into " + comm + " needs a person's approval (" + d.RuleName + ": " + d.Reason + "); nothing was typed. Leave the nested shell and run it with exec.run, where it can wait for an approval"
		default:
			aliases = append(aliases, d.Aliases)
			continue
		}
		audited := l
		if secret {
			audited = "(secret input)"
		}
		rt.auditDecision(s, caller.Actor, audited, d, "denied", nil)
		metrics.Get().PolicyDecision(d.Action.String(), "denied")
		return refuse(&protocol.Error{Code: protocol.CodeCommandDenied, Message: msg,
			Data: protocol.PolicyDecision{Rule: d.RuleName, Reason: d.Reason, Dangerous: d.Dangerous, Command: d.Command}})
	}
	return func(ok bool) {
		defer unlock()
		if !ok {
			// Some of it may have reached the shell: its line is not
			// known any more.
			t = typedText{dirty: true}
		}
		for _, a := range aliases {
			// Aliases the nested shell now has; the session's map stands
			// for every shell in it (stricter, never looser).
			s.NoteAliases(a)
		}
		rt.typedMu.Lock()
		if t == (typedText{}) {
			delete(rt.typed, c)
		} else {
			rt.typed[c] = t
		}
		rt.typedMu.Unlock()
	}, nil
}

// remapper is the program of a statement in line that changes what typed
// keys do in the shell that runs it (readline's bind, the terminal's
// stty), or "".
func remapper(line string) string {
	if nesting.TooDeep(line) {
		return ""
	}
	f, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(line), "")
	if err != nil {
		return ""
	}
	found := ""
	syntax.Walk(f, func(n syntax.Node) bool {
		if ce, ok := n.(*syntax.CallExpr); ok && len(ce.Args) > 0 && found == "" {
			switch w := ce.Args[0].Lit(); w {
			case "bind", "stty", "\\bind", "builtin":
				if w == "builtin" && (len(ce.Args) < 2 || ce.Args[1].Lit() != "bind") {
					break
				}
				found = strings.TrimPrefix(w, "\\")
				if found == "builtin" {
					found = "bind"
				}
			}
		}
		return found == ""
	})
	return found
}

// readsOtherwise says why shell comm (process pid) would read typed line
// l otherwise than the policy's grammar does, or "": history expansion in
// bash and zsh (`!!:1-$` or `^a^b` builds a line from earlier ones), zsh
// at its prompt taking # for a word and r for "run the last command
// again", and a byte over 0x7f in a shell whose locale is not UTF-8
// (readline reads it as Meta and a key: ® is M-. , yank-last-arg).
func readsOtherwise(comm string, pid int, l string) string {
	zsh := comm == "zsh"
	if comm == "bash" || comm == "rbash" || zsh {
		if strings.HasPrefix(strings.TrimSpace(l), "^") {
			return "a line beginning with ^ (history substitution)"
		}
		for i := 0; i < len(l); i++ {
			if l[i] == '!' && i+1 < len(l) && !strings.ContainsRune(" 	=(", rune(l[i+1])) {
				return "! followed by a word (history expansion)"
			}
		}
	}
	if zsh {
		if strings.Contains(l, "#") {
			return "# (zsh at its prompt takes it for a word, not a comment)"
		}
		if f := strings.Fields(l); len(f) > 0 && f[0] == "r" {
			return "r (zsh runs a command from its history)"
		}
	}
	for i := 0; i < len(l); i++ {
		if l[i] >= utf8.RuneSelf {
			if !utf8Locale(pid) {
				return "a character that is not ASCII, in a shell whose locale is not UTF-8"
			}
			break
		}
	}
	return ""
}

// utf8Locale reports whether process pid's environment names a UTF-8
// locale for its characters (LC_ALL, else LC_CTYPE, else LANG).
func utf8Locale(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return false
	}
	vars := map[string]string{}
	for _, kv := range strings.Split(string(b), "\x00") {
		if k, v, ok := strings.Cut(kv, "="); ok {
			vars[k] = v
		}
	}
	for _, k := range []string{"LC_ALL", "LC_CTYPE", "LANG"} {
		if v := vars[k]; v != "" {
			v = strings.ToLower(v)
			return strings.Contains(v, "utf-8") || strings.Contains(v, "utf8")
		}
	}
	return false
}

// lockInput takes c's input lock: one exec.input at a time is checked and
// written.
func (rt *Runtime) lockInput(c *exec.Job) (unlock func()) {
	m, _ := rt.inputLocks.LoadOrStore(c, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// maxTyped bounds what is typed into a shell under a policy, in one call
// and in one open statement: each line re-reads its open statement, so
// the cost grows with the square of its length (40,000 lines of an open
// quote took 15 s of CPU).
const maxTyped = 16 << 10

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

// commandGone drops what the runtime kept about c's input when c ends.
func (rt *Runtime) commandGone(c *exec.Job) {
	rt.forgetTyped(c)
	rt.inputLocks.Delete(c)
}
