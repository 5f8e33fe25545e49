package policy

import (
	"slices"
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// Programs that run a command line with sh -c from their -c or --command
// option: su, runuser and script (which without one start a shell that
// reads their standard input), and flock (whose file operand comes
// before its program or its -c).

// commandOpts describes such a program's options.
type commandOpts struct {
	// valueShort are its other short options that take a value, and
	// valueLong its long ones (which take the next word unless written
	// with =).
	valueShort string
	valueLong  []string
	// session: --session-command is a -c too (su, runuser).
	session bool
	// longMin is how much of "--command" getopt_long needs to know it
	// (an abbreviation may be any unique prefix: script --c, flock --com).
	longMin int
	// what names the option in reasons.
	what string
}

var commandRunners = map[string]commandOpts{
	"su": {valueShort: "sgGw", valueLong: []string{"--group", "--supp-group", "--shell", "--whitelist-environment"},
		session: true, longMin: 3, what: "su -c"},
	"runuser": {valueShort: "sgGwu", valueLong: []string{"--user", "--group", "--supp-group", "--shell", "--whitelist-environment"},
		session: true, longMin: 3, what: "runuser -c"},
	"script": {valueShort: "EIOBTm", valueLong: []string{"--echo", "--log-in", "--log-out", "--log-io", "--log-timing", "--logging-format"},
		longMin: 3, what: "script -c"},
}

// commandRunner looks at su, runuser or script: the command of its -c
// wherever it stands (su-style `runuser root -c cmd` too); else runuser
// -u user program runs the program; else the program starts a shell
// that reads its standard input, checked as a shell's is.
func (s *scanner) commandRunner(x *call, prog string, args []*syntax.Word, end uint) string {
	o := commandRunners[prog]
	if prog == "runuser" && runsProgram(args, o) {
		// runuser -u user [--] program: the program's own -c is its own.
		return s.wrapper(x, wrapper{valueShort: "ugGsw", valueLong: o.valueLong}, args, end)
	}
	if why, found := s.commandOption(x, args, o); found {
		return why
	}
	// Words after -- are the shell's own arguments (su root -- -c cmd).
	for i, w := range args {
		if a, _ := literal(w); a == "--" {
			return s.shell(x, args[i+1:])
		}
	}
	return s.shell(x, nil)
}

// runsProgram reports whether runuser's own options (those before its
// first operand) hold -u or --user: it then runs a program, not a shell.
func runsProgram(args []*syntax.Word, o commandOpts) bool {
	for i := 0; i < len(args); i++ {
		a, ok := literal(args[i])
		if !ok || a == "--" || len(a) < 2 || a[0] != '-' {
			return false
		}
		if a == "--user" || strings.HasPrefix(a, "--user=") {
			return true
		}
		if !strings.HasPrefix(a, "--") {
			for j := 1; j < len(a); j++ {
				if a[j] == 'u' {
					return true
				}
				if strings.IndexByte(o.valueShort, a[j]) >= 0 {
					break
				}
			}
		}
		if o.takesNext(a) {
			i++
		}
	}
	return false
}

// flock [options] file -c 'cmd', or flock [options] file program args,
// or flock [options] fd (nothing runs). Only flock's own options are
// read: a -c among the program's arguments is the program's.
func (s *scanner) flock(x *call, args []*syntax.Word, end uint) string {
	o := commandOpts{valueShort: "wE", valueLong: []string{"--wait", "--timeout", "--conflict-exit-code"}, longMin: 5, what: "flock -c"}
	i := 0
	for ; i < len(args); i++ {
		a, ok := literal(args[i])
		if !ok {
			return "flock's options are known only when the line runs"
		}
		if a == "--" {
			i++
			break
		}
		if len(a) < 2 || a[0] != '-' {
			break
		}
		if src, next, is := o.command(a); is {
			return s.commandOf(x, args, i, src, next, o)
		}
		if o.takesNext(a) {
			i++
		}
	}
	i++ // the file or descriptor
	if i >= len(args) {
		return ""
	}
	a, ok := literal(args[i])
	if !ok {
		return "flock's program is known only when the line runs"
	}
	if a == "--" && i+1 < len(args) { // taken for the program's, conservatively
		i++
		if a, ok = literal(args[i]); !ok {
			return "flock's program is known only when the line runs"
		}
	}
	if src, next, is := o.command(a); is {
		return s.commandOf(x, args, i, src, next, o)
	}
	y := *x
	s.wordsUpTo(&y, args[i:], end)
	return ""
}

// commandOption finds the -c of a program described by o among its
// words, and checks its command; found says whether there was one. A
// word that is an expansion could be a -c: the reason says so.
func (s *scanner) commandOption(x *call, args []*syntax.Word, o commandOpts) (why string, found bool) {
	for i := 0; i < len(args); i++ {
		a, ok := literal(args[i])
		if !ok {
			return "the options of " + strings.Fields(o.what)[0] + " are known only when the line runs", true
		}
		if a == "--" {
			break // what follows is the shell's (commandRunner)
		}
		if len(a) < 2 || a[0] != '-' {
			continue
		}
		if src, next, is := o.command(a); is {
			return s.commandOf(x, args, i, src, next, o), true
		}
		if o.takesNext(a) {
			i++
		}
	}
	return "", false
}

// commandOf checks the command of the -c at args[i]: src when it was in
// the same word, else the next word.
func (s *scanner) commandOf(x *call, args []*syntax.Word, i int, src string, next bool, o commandOpts) string {
	if next {
		if i+1 >= len(args) {
			return "" // -c last: an error, nothing runs
		}
		var ok bool
		if src, ok = literal(args[i+1]); !ok {
			return "the command given to " + o.what + " is known only when the line runs"
		}
	}
	s.script(src, x.depth+1)
	return ""
}

// command reports whether option word a is -c or --command (or an
// abbreviation of it): its value is src, or the next word when next.
func (o commandOpts) command(a string) (src string, next, is bool) {
	if strings.HasPrefix(a, "--") {
		name, val, hasVal := strings.Cut(a, "=")
		isCmd := len(name) >= o.longMin && strings.HasPrefix("--command", name) ||
			o.session && len(name) >= 4 && strings.HasPrefix("--session-command", name)
		if !isCmd {
			return "", false, false
		}
		return val, !hasVal, true
	}
	for j := 1; j < len(a); j++ {
		if a[j] == 'c' {
			return a[j+1:], j+1 == len(a), true
		}
		if strings.IndexByte(o.valueShort, a[j]) >= 0 {
			return "", false, false // the rest of the word is that option's value
		}
	}
	return "", false, false
}

// takesNext reports whether option word a takes the next word as its
// value: a short option of valueShort last in its word.
func (o commandOpts) takesNext(a string) bool {
	if strings.HasPrefix(a, "--") {
		return !strings.Contains(a, "=") && slices.Contains(o.valueLong, a)
	}
	for j := 1; j < len(a); j++ {
		if strings.IndexByte(o.valueShort, a[j]) >= 0 {
			return j+1 == len(a)
		}
	}
	return false
}
