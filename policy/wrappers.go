package policy

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// wrapper describes a program that runs another program given by its
// remaining words, and which of its options take a value (so that the
// value is not taken for the program).
type wrapper struct {
	// valueShort are the short options taking a value (-u root, -uroot).
	valueShort string
	// valueLong are the long options taking a value when written
	// without '=' (--user root).
	valueLong []string
	// noRun are short options with which nothing is run (command -v).
	noRun string
	// operands before the program (timeout's duration).
	operands int
	// numeric: -N is an option (nice -10).
	numeric bool
	// assignments: NAME=value words come before the program (env).
	assignments bool
	// optionalShort are the short options whose value, optional, is the
	// rest of their word (nsenter -m/proc/1/ns/mnt).
	optionalShort string
	// split is the short option whose value is itself a command line
	// (env -S 'prog args', runuser -c 'cmd'); 0 for none. It is one of
	// valueShort. splitLong is its long name.
	split     byte
	splitLong string
	// appends: the wrapper adds words from its input to the command
	// (xargs).
	appends bool
}

var wrappers = map[string]wrapper{
	// sudo -l lists, -v validates, -K forgets, -e edits files: none runs
	// its operand (-k with a command runs it).
	"sudo": {noRun: "elvK", valueShort: "CDghpRrTtUu", valueLong: []string{"--chdir", "--close-from", "--group", "--host", "--prompt", "--chroot", "--role", "--type", "--command-timeout", "--other-user", "--user"}},
	"doas": {valueShort: "Cu"},
	"env": {valueShort: "uCS", valueLong: []string{"--unset", "--chdir", "--split-string", "--block-signal", "--default-signal", "--ignore-signal"},
		assignments: true, split: 'S', splitLong: "--split-string"},
	"command": {noRun: "vV"},
	"builtin": {},
	"exec":    {valueShort: "a"},
	"time":    {valueShort: "fo", valueLong: []string{"--format", "--output"}},
	"nice":    {valueShort: "n", valueLong: []string{"--adjustment"}, numeric: true},
	"nohup":   {},
	"timeout": {valueShort: "ks", valueLong: []string{"--kill-after", "--signal"}, operands: 1},
	"xargs": {valueShort: "adEILnPs", valueLong: []string{"--arg-file", "--delimiter", "--max-lines", "--max-args",
		"--max-procs", "--max-chars", "--process-slot-var"}, appends: true},
	"setsid":  {},
	"stdbuf":  {valueShort: "ioe", valueLong: []string{"--input", "--output", "--error"}},
	"ionice":  {valueShort: "cnp"},
	"busybox": {},
	// util-linux's: each runs the program after its options (and, for
	// chrt and taskset, a priority or CPU list); with -p they act on a
	// running process instead.
	"chrt":    {noRun: "pm", valueShort: "TPD", valueLong: []string{"--sched-runtime", "--sched-period", "--sched-deadline"}, operands: 1},
	"taskset": {noRun: "p", operands: 1},
	"prlimit": {valueShort: "po", valueLong: []string{"--pid", "--output"}},
	"unshare": {valueShort: "SGRw", optionalShort: "muinpUCT", valueLong: []string{"--setuid", "--setgid", "--root", "--wd", "--propagation", "--setgroups",
		"--map-user", "--map-group", "--map-users", "--map-groups", "--monotonic", "--boottime"}},
	"nsenter": {valueShort: "tSG", optionalShort: "muinpUCTrw", valueLong: []string{"--target", "--setuid", "--setgid"}},
	"setpriv": {noRun: "d", valueLong: []string{"--reuid", "--regid", "--ruid", "--rgid", "--euid", "--egid", "--groups", "--inh-caps",
		"--ambient-caps", "--bounding-set", "--securebits", "--pdeathsig", "--selinux-label", "--apparmor-profile",
		"--landlock-access", "--landlock-rule", "--seccomp-filter"}},
	// zsh's precommand modifiers and its repeat loop.
	"noglob":    {},
	"nocorrect": {},
	"-":         {},
	"repeat":    {operands: 1},
}

// wrapper finds the program a wrapper runs and looks at it as a command
// of its own.
func (s *scanner) wrapper(x *call, w wrapper, args []*syntax.Word, end uint) string {
	i := 0
	for i < len(args) {
		a, ok := literal(args[i])
		if !ok {
			return "the wrapper's options or program are known only when the line runs"
		}
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			if w.assignments && isAssignment(a) {
				i++
				continue
			}
			break
		}
		if w.numeric && isDigits(a[1:]) {
			i++
			continue
		}
		if strings.HasPrefix(a, "--") {
			name, val, hasVal := strings.Cut(a, "=")
			takes := slices.Contains(w.valueLong, name)
			if w.split != 0 && name == w.splitLong {
				if !hasVal && i+1 < len(args) {
					val, hasVal = literal(args[i+1])
				}
				if hasVal {
					s.script(val, x.depth+1)
				}
			}
			i++
			if takes && !hasVal {
				i++
			}
			continue
		}
		// Short options, getopt style: a value option takes the rest of
		// the word, or the next word when it is last.
		takesNext := false
		for j := 1; j < len(a); j++ {
			c := a[j]
			if strings.IndexByte(w.noRun, c) >= 0 {
				return ""
			}
			if strings.IndexByte(w.optionalShort, c) >= 0 {
				break // the rest of the word is its value
			}
			if strings.IndexByte(w.valueShort, c) < 0 {
				continue
			}
			val := a[j+1:]
			if val == "" {
				takesNext = true
				if i+1 < len(args) {
					val, _ = literal(args[i+1])
				}
			}
			if c == w.split && w.split != 0 {
				s.script(val, x.depth+1)
			}
			break
		}
		i++
		if takesNext {
			i++
		}
	}
	i += w.operands
	if i >= len(args) {
		if x.appended {
			return "the program comes from xargs's input, not known before the line runs"
		}
		return ""
	}
	y := *x
	y.appended = x.appended || w.appends
	s.wordsUpTo(&y, args[i:], end)
	return ""
}

