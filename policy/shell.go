package policy

import (
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"

	"github.com/trl-project/trl/internal/nesting"
)

// command is one simple command as the policy sees it: a program and its
// words, or a command whose program cannot be known before it runs.
type command struct {
	// prog is the program's name without its directory; "" when the
	// program word is known only at run time.
	prog string
	args []arg
	// text is the command as written, from its program word to its end,
	// redirections included; regexes match it.
	text string
	// unknown, when set, says why what this command runs cannot be known
	// before the line runs (eval, source, `$cmd`, a script from a pipe).
	unknown string
}

// arg is a word after the program: its value when it is literal (quotes
// removed), or lit false when it has expansions.
type arg struct {
	s   string
	lit bool
}

// maxDepth bounds scripts inside scripts (`bash -c "sh -c '…'"`); deeper
// nesting is unknown rather than a stack to exhaust.
const maxDepth = 8

// maxScripts bounds the scripts parsed for one line: an alias that uses
// itself several times (`alias a='a a a'; a`) would otherwise multiply
// them at every level.
const maxScripts = 64

var (
	parsers      = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangBash)) }}
	posixParsers = sync.Pool{New: func() any { return syntax.NewParser(syntax.Variant(syntax.LangPOSIX)) }}
)

// scanner collects the simple commands of a line.
type scanner struct {
	cmds []command
	// aliases of the session's earlier lines (Input.Aliases) and defined
	// earlier in the line: their values are looked at where the alias is
	// used. Copied before the line's own are added.
	aliases map[string]string
	// defined are the aliases the line defines.
	defined map[string]string
	// expanding are the aliases whose values are being looked at.
	expanding []string
	// top are the line's own statements (file): a shell given no script
	// reads the terminal only from one of them.
	top map[*syntax.Stmt]bool
	// posix: parse as dash does (bashisms), not as bash.
	posix bool
	// scripts counts the scripts parsed, against maxScripts.
	scripts int
}

// script parses src and collects its commands. A script that does not
// parse is one unknown command.
func (s *scanner) script(src string, depth int) {
	if depth > maxDepth {
		s.cmds = append(s.cmds, command{text: src, unknown: "scripts nested too deep to follow"})
		return
	}
	if s.scripts++; s.scripts > maxScripts {
		s.cmds = append(s.cmds, command{text: src, unknown: "too many scripts inside the line to follow"})
		return
	}
	if nesting.TooDeep(src) {
		s.cmds = append(s.cmds, command{text: src, unknown: fmt.Sprintf("the line is longer than %d bytes or holds more than %d brackets and blocks: not followed", nesting.MaxBytes, nesting.Max)})
		return
	}
	pool := &parsers
	if s.posix {
		pool = &posixParsers
	}
	p := pool.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	pool.Put(p)
	if err != nil && s.posix && depth == 0 {
		// A line dash cannot parse runs nothing in dash; its bash
		// reading is checked apart.
		return
	}
	if err != nil {
		s.cmds = append(s.cmds, command{text: src, unknown: fmt.Sprintf("the line does not parse as shell (%v), so what it runs is not known", err)})
		return
	}
	s.file(f, src, depth)
}

