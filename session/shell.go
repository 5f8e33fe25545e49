package session

import (
	"bytes"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"mvdan.cc/sh/v3/syntax"

	"github.com/trl-project/trl/internal/nesting"
)

// dialect is what differs between shells: how to start one interactive
// without line editing or rc files, and how to set its prompt record.
type dialect struct {
	name string
	args []string
	// init is the first line sent; it must set the prompt record, whose
	// first field is the sequence number of the last command line.
	init func(nonce string) string
	// seqVar returns the assignment that sets that sequence number to n.
	seqVar func(nonce, n string) string
	// printf names the printf builtin so that no alias or function of the
	// user's can stand in for it (zsh's `command` would look for a binary).
	printf string
	// source is set for shells that run each command by sourcing a file
	// rather than through eval in a function: interactive bash announces
	// background jobs ("[1] 1234") from eval but not from a sourced file,
	// and a syntax error in a sourced file simply returns 2.
	source bool
	// epilogue, when set, follows the command on its line; it receives
	// the command's status as $1 and must return it.
	epilogue bool
	// innerStdout, when set, has the runner point stdout at the terminal
	// on its eval, not the line on the runner's call: zsh fires a DEBUG
	// trap inside functions before a command's redirections apply, so
	// the trap's output for trl's own eval goes to the shell's stdout
	// (the control pipe, logged as noise), and only the user's own
	// commands' traps are seen.
	innerStdout bool
	// spareStderr, when set, has the shell given a spare copy of the
	// stderr pipe as fd 5, from which settle repairs fd 4: bash
	// interrupted while it undoes a line's redirections can leave fd 4
	// closed, and zsh is given the same care. dash, an ash, undoes them
	// with interrupts held off (INTOFF), so sh gets no fd 5, and its
	// lines one redirection fewer (five syscalls, a few µs a command).
	spareStderr bool
	// lang is the grammar a command's text is checked against before a
	// status capture is appended to it (errexitNote).
	lang syntax.LangVariant
	// captureRunner, when set, has the line run a text that captures its
	// status with the runner _trl<nonce>rc, which appends the capture
	// itself, rather than with the capture appended to _trl<nonce>c,
	// which the history statement uses as the command's text (zsh).
	captureRunner bool
	// topEval, when set, has the line run a command given no env with
	// eval at the top level rather than in the runner function
	// (topEvalNote).
	topEval bool
	// history, when set, returns the statement, run just before the
	// command, that puts its text in the shell's history in place of
	// trl's line (see historyNote).
	history func(nonce, text string) string
	// forget, when set, returns what, appended to trl's own lines that
	// are no command's (settle's), takes them out of the shell's history.
	forget func(nonce string) string
}

// historyNote: a person's `history` (bash) or `fc -l` (zsh) lists the
// commands typed, so a session's lists the commands trl ran, never the
// lines trl wrote to run them (they carry the session's nonce) nor its
// own lines.
//
//   - bash saves each line as it reads it. Before the command runs, the
//     line puts the command's text in with `history -s`, which replaces
//     the entry of the line being run (when history was on as it was
//     read, as it is then, the line was saved): the command's own
//     `history` lists it last, as a person's would. Trl's init line
//     clears the history it was saved in; settle's lines delete their
//     own entry as the state lines do. Both are functions trl defines at
//     init, so that an alias of `if` a command defines later cannot
//     break them, and neither fails under errexit. `history -s` does not
//     apply HISTCONTROL or HISTIGNORE to the text.
//   - zsh asks its zshaddhistory hooks before it saves a line; trl's
//     refuses every line that begins with trl's sequence number, and the
//     line adds the command's text with `print -rs` before running it
//     (`fc -l` lists the commands before the one running it). The hook
//     runs under zsh's own options (`emulate -L`): a refusal under the
//     user's errexit would end the shell; and it refuses with `! [[ … ]]`,
//     a status a user's ZERR trap is not run for. The init line
//     begins with a space and zsh starts with HIST_IGNORE_SPACE, which
//     the init line turns off again.

const (
	recordStart = '\x1e'
	recordEnd   = '\x1f'
)

// A record is recordPrefix, its fields, and recordSuffix. The suffix
// repeats the nonce, so no byte a directory name can hold ends a record
// early: "/tmp/a\x1fb" or a name with a newline is reported whole.
func recordPrefix(nonce string) string { return string(recordStart) + "TRL:" + nonce + ":" }

func recordSuffix(nonce string) string { return string(recordEnd) + nonce + string(recordEnd) }