func isAssignment(a string) bool {
	name, _, ok := strings.Cut(a, "=")
	return ok && name != "" && syntax.ValidName(name)
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isShell(prog string) bool {
	switch prog {
	case "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "posh", "rbash", "ksh93", "csh", "tcsh", "fish":
		return true
	}
	return false
}

// shell looks at the script a shell runs: the argument of -c, or its
// standard input when that is a here-document or here-string. A script
// from a file, a pipe or a redirection cannot be known before it runs; a
// shell reading the terminal is an interactive shell, whose lines are
// checked as they are typed.
func (s *scanner) shell(x *call, args []*syntax.Word) string {
	cflag, stdin := false, false
	i := 0
	for ; i < len(args); i++ {
		a, ok := literal(args[i])
		if !ok {
			return "the shell's options or script are known only when the line runs"
		}
		if a == "--" || a == "-" {
			i++
			break
		}
		if strings.HasPrefix(a, "--") {
			if a == "--rcfile" || a == "--init-file" {
				i++
			}
			continue
		}
		if len(a) < 2 || (a[0] != '-' && a[0] != '+') {
			break
		}
		letters := a[1:]
		if a[0] == '-' && strings.IndexByte(letters, 'c') >= 0 {
			cflag = true
		}
		if strings.IndexByte(letters, 's') >= 0 {
			stdin = true
		}
		if last := letters[len(letters)-1]; last == 'o' || last == 'O' {
			i++ // -o pipefail
		}
	}
	switch {
	case cflag:
		if i >= len(args) {
			// Alone it is an error; under xargs the script is input.
			return "the script given to the shell's -c is known only when the line runs"
		}
		src, ok := literal(args[i])
		if !ok {
			return "the script given to the shell's -c is known only when the line runs"
		}
		s.script(src, x.depth+1)
		return ""
	case i < len(args) && !stdin:
		return "the shell runs a script file, whose lines are not known before it runs"
	}
	for _, r := range slices.Backward(x.stmt.Redirs) {
		if r.N != nil && r.N.Value != "0" {
			continue
		}
		switch r.Op {
		case syntax.Hdoc, syntax.DashHdoc:
			if r.Hdoc == nil {
				return ""
			}
			src, ok := hdocLiteral(r.Hdoc)
			if !ok {
				return "the here-document given to the shell has expansions known only when the line runs"
			}
			if _, quoted := literalUnquoted(r.Word); !quoted {
				// An unquoted delimiter: the shell that writes the body
				// removes the backslash of \$ \` \\ and \newline first (`echo
				// \`cmd\`` reaches the reading shell as `echo `cmd``).
				src = hdocUnescape(src)
			}
			s.script(src, x.depth+1)
			return ""
		case syntax.WordHdoc:
			src, ok := literal(r.Word)
			if !ok {
				return "the here-string given to the shell is known only when the line runs"
			}
			s.script(src, x.depth+1)
			return ""
		case syntax.RdrIn, syntax.RdrInOut, syntax.DplIn:
			return "the shell reads its script from a redirection, not known before the line runs"
		}
	}
	if x.piped {
		return "the shell reads its script from a pipe, not known before the line runs"
	}
	if x.depth > 0 || !s.top[x.stmt] {
		// Inside a group, subshell, function, alias or script, its input
		// may be whatever the enclosing statement's is: `echo cmd | { sh; }`.
		return "the shell reads its script from its standard input, which may not be the terminal"
	}
	return ""
}

// literalUnquoted is w's text when it is one plain literal, and whether
// any of it is quoted or escaped (a here-document's delimiter: quoted,
// its body is taken as it is).
func literalUnquoted(w *syntax.Word) (string, bool) {
	if w == nil || len(w.Parts) != 1 {
		return "", true
	}
	l, ok := w.Parts[0].(*syntax.Lit)
	if !ok || strings.Contains(l.Value, `\`) {
		return "", true
	}
	return l.Value, false
}

// hdocUnescape is what an unquoted here-document's literal body becomes:
// a backslash before $, `, \ or a newline is removed (with the newline).
func hdocUnescape(body string) string {
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		if body[i] == '\\' && i+1 < len(body) {
			switch body[i+1] {
			case '$', '`', '\\':
				b.WriteByte(body[i+1])
				i++
				continue
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(body[i])
	}
	return b.String()
}

// hdocLiteral is a here-document's body when it has no expansions. Its
// backslashes are kept: bash removes only a few of them, and the body is
// looked at, not run.
func hdocLiteral(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for _, p := range w.Parts {
		l, ok := p.(*syntax.Lit)
		if !ok {
			return "", false
		}
		b.WriteString(l.Value)
	}
	return b.String(), true
}