func (s *scanner) file(f *syntax.File, src string, depth int) {
	if depth == 0 {
		// The statements of the line itself, and of its && || | lists:
		// only there does a shell without a script read the terminal.
		s.top = map[*syntax.Stmt]bool{}
		var mark func(st *syntax.Stmt)
		mark = func(st *syntax.Stmt) {
			s.top[st] = true
			if b, ok := st.Cmd.(*syntax.BinaryCmd); ok {
				mark(b.X)
				mark(b.Y)
			}
		}
		for _, st := range f.Stmts {
			mark(st)
		}
	}
	// piped holds the statements whose standard input is a pipe: a shell
	// there reads its script from whatever writes to the pipe.
	var piped map[*syntax.Stmt]bool
	syntax.Walk(f, func(n syntax.Node) bool {
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		switch c := st.Cmd.(type) {
		case *syntax.BinaryCmd:
			if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
				if piped == nil {
					piped = map[*syntax.Stmt]bool{}
				}
				piped[c.Y] = true
				if piped[st] {
					piped[c.X] = true
				}
			}
		case *syntax.CallExpr:
			s.assigns(st, src, c.Assigns)
			if len(c.Args) > 0 {
				end := c.End().Offset()
				for _, r := range st.Redirs {
					end = max(end, r.End().Offset())
				}
				x := &call{src: src, stmt: st, end: end, piped: piped[st], depth: depth}
				s.words(x, c.Args)
			}
		case *syntax.DeclClause:
			s.assigns(st, src, c.Args)
		}
		return true
	})
	// A string evaluated later as arithmetic or as a variable's name runs
	// the command substitutions of its array subscripts:
	// x='a[$(rm f)]'; (( x )) runs rm, as do $((x)), test -v, read,
	// printf -v and declare -n with such a string.
	syntax.Walk(f, func(n syntax.Node) bool {
		var v string
		switch p := n.(type) {
		case *syntax.ParamExp:
			if p.Exp == nil || p.Param == nil {
				return true
			}
			switch {
			case (p.Exp.Op == syntax.AssignUnset || p.Exp.Op == syntax.AssignUnsetOrNull) && laterRun[p.Param.Value]:
				s.cmds = append(s.cmds, command{text: src, unknown: "${" + p.Param.Value + ":=…} sets " + p.Param.Value + ", whose value the shell runs as commands later"})
			case p.Exp.Op == syntax.OtherParamOps && p.Exp.Word != nil && strings.Contains(p.Exp.Word.Lit(), "P"):
				// ${x@P} expands x as a prompt: its command
				// substitutions run.
				s.cmds = append(s.cmds, command{text: src, unknown: "${" + p.Param.Value + "@P} runs the command substitutions in the variable's value"})
			}
			return true
		case *syntax.SglQuoted:
			v = p.Value
		case *syntax.Lit:
			v = strings.ReplaceAll(p.Value, `\`, "")
		default:
			return true
		}
		if m := subscriptSubst.FindString(v); m != "" {
			s.cmds = append(s.cmds, command{text: src, unknown: fmt.Sprintf("a string holds a command substitution in an array subscript (%s), which bash runs where the string is evaluated as arithmetic or a name", clipWord(m))})
		}
		return true
	})
}

// zshQualifier finds a zsh glob qualifier that runs code, after a
// pattern: e:…:, e'…', +function (`echo *(e:'rm f':)` runs rm for each
// file).
var zshQualifier = regexp.MustCompile(`[*?\]]\(([^()]*e[:'"{]|\+[A-Za-z_])`)

// subscriptSubst finds a command substitution inside an array subscript.
var subscriptSubst = regexp.MustCompile(`\[[^\]]*(\$\(|` + "`" + `)`)

// laterRun are the variables whose value the shell runs as commands
// later (a prompt's expansions, PROMPT_COMMAND, the file a non-interactive
// bash or sh sources at start).
var laterRun = map[string]bool{
	"PROMPT_COMMAND": true, "PS0": true, "PS1": true, "PS2": true, "PS3": true, "PS4": true,
	"BASH_ENV": true, "ENV": true, "PROMPT": true, "RPROMPT": true, "RPS1": true, "PROMPT2": true, "PROMPT4": true,
}

// assigns records an assignment to a variable the shell later runs as
// commands: what it runs then is not this line's to know.
func (s *scanner) assigns(st *syntax.Stmt, src string, as []*syntax.Assign) {
	for _, a := range as {
		if a.Name != nil && laterRun[a.Name.Value] {
			s.cmds = append(s.cmds, command{text: src, unknown: a.Name.Value + " is set here, and the shell runs its value as commands later"})
		}
		if a.Value != nil {
			// declare -n r=PROMPT_COMMAND: assigning r sets it; and
			// declare "PROMPT_COMMAND=…", a quoted naked argument,
			// assigns it.
			if v, ok := literal(a.Value); ok {
				name, _, _ := strings.Cut(v, "=")
				if laterRun[name] {
					s.cmds = append(s.cmds, command{text: src, unknown: name + " is named here, and the shell runs its value as commands later"})
				}
			}
		}
	}
}

// setsLaterRun says why a builtin that assigns the variables its words
// name (read, printf -v, getopts, mapfile) sets one the shell runs later,
// or "". Only literal words are looked at: a name that is an expansion
// (`read "$v"`) is not seen, as a prompt given by one (`read -p "$p"`)
// must not be refused.
func setsLaterRun(prog string, args []*syntax.Word) string {
	for _, w := range args {
		v, ok := literal(w)
		if !ok {
			continue
		}
		name, _, _ := strings.Cut(v, "[")
		if laterRun[name] {
			return prog + " sets " + name + ", whose value the shell runs as commands later"
		}
	}
	return ""
}

// call is what looking at one simple command needs besides its words.
type call struct {
	src   string
	stmt  *syntax.Stmt
	end   uint
	piped bool
	depth int
	// appended: words are added to this command when it runs (it is
	// xargs's command), so a missing program or script comes from input.
	appended bool
}

func (x *call) text(from *syntax.Word, end uint) string {
	start := from.Pos().Offset()
	if start > end || end > uint(len(x.src)) {
		return ""
	}
	return x.src[start:end]
}

// words looks at a command given by its words (the whole simple command,
// or what a wrapper such as sudo runs).
func (s *scanner) words(x *call, words []*syntax.Word) {
	s.wordsUpTo(x, words, x.end)
}

func (s *scanner) wordsUpTo(x *call, words []*syntax.Word, end uint) {
	text := x.text(words[0], end)
	name, ok := programWord(words[0])
	if !ok {
		s.cmds = append(s.cmds, command{text: text, unknown: fmt.Sprintf("the program %s is known only when the line runs", clipWord(wordSource(x.src, words[0])))})
		return
	}
	// zsh runs `=prog` as the path of prog.
	c := command{prog: path.Base(strings.TrimPrefix(name, "=")), text: text}
	if name == "" {
		c.prog = ""
		c.unknown = "the program's name is empty"
	}
	c.args = make([]arg, len(words)-1)
	for i, w := range words[1:] {
		c.args[i].s, c.args[i].lit = literal(w)
	}
	idx := len(s.cmds)
	s.cmds = append(s.cmds, c)
	why := s.lookThrough(x, c.prog, words, end)
	if why != "" {
		s.cmds[idx].unknown = why
	}
}

// lookThrough collects what a program runs besides itself: a wrapper's
// command, a shell's script, an alias's value. It returns why the
// command's effect cannot be known, or "".
func (s *scanner) lookThrough(x *call, prog string, words []*syntax.Word, end uint) string {
	args := words[1:]
	if v, ok := s.aliases[prog]; ok && !slices.Contains(s.expanding, prog) {
		// Bash expands an alias defined earlier on the same line only on
		// later lines; both readings are checked. Within its own value an
		// alias is not expanded again (`alias ls='ls -F'`).
		rest := ""
		if len(args) > 0 {
			rest = " " + x.text(args[0], end)
		}
		s.expanding = append(s.expanding, prog)
		s.script(v+rest, x.depth+1)
		s.expanding = s.expanding[:len(s.expanding)-1]
	}
	switch prog {
	case "eval":
		// Its words are looked at as a script too, so that a literal
		// `eval 'rm -rf /'` meets the rules for rm.
		if src, ok := joinLiteral(args); ok {
			s.script(src, x.depth+1)
		}
		return "eval runs words known only when the line runs"
	case "source", ".":
		return "source runs a file's lines, not known before the line runs"
	case "alias":
		for _, w := range args {
			v, ok := literal(w)
			if !ok {
				return "an alias whose value is known only when the line runs"
			}
			if name, val, ok := strings.Cut(v, "="); ok {
				if s.defined == nil {
					s.defined = map[string]string{}
					s.aliases = maps.Clone(s.aliases)
					if s.aliases == nil {
						s.aliases = map[string]string{}
					}
				}
				s.aliases[name], s.defined[name] = val, val
				// Checked where it is defined: a later line may use it.
				s.script(val, x.depth+1)
			}
		}
	case "trap":
		if len(args) > 0 {
			if v, ok := literal(args[0]); ok && v == "--" {
				args = args[1:] // the action follows
			} else if ok && (v == "-p" || v == "-l" || v == "-lp" || v == "-pl") {
				return ""
			}
		}
		if len(args) == 0 {
			return ""
		}
		v, ok := literal(args[0])
		switch {
		case !ok:
			return "a trap whose commands are known only when the line runs"
		case v == "-" || v == "":
		default:
			// A number or a signal name alone resets; anything else is a
			// script (an option here is refused by the shell).
			s.script(v, x.depth+1)
		}
	case "read", "getopts":
		return setsLaterRun(prog, args)
	case "mapfile", "readarray":
		if why := setsLaterRun(prog, args); why != "" {
			return why
		}
		fallthrough
	case "compgen", "complete":
		for _, w := range args {
			v, ok := literal(w)
			if !ok {
				return prog + " with an argument known only when the line runs (-C or -F would run it)"
			}
			if strings.HasPrefix(v, "-") && !strings.HasPrefix(v, "--") && strings.ContainsAny(v, "CFW") {
				return prog + " -C, -F or -W runs a command or function, or expands words, given as a string"
			}
		}
	case "printf":
		for i, w := range args {
			if v, ok := literal(w); ok && v == "-v" && i+1 < len(args) {
				if why := setsLaterRun(prog, args[i+1:i+2]); why != "" {
					return why
				}
			}
		}
	case "emulate":
		// zsh: emulate sh -c 'script' runs the script.
		for i, w := range args {
			if v, ok := literal(w); ok && v == "-c" && i+1 < len(args) {
				src, ok := literal(args[i+1])
				if !ok {
					return "the script given to emulate -c is known only when the line runs"
				}
				s.script(src, x.depth+1)
			}
		}
	case "sched":
		return "zsh's sched runs a command later"
	case "r":
		return "zsh's r runs a command from its history again (with substitutions)"
	case "fc":
		for _, w := range args {
			if v, ok := literal(w); ok && strings.HasPrefix(v, "-") && strings.Contains(v, "l") {
				return "" // fc -l lists
			}
		}
		return "fc runs commands from the shell's history"
	case "find":
		s.findExec(x, args)
	case "hash":
		for _, w := range args {
			if v, ok := literal(w); !ok || strings.HasPrefix(v, "-") && strings.Contains(v, "p") {
				return "hash -p makes a name run another program"
			}
		}
	case "su", "runuser", "script":
		return s.commandRunner(x, prog, args, end)
	case "flock":
		return s.flock(x, args, end)
	}
	if isShell(prog) {
		return s.shell(x, args)
	}
	if w, ok := wrappers[prog]; ok {
		return s.wrapper(x, w, args, end)
	}
	return ""
}

// findExec looks at the commands of find's -exec, -execdir, -ok, -okdir.
func (s *scanner) findExec(x *call, args []*syntax.Word) {
	for i := 0; i < len(args); i++ {
		v, _ := literal(args[i])
		if v != "-exec" && v != "-execdir" && v != "-ok" && v != "-okdir" {
			continue
		}
		j := i + 1
		for j < len(args) {
			if t, ok := literal(args[j]); ok && (t == ";" || t == "+") {
				break
			}
			j++
		}
		if j > i+1 {
			s.wordsUpTo(x, args[i+1:j], args[j-1].End().Offset())
		}
		i = j
	}
}

// wordSource is a word as written, for messages.
func wordSource(src string, w *syntax.Word) string {
	a, b := w.Pos().Offset(), w.End().Offset()
	if a <= b && b <= uint(len(src)) {
		return src[a:b]
	}
	return "word"
}

// clipWord shortens a word quoted in a reason: a word can be most of the
// line (a command substitution), and one reason per nested level made
// the reasons' size grow with the square of the line's.
func clipWord(w string) string {
	const most = 64
	if len(w) <= most {
		return w
	}
	i := most
	for i > 0 && !utf8.RuneStart(w[i]) {
		i--
	}
	return w[:i] + "…"
}

// programWord is the program's name when it is known before the line
// runs: literal, and neither a glob nor a brace expansion that the shell
// would turn into other words.
func programWord(w *syntax.Word) (string, bool) {
	for _, p := range w.Parts {
		if l, ok := p.(*syntax.Lit); ok && strings.ContainsAny(l.Value, "*?[{") && l.Value != "[" && l.Value != "[[" {
			// `[` and `[[` alone are no patterns (an unclosed bracket
			// matches itself): the test builtin, or a word dash looks
			// up as a program.
			return "", false
		}
	}
	return literal(w)
}

// literal is a word's value with quotes removed, when it has no
// expansions. $'…' is not decoded: it counts as an expansion.
func literal(w *syntax.Word) (string, bool) {
	if len(w.Parts) == 1 {
		// The common case, without a builder.
		switch p := w.Parts[0].(type) {
		case *syntax.Lit:
			if !strings.Contains(p.Value, `\`) {
				return p.Value, true
			}
		case *syntax.SglQuoted:
			if !p.Dollar {
				return p.Value, true
			}
			return "", false
		}
	}
	var b strings.Builder
	for _, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			unescape(&b, p.Value, false)
		case *syntax.SglQuoted:
			if p.Dollar {
				return "", false
			}
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				unescape(&b, l.Value, true)
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// unescape removes the backslashes the shell removes: before any
// character outside quotes, before $ ` " \ and newline inside double
// quotes. A backslash-newline disappears.
func unescape(b *strings.Builder, s string, dq bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 == len(s) {
			b.WriteByte(c)
			continue
		}
		n := s[i+1]
		switch {
		case n == '\n':
			i++
		case !dq || strings.IndexByte("$`\"\\", n) >= 0:
			b.WriteByte(n)
			i++
		default:
			b.WriteByte(c)
		}
	}
}

// joinLiteral joins literal words with spaces, as eval does.
func joinLiteral(ws []*syntax.Word) (string, bool) {
	parts := make([]string, len(ws))
	for i, w := range ws {
		v, ok := literal(w)
		if !ok {
			return "", false
		}
		parts[i] = v
	}
	return strings.Join(parts, " "), true
}