// trl's own names in the shell carry the session's random nonce
// (`_trl<nonce>n`): no command, rc file or habit can name them by
// accident (`readonly __trl_n` or `unset -f __trl_run` in a command once
// hung the session), and bash makes the functions read-only besides.
// Their suffixes: n the line's sequence number, c the command text, r the
// runner function, f the epilogue function, q the function that restores
// $?, hs, hd and hh the history's (historyNote); the state lines use
// others (state_*.go).
func trlName(nonce, what string) string { return "_trl" + nonce + what }

// The prompt is the completion signal, so PS1 is made read-only: a command
// that sets it (`. ~/.bashrc` does) gets "readonly variable" instead of
// hanging the session.

// common is the setup every dialect shares: the runner function and an
// empty continuation prompt.
func common(nonce string) string {
	return `PS2=''; PS4='+ '; ` + trlName(nonce, "r") + `() { eval "$` + trlName(nonce, "c") + `"; }; ` + statusFunc(nonce)
}

// statusFunc defines the function a command's line calls just before the
// command, to give it the last command's status as $?, as a person's
// next command has it (trl's own statements on the line reset it). The
// line calls it as `_trl<nonce>q N && :`: a failure left of && neither
// ends the shell under errexit nor fires an ERR trap, and leaves $? N.
func statusFunc(nonce string) string {
	return trlName(nonce, "q") + `() { return "$1"; }; `
}

// errexitNote: under errexit (`set -e`) a person's shell survives a
// command such as `grep -q x f && echo found` that fails inside an &&
// list; errexit ignores that failure. trl runs the text through eval (sh,
// zsh) or `.` (bash), and those return the list's status as a simple
// command's, to which errexit does apply: the shell would exit. So while
// errexit is on, the text is followed, where it runs, by a statement that
// keeps its status in _trl<nonce>s (statusCapture): eval and `.` then
// return 0, and the prompt's record takes the status from that variable
// (${_trl<nonce>s:-$?}), which the next command line empties again. A
// failing simple command still ends the shell inside the text, as it ends
// a person's.
//
// Appending to a command's text is safe only when the text is a complete
// program, so the text is parsed first (mvdan.cc/sh: POSIX for sh, bash's
// grammar for bash and for zsh, whose own syntax then runs as it did) and
// the statement goes on a line of its own after it. A text that does not
// parse, that may nest too deep to parse (nesting.TooDeep: the parser's
// recursion could exhaust the daemon), that ends in a backslash,
// or that names history (bash records
// every line of a command file read after a `set -o history` in it) runs
// as it did. The shell's errexit is read from each prompt record ($- is a
// field of it), and a text that turns it on itself (`set -e`,
// `set -euo pipefail`, errexit) counts as under it. With errexit off,
// nothing is appended to a command's text.

// captures reports whether text runs with statusCapture after it (see
// errexitNote): errexit is on, or the text may turn it on, and the text
// is a complete program in lang.
func captures(text string, errexit bool, lang syntax.LangVariant) bool {
	mayTurnOn := strings.Contains(text, "errexit") || strings.Contains(text, "set") && setsErrexit.MatchString(text)
	if !errexit && !mayTurnOn {
		return false
	}
	if strings.Contains(text, "history") || strings.HasSuffix(strings.TrimRight(text, " \t\r\n"), "\\") {
		return false
	}
	if nesting.TooDeep(text) {
		return false // not parsed (it would exhaust the daemon): runs as it did
	}
	p := syntax.NewParser(syntax.Variant(lang))
	_, err := p.Parse(strings.NewReader(text), "")
	return err == nil
}

// setsErrexit matches a set command whose flags include e.
var setsErrexit = regexp.MustCompile(`(^|[^[:alnum:]_])set[ \t]+-[[:alpha:]]*e`)

// capturing is how a command line treats its command's status
// (errexitNote).
type capturing struct {
	capture bool // the text is followed by the status capture
	reset   bool // the line before captured: its value is emptied first
}

// withCapture is text with the capture on a line of its own after it.
func withCapture(text, capture string) string {
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	return text + capture
}

// statusCapture is the statement that follows a command's text (see
// errexitNote). It runs with stderr sent to /dev/null, so that xtrace,
// which dash and bash write to the command's stderr, does not show it
// (bash's BASH_XTRACEFD, when it names another fd, still does), and a
// user's DEBUG trap that writes to stderr still succeeds (with stderr
// closed its failure ended the shell under errexit).
func statusCapture(nonce string) string {
	return `{ ` + trlName(nonce, "s") + `=$?; } 2>/dev/null`
}

// bashCommandFile is what bash's command file holds for c: its text,
// then the capture when st says so.
func bashCommandFile(nonce, text string, st capturing) string {
	if !st.capture {
		return text
	}
	return withCapture(text, statusCapture(nonce)+"\n")
}

// statusField is the record's status: the captured one, else $?.
func statusField(nonce string) string { return "${" + trlName(nonce, "s") + ":-$?}" }

// promptRecord is the PS1 assignment that prints the prompt record
// seq:status:$-:cwd, with seq and cwd as the dialect's prompt expands them.
func promptRecord(nonce, seq, cwd string) string {
	return `PS1='` + recordPrefix(nonce) + seq + `:` + statusField(nonce) + `:$-:` + cwd + recordSuffix(nonce) + `'`
}

// posixRunner replaces common's runner for dash, whose xtrace would
// print trl's own `eval <command>` into the command's stderr: with
// xtrace on, it is turned off (silently) around the eval and back on
// inside it, so only the command's own lines are traced.
func posixRunner(nonce string) string {
	c := `"$` + trlName(nonce, "c") + `"`
	return trlName(nonce, "r") + `() { case $- in *x*) { set +x; } 2>/dev/null; eval "set -x; "` + c + `;; *) eval ` + c + `;; esac; }; `
}

func plainSeq(nonce, n string) string { return trlName(nonce, "n") + "=" + n }

// zshSeq sets the whole of psvar, read by the prompt's %1v: psvar[1]=
// would name the second element under KSH_ARRAYS (`emulate sh`).
func zshSeq(_, n string) string { return "psvar=(" + n + ")" }

var (
	posixShell = dialect{
		name:   "sh",
		args:   []string{"-i"},
		seqVar: plainSeq,
		printf: `\command printf`,
		lang:   syntax.LangPOSIX,
		init: func(nonce string) string {
			return common(nonce) + posixRunner(nonce) + trlName(nonce, "n") + `=0; ` + promptRecord(nonce, `$`+trlName(nonce, "n"), `$PWD`) + `; readonly PS1`
		},
	}
	// bash: line editing stays off whatever a command does. `set -o vi`
	// or `set -o emacs` (a common .bashrc line) turns readline on, which
	// would then own the prompt and the command pipe; the epilogue turns
	// it off again before the prompt is printed. It turns promptvars back
	// on too (`shopt -u promptvars`): without it the prompt record is
	// PS1's unexpanded text.
	bashShell = dialect{
		name:        "bash",
		args:        []string{"--noediting", "--noprofile", "--norc", "-i"},
		seqVar:      plainSeq,
		printf:      `\builtin printf`,
		source:      true,
		epilogue:    true,
		spareStderr: true,
		lang:        syntax.LangBash,
		history:     func(nonce, text string) string { return trlName(nonce, "hs") + " " + quote(text) + "; " },
		forget:      func(nonce string) string { return "; " + trlName(nonce, "hd") },
		init: func(nonce string) string {
			f, hs, hd := trlName(nonce, "f"), trlName(nonce, "hs"), trlName(nonce, "hd")
			// The history functions are parsed here, before any alias a
			// command may define could stand in for `if` in them; neither
			// fails, whatever errexit says.
			return common(nonce) + f + `() { if [[ -o emacs || -o vi ]]; then \builtin set +o emacs +o vi; fi; [[ :$BASHOPTS: == *:promptvars:* ]] || \builtin shopt -s promptvars; \builtin return "$1"; }; ` +
				hs + `() { if [[ -o history ]]; then \builtin history -s -- "$1" || \builtin :; fi; }; ` +
				hd + `() { if [[ -o history && -z ${HISTIGNORE-} ]]; then \builtin history -d -1 2>/dev/null || \builtin :; fi; }; ` +
				`\builtin readonly -f ` + trlName(nonce, "r") + ` ` + f + ` ` + hs + ` ` + hd + ` ` + trlName(nonce, "q") + `; ` +
				`unset PROMPT_COMMAND HISTFILE; PS0=''; ` + trlName(nonce, "n") + `=0; ` +
				promptRecord(nonce, `$`+trlName(nonce, "n"), `$PWD`) + `; readonly PS1; \builtin history -c`
		},
	}
	// zsh: the runner calls `\builtin eval`, so a function named eval
	// (one a carried state may define) does not replace it.
	// zsh: the record's cwd is ${PWD} (PROMPT_SUBST, with '%' doubled),
	// not %d, which shows control characters as ^X. The epilogue puts
	// back the prompt options a command may have changed, turning
	// LOCAL_OPTIONS off first: a command runs at the top level
	// (topEvalNote), where `setopt localoptions` would otherwise undo
	// them as the epilogue function returns.
	zshShell = dialect{
		name:          "zsh",
		args:          []string{"-f", "-i", "-s", "--nozle", "--nopromptsp", "--nopromptcr", "--histignorespace"},
		seqVar:        zshSeq,
		printf:        `\builtin printf`,
		epilogue:      true,
		innerStdout:   true,
		spareStderr:   true,
		lang:          syntax.LangBash,
		captureRunner: true,
		topEval:       true,
		history:       func(nonce, _ string) string { return `\builtin print -rs -- "$` + trlName(nonce, "c") + `"; ` },
		init: func(nonce string) string {
			h := trlName(nonce, "hh")
			// The capturing runner rc puts the text in a group that alone
			// writes to the terminal, so that a DEBUG trap's output for
			// the capture after it goes where trl's own statements' goes;
			// zsh traces to the stderr it started with (the control
			// pipe), never the command's.
			c := `"$` + trlName(nonce, "c") + `"`
			return " " + common(nonce) + trlName(nonce, "r") + `() { \builtin eval ` + c + ` >&3 3>&-; }; ` +
				trlName(nonce, "rc") + `() { \builtin eval '{ '` + c + `$'\n} >&3 3>&-; '` + quote(statusCapture(nonce)) + `; }; ` + `unsetopt CHECK_JOBS CHECK_RUNNING_JOBS; RPS1=''; RPS2=''; psvar=(0); ` +
				trlName(nonce, "f") + `() { \builtin unsetopt LOCAL_OPTIONS; \builtin setopt PROMPT_PERCENT PROMPT_SUBST; \builtin unsetopt PROMPT_BANG; \builtin return "$1"; }; ` +
				trlName(nonce, "f") + ` 0; ` + h + `() { \builtin emulate -L zsh; ! [[ $1 == psvar=\(* ]] }; zshaddhistory_functions+=(` + h + `); \builtin unsetopt HIST_IGNORE_SPACE; ` +
				promptRecord(nonce, `%1v`, `${PWD//\%/%%}`) + `; typeset -r PS1`
		},
	}
)

// topEvalNote: zsh makes what typeset, declare, local, integer, float
// and readonly declare, and an EXIT trap, local to the function they run
// in, so a command run by the runner function lost `typeset -A m` or
// `integer n=5` as it ended, and its EXIT trap fired then. So zsh runs a
// command with eval on the line itself, as a person's typed line runs:
// its declarations and traps outlive it, $0 is the shell's and
// funcstack is empty. Its messages read as at the prompt too: "zsh:
// parse error near `fi'", naming no line, where the runner's said
// "(eval):1: ...".
//
// A `return` there ends the line, as at a zsh prompt; the prompt record
// still comes, with the status, but the epilogue after the command does
// not run: a command that both turns PROMPT_SUBST off and returns gets
// status -1 (its record unexpanded), and the next command's epilogue
// puts the option back, as it did before for a command under ERR_RETURN.
//
// A command given env still goes through the runner: a builtin's prefix
// assignments reach no process it starts, a function's do (its
// declarations are then its own, as noted in docs/design.md).

// dialectFor picks the dialect from the shell binary's real name, so
// /bin/sh is treated as whatever it links to.
func dialectFor(path string) dialect {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		real = path
	}
	base := filepath.Base(real)
	switch {
	case strings.HasPrefix(base, "bash"):
		return bashShell
	case strings.HasPrefix(base, "zsh"):
		return zshShell
	}
	return posixShell
}

// quote returns s as one single-quoted shell word.
func quote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	writeQuoted(&b, s)
	return b.String()
}

// writeQuoted writes s to b as one single-quoted shell word.
func writeQuoted(b *strings.Builder, s string) {
	b.WriteByte('\'')
	for {
		i := strings.IndexByte(s, '\'')
		if i < 0 {
			break
		}
		b.WriteString(s[:i])
		b.WriteString(`'\''`)
		s = s[i+1:]
	}
	b.WriteString(s)
	b.WriteByte('\'')
}

// commandLine builds the line that runs c: its text is either inlined
// for eval or, for source dialects, read from cmdFile. Env assignments
// prefix the call, so every shell scopes them to this command and exports
// them to its processes. stdinPath, when set, replaces the terminal as the
// command's stdin.
//
// st says how the line treats the command's status (errexitNote): capture
// appends the status capture to the text, reset empties the variable a
// capture on the line before set.
func (d dialect) commandLine(nonce string, seq int64, c Command, cmdFile, stdinPath string, prev int, st capturing) []byte {
	var b bytes.Buffer
	b.Grow(len(c.Text) + 200)
	n := strconv.FormatInt(seq, 10)
	b.WriteString(d.seqVar(nonce, n))
	if st.reset {
		b.WriteString(" " + trlName(nonce, "s") + "=")
	}
	b.WriteString("; ")
	if !d.source {
		text := c.Text
		if st.capture && !d.captureRunner {
			text = withCapture(text, statusCapture(nonce))
		}
		b.WriteString(trlName(nonce, "c"))
		b.WriteByte('=')
		b.WriteString(quote(text))
		b.WriteString("; ")
	}
	if d.history != nil {
		b.WriteString(d.history(nonce, c.Text))
	}
	// The start record: the shell has parsed the line and runs it. The
	// shell's own stdout is the control pipe. Its last argument, like
	// statusFunc's, is empty (taken by a %s, so that a printf program
	// does not warn of an argument left over): the last argument of the
	// statement just before the command is what the command finds in $_,
	// which held the record (with the session's nonce) in dash and the
	// command's own text (the history call's) in bash and zsh.
	b.WriteString(d.printf + " '\\036TRL:" + nonce + ":S" + n + "\\037" + nonce + "\\037%s' ''; ")
	if prev != 0 {
		// The last command's status, as $? (statusFunc); after a 0 the
		// statements before leave it 0.
		b.WriteString(trlName(nonce, "q") + " " + strconv.Itoa(prev) + " '' && :; ")
	}
	for _, kv := range sortedEnv(c.Env) {
		b.WriteString(kv[0])
		b.WriteByte('=')
		b.WriteString(quote(kv[1]))
		b.WriteByte(' ')
	}
	if d.source {
		// Quoted words are never alias-expanded: `alias .=false` cannot
		// stand in for the builtin.
		b.WriteString("\\. ")
		b.WriteString(quote(cmdFile))
		b.WriteByte(' ')
	}
	inner := d.innerStdout
	switch {
	case d.source:
	case d.topEval && len(c.Env) == 0:
		// zsh (topEvalNote): eval at the top level. Its DEBUG trap
		// fires before the eval's redirections apply, as it did before
		// the runner's.
		text := `"$` + trlName(nonce, "c") + `"`
		if st.capture {
			b.WriteString(`\builtin eval '{ '` + text + `$'\n} >&3 3>&-; '` + quote(statusCapture(nonce)) + " ")
		} else {
			b.WriteString(`\builtin eval ` + text + " ")
			inner = false
		}
	case st.capture && d.captureRunner:
		b.WriteString(trlName(nonce, "rc") + " ")
	default:
		b.WriteString(trlName(nonce, "r") + " ")
	}
	// fd 5 (the spare stderr pipe, see settle), where there is one, is
	// out of the command's reach. It is closed first so that bash
	// restores it last: after a `ulimit -n 5` it cannot, and must have
	// restored 0-2 before it gives up.
	if d.spareStderr {
		b.WriteString("5>&- ")
	}
	if stdinPath != "" {
		b.WriteString("<")
		b.WriteString(quote(stdinPath))
	} else {
		b.WriteString("<&3")
	}
	// stdout is re-pointed at the terminal (fd 3) like stdin and
	// stderr, so an `exec >/dev/null` in one command ends with it.
	if inner {
		b.WriteString(" 2>&4 4>&-") // the runner does >&3 3>&-
	} else {
		b.WriteString(" >&3 2>&4 3<&- 4>&-")
	}
	if d.epilogue {
		// Left of &&, the epilogue's return of a failure fires no ERR
		// trap (the command's own failure did already).
		b.WriteString("; " + trlName(nonce, "f") + " $? && :")
	}
	b.WriteByte('\n')
	return b.Bytes()
}

// record is one parsed prompt record.
type record struct {
	seq   int64
	start bool // a start record: the shell began executing line seq
	// valid is set when the sequence number and status are numbers: an
	// echo of the setup line (a program that is not a shell, or a shell
	// tracing its input) shows the unexpanded "$_trl…n:$?" instead.
	valid  bool
	status int
	cwd    string
	// errexit is set when the shell's options ($-) held e at the prompt.
	errexit bool
	// at is where in the noise feed returned with it the record came:
	// the noise before at came before it.
	at int
}

// recordParser finds prompt records in the control pipe's bytes. Anything
// else the shell writes there (job notices, its own complaints) is
// returned as noise for the log.
type recordParser struct {
	prefix, suffix []byte
	buf            []byte
}

// newRecordParser finds the records of the session whose nonce it is.
func newRecordParser(nonce string) recordParser {
	return recordParser{prefix: []byte(recordPrefix(nonce)), suffix: []byte(recordSuffix(nonce))}
}

// feed appends p and returns the complete records found and any noise.
func (rp *recordParser) feed(p []byte) (recs []record, noise []byte) {
	rp.buf = append(rp.buf, p...)
	for {
		i := bytes.Index(rp.buf, rp.prefix)
		if i < 0 {
			// Keep only a tail that could begin a prefix: the rest is
			// noise now, not when more bytes come (an EXIT trap's last
			// words are followed by none).
			keep := rp.prefixStart(rp.buf)
			noise = append(noise, rp.buf[:len(rp.buf)-len(keep)]...)
			rp.buf = append(rp.buf[:0], keep...)
			return recs, noise
		}
		noise = append(noise, rp.buf[:i]...)
		rest := rp.buf[i+len(rp.prefix):]
		j := bytes.Index(rest, rp.suffix)
		if j < 0 {
			rp.buf = append(rp.buf[:0], rp.buf[i:]...)
			return recs, noise
		}
		body := string(rest[:j])
		rp.buf = append(rp.buf[:0], rest[j+len(rp.suffix):]...)
		if n, ok := strings.CutPrefix(body, "S"); ok {
			if seq, err := strconv.ParseInt(n, 10, 64); err == nil {
				recs = append(recs, record{seq: seq, start: true, at: len(noise)})
			}
			continue
		}
		seq, rest2, _ := strings.Cut(body, ":")
		status, rest3, _ := strings.Cut(rest2, ":")
		flags, cwd, _ := strings.Cut(rest3, ":")
		r := record{cwd: cwd, valid: true, errexit: strings.Contains(flags, "e"), at: len(noise)}
		var err error
		if r.seq, err = strconv.ParseInt(seq, 10, 64); err != nil {
			r.seq = -2 // matches no command
			r.valid = false
		}
		if r.status, err = strconv.Atoi(status); err != nil {
			r.status = -1
			r.valid = false
		}
		recs = append(recs, r)
	}
}

// scan is feed for a stream other than the control pipe (see
// strayRecord): it keeps no noise, and copies only what may begin a
// record, so a stream without one costs a search per chunk. It returns
// the valid records found and where in p the first one begins (-1: none
// began in p).
func (rp *recordParser) scan(p []byte) (recs []record, at int) {
	at = -1
	if len(rp.buf) == 0 {
		i := bytes.Index(p, rp.prefix)
		if i < 0 {
			rp.buf = append(rp.buf, rp.prefixStart(p)...)
			return nil, -1
		}
		at, p = i, p[i:]
	}
	all, _ := rp.feed(p)
	for _, r := range all {
		if r.valid && !r.start {
			recs = append(recs, r)
		}
	}
	switch {
	case len(rp.buf) > maxStrayRecord:
		rp.buf = rp.buf[:0] // too long to be a record: not one
	case !bytes.HasPrefix(rp.buf, rp.prefix):
		// feed keeps a tail as long as the prefix; keep only what can
		// begin one, so that the next chunk is searched, not copied.
		rp.buf = append(rp.buf[:0], rp.prefixStart(rp.buf)...)
	}
	return recs, at
}

// prefixStart is the end of p that could begin a record's prefix.
func (rp *recordParser) prefixStart(p []byte) []byte {
	tail := p[max(0, len(p)-len(rp.prefix)+1):]
	if j := bytes.LastIndexByte(tail, rp.prefix[0]); j >= 0 && bytes.HasPrefix(rp.prefix, tail[j:]) {
		return tail[j:]
	}
	return nil
}

// maxStrayRecord bounds what scan holds of a possible record: a prompt
// record is its fields and a cwd (at most PATH_MAX).
const maxStrayRecord = 8 << 10

// sortedEnv returns env's pairs sorted by name, for a stable command line.
func sortedEnv(env map[string]string) [][2]string {
	out := make([][2]string, 0, len(env))
	for k, v := range env {
		out = append(out, [2]string{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}
