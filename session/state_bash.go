package session

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// bashState reads a bash session's state with bash's own introspection:
// variables from one `declare -p` (bash's own quoting, parsed by
// parseDeclare: one builtin call is far cheaper than a loop over the
// variables), functions from one `declare -f` (see splitFunctions), aliases from
// BASH_ALIASES, the stack from DIRSTACK, options from SHELLOPTS and
// BASHOPTS (see bashOptionNames); values written with printf '%s\0'.
type bashState struct {
	// opts, when set, holds the names of the session's options and is
	// filled by the first reading that lists them.
	opts *bashOptionNames
}

// bashOptionNames are the names of a bash's `set -o` and `shopt`
// options, listed once: a later reading prints only SHELLOPTS and
// BASHOPTS, the names of those that are on (bash keeps both exactly as
// `set -o` and `shopt` report), one line instead of eighty. bash's
// output to a file is line-buffered, so every line is a write(2), and
// the lines a reader prints are most of its cost.
type bashOptionNames struct {
	set, shopt []string
}

// bashReader is the reader file; TRL_ stands for trl's nonce-named
// prefix, OUT, FN and TRAPS for the files' quoted paths. The reader writes
// to its stdout, the state file (one redirection for the whole: a
// redirection per command costs more than the command), so the DEBUG,
// RETURN and ERR traps, whose output would land in it, are taken away
// while it runs and put back after from `trap -p`. It reads the options
// first (every option with its value when called with an argument, else
// those that are on), then saves them (local -) and turns off those that
// would change its own working (errexit, nounset, xtrace; nocasematch by
// hand).
const bashReader = `TRL_s() {
\builtin local TRL_k TRL_l TRL_c=0
\builtin printf 'X\0%s\0O\0%s\0S\0%s\0' "${TRL_x-1}" "$SHELLOPTS" "$BASHOPTS"
if [[ -n ${1-} ]]; then
\builtin printf 'o\0'
\builtin set -o
\builtin printf '\0s\0'
\builtin shopt
\builtin printf '\0'
fi
if [[ -o history && -z ${HISTIGNORE-} ]]; then \builtin history -d -1 2>/dev/null; fi
\builtin local -
\builtin set +euvx +o pipefail
\builtin shopt -q nocasematch && TRL_c=1
\builtin shopt -u nocasematch
\builtin printf 'C\0%s\0U\0' "$PWD"
\builtin umask
\builtin printf '\0p\0'
\builtin declare -p
\builtin printf '\0F\0'
\builtin declare -F
\builtin printf '\0B\0'
\builtin declare -f
\builtin printf '\0'
for TRL_k in "${!BASH_ALIASES[@]}"; do
  \builtin printf 'l\0%s\0%s\0' "$TRL_k" "${BASH_ALIASES[$TRL_k]}"
done
\builtin printf 'd\0%s\0' "${#DIRSTACK[@]}"
\builtin printf '%s\0' "${DIRSTACK[@]}"
TRL_l=
\builtin read -r -d '' TRL_l <TRAPS || \builtin true
\builtin printf 't\0%s\0j\0' "$TRL_l"
\builtin jobs
\builtin printf '\0E\0%s\0' "$TRL_n"
if (( TRL_c )); then \builtin shopt -s nocasematch; fi
}
\builtin readonly -f TRL_s
`

// bashReaderCall calls the reader with the DEBUG, RETURN and ERR traps
// set aside, and puts them back from the listing the line made.
const bashReaderCall = `\builtin trap - DEBUG RETURN ERR
TRL_s ALL 1<>OUT || \builtin true
TRL_t=
\builtin read -r -d '' TRL_t <TRAPS || \builtin true
\builtin eval "$TRL_t"
\builtin unset -v TRL_t
`

// bashFunctionsReader prints the functions one by one: the fallback when
// one `declare -f` of them all cannot be split for sure (see
// splitFunctions).
const bashFunctionsReader = `\builtin trap - DEBUG RETURN ERR
TRL_g() {
\builtin local TRL_k TRL_l
\builtin local -a TRL_f
if [[ -o history && -z ${HISTIGNORE-} ]]; then \builtin history -d -1 2>/dev/null; fi
\builtin declare -F >|FN
\builtin mapfile -t TRL_f <FN
for TRL_l in "${TRL_f[@]}"; do
  TRL_l=${TRL_l#declare -}
  TRL_k=${TRL_l#* }
  \builtin printf 'f\0%s\0%s\0' "$TRL_k" "${TRL_l%% *}"
  \builtin declare -f -- "$TRL_k"
  \builtin printf '\0'
done
\builtin printf 'E\0%s\0' "$TRL_n"
}
TRL_g 1<>OUT || \builtin true
\builtin unset -f TRL_g
TRL_t=
\builtin read -r -d '' TRL_t <TRAPS || \builtin true
\builtin eval "$TRL_t"
\builtin unset -v TRL_t
`

func (bashState) functionsReader(nonce, out, aux string) string {
	r := strings.NewReplacer("TRL_", trlName(nonce, ""), "OUT", quote(out), "FN", quote(aux), "TRAPS", quote(aux+".traps"))
	return r.Replace(bashFunctionsReader)
}

// errSplitFunctions says the functions must be read one by one.
var errSplitFunctions = fmt.Errorf("functions cannot be split for sure")

// splitFunctions splits one `declare -f` of every function (sorted by
// name, as `declare -F` lists them) into definitions. Each starts with
// "name () \n" at a line start; that header could also be the text of a
// here-document or string of the function before, so the split is used
// only when every header occurs exactly once, in order: then the
// occurrences are the real starts.
func splitFunctions(list, all string) (map[string]string, []string, error) {
	var names, flags []string
	for _, l := range strings.Split(strings.TrimSuffix(list, "\n"), "\n") {
		if l == "" {
			continue
		}
		rest, ok := strings.CutPrefix(l, "declare -")
		fl, name, ok2 := strings.Cut(rest, " ")
		if !ok || !ok2 || name == "" {
			return nil, nil, errSplitFunctions
		}
		names, flags = append(names, name), append(flags, fl)
	}
	// One pass over the lines: every line "X () " whose X is a listed
	// name is a possible header; the split holds when they are exactly
	// the listed names, each once, in order.
	index := make(map[string]int, len(names))
	for i, name := range names {
		index[name] = i
	}
	text := all
	var starts []int
	for pos := 0; pos < len(text); {
		end := strings.IndexByte(text[pos:], '\n')
		if end < 0 {
			end = len(text) - pos
		}
		if name, ok := strings.CutSuffix(text[pos:pos+end], " () "); ok {
			if i, known := index[name]; known {
				if i != len(starts) {
					return nil, nil, errSplitFunctions
				}
				starts = append(starts, pos)
			}
		}
		pos += end + 1
	}
	if len(starts) != len(names) || (len(names) > 0 && starts[0] != 0) {
		return nil, nil, errSplitFunctions
	}
	defs := make(map[string]string, len(names))
	var exported []string
	for i, name := range names {
		end := len(text)
		if i+1 < len(names) {
			end = starts[i+1]
		}
		defs[name] = strings.TrimSuffix(text[starts[i]:end], "\n")
		if strings.Contains(flags[i], "x") {
			exported = append(exported, name)
		}
	}
	return defs, exported, nil
}

// reader defines the reader function on the first call, parsed once
// with aliases off and made read-only like trl's other functions (its
// definition costs more than a run), and calls it.
func (b bashState) reader(nonce, out, aux string, defined bool) string {
	all := "1" // list every option with its value
	if b.opts != nil && b.opts.set != nil {
		all = ""
	}
	r := strings.NewReplacer("TRL_", trlName(nonce, ""), "OUT", quote(out), "FN", quote(aux), "TRAPS", quote(aux+".traps"), " ALL ", " "+all+" ")
	if defined {
		return r.Replace(bashReaderCall)
	}
	return r.Replace(bashReader + bashReaderCall)
}

// line sources file with alias expansion off (an alias named `if` would
// rewrite trl's code as it is parsed) and puts it back afterwards, unless
// the file sets it itself (applying a state).
func (bashState) line(nonce, file, errFile string, keepAliases bool) string {
	x := trlName(nonce, "x")
	src := `\. ` + quote(file) + ` </dev/null >/dev/null 2>` + quote(errFile) + ` 3<&- 4>&- 5>&- || \builtin true`
	if !keepAliases {
		return `\builtin shopt -u expand_aliases; ` + src
	}
	// The traps are listed here, outside the sourced file: inside it, bash
	// hides the ERR trap (the file runs where errexit is ignored) and,
	// without functrace, the DEBUG trap.
	traps := strings.TrimSuffix(file, "sh") + "aux.traps" // see stateFiles
	return x + `=0; \builtin shopt -q expand_aliases && ` + x + `=1; \builtin shopt -u expand_aliases; \builtin trap -p >|` + quote(traps) + `; ` + src +
		`; \builtin test "$` + x + `" = 1 && \builtin shopt -s expand_aliases; \builtin unset -v ` + x
}

// bashOwnVars are bash's own variables: set by the shell, read-only, or
// its view of something else (DIRSTACK is dirs, BASH_ALIASES aliases).
var bashOwnVars = map[string]bool{
	"BASH": true, "BASHOPTS": true, "BASHPID": true, "BASH_ALIASES": true, "BASH_ARGC": true, "BASH_ARGV": true,
	"BASH_ARGV0": true, "BASH_CMDS": true, "BASH_COMMAND": true, "BASH_EXECUTION_STRING": true, "BASH_LINENO": true,
	"BASH_REMATCH": true, "BASH_SOURCE": true, "BASH_SUBSHELL": true, "BASH_VERSINFO": true, "BASH_VERSION": true,
	"COLUMNS": true, "LINES": true, "COMP_WORDBREAKS": true, "DIRSTACK": true, "EPOCHREALTIME": true,
	"EPOCHSECONDS": true, "EUID": true, "FUNCNAME": true, "GROUPS": true, "HISTCMD": true, "HOSTNAME": true,
	"HOSTTYPE": true, "MACHTYPE": true, "OSTYPE": true, "PIPESTATUS": true, "RANDOM": true, "SECONDS": true,
	"SHELLOPTS": true, "SRANDOM": true, "UID": true,
}

// bashSetOptions are bash's `set -o` options; the rest of a state's
// options are shopt's.
var bashSetOptions = map[string]bool{
	"allexport": true, "braceexpand": true, "emacs": true, "errexit": true, "errtrace": true, "functrace": true,
	"hashall": true, "histexpand": true, "history": true, "ignoreeof": true, "interactive-comments": true,
	"keyword": true, "monitor": true, "noclobber": true, "noexec": true, "noglob": true, "nolog": true,
	"notify": true, "nounset": true, "onecmd": true, "physical": true, "pipefail": true, "posix": true,
	"privileged": true, "verbose": true, "vi": true, "xtrace": true,
}

// Options trl's protocol owns (line editing off, job control on, lines
// run) or that bash does not let a script set.
var bashReservedOptions = map[string]bool{
	"emacs": true, "vi": true, "monitor": true, "noexec": true, "onecmd": true, "privileged": true,
	"login_shell": true, "restricted_shell": true,
}

func (bashState) reservedOption(name string) bool { return bashReservedOptions[name] }

// carriedOption reports whether a state carries a bash option: not
// trl's, not expand_aliases (read before trl's line turned it off), and
// not compatNN (views of BASH_COMPAT, carried as a variable).
func carriedOption(name string) bool {
	return !bashReservedOptions[name] && name != "expand_aliases" && !strings.HasPrefix(name, "compat")
}

func (b bashState) parse(out []byte, nonce, end string) (*ShellState, error) {
	st := &ShellState{Env: map[string]string{}, Functions: map[string]string{}, Aliases: map[string]string{}, Options: map[string]bool{}}
	f := &fields{b: out}
	own := func(name string) bool {
		return reservedName(name) || notStateVars[name] || bashOwnVars[name]
	}
	readonly := map[string]bool{}
	var list string
	var listed bashOptionNames
	var onSet, onShopt *string
	for !f.done() {
		switch tag := f.next(); tag {
		case "X":
			st.Options["expand_aliases"] = f.next() == "1"
		case "o", "s":
			names := optionLines(f.next())
			for _, o := range names {
				if carriedOption(o.name) {
					st.Options[o.name] = o.on
				}
			}
			if tag == "o" {
				listed.set = optionNames(names)
			} else {
				listed.shopt = optionNames(names)
			}
		case "O":
			v := f.next()
			onSet = &v
		case "S":
			v := f.next()
			onShopt = &v
		case "C":
			st.Cwd = f.next()
		case "U":
			st.Umask = umaskText(f.next())
		case "p":
			decls, err := parseDeclare(f.next())
			if err != nil {
				return nil, err
			}
			st.Vars = make([]Var, 0, len(decls))
			for _, d := range decls {
				if !d.set || own(d.name) {
					continue
				}
				attrs := bashAttrs(d.flags, d.name, readonly)
				switch {
				case strings.Contains(d.flags, "n"):
					st.Vars = append(st.Vars, Var{Name: d.name, Kind: "nameref", Value: d.value})
				case strings.Contains(d.flags, "A"):
					v := Var{Name: d.name, Kind: "assoc", Assoc: map[string]string{}, Attrs: attrs}
					for i, k := range d.keys {
						v.Assoc[k] = d.vals[i]
					}
					st.Vars = append(st.Vars, v)
				case strings.Contains(d.flags, "a") || d.compound:
					v := Var{Name: d.name, Kind: "array", Array: d.vals, Attrs: attrs}
					idx := make([]int, len(d.keys))
					dense := true
					for i, k := range d.keys {
						idx[i], _ = strconv.Atoi(k)
						if idx[i] != i {
							dense = false
						}
					}
					if !dense {
						v.Indices = idx
					}
					if v.Array == nil {
						v.Array = []string{}
					}
					st.Vars = append(st.Vars, v)
				case attrs == "x":
					st.Env[d.name] = d.value
				default:
					st.Vars = append(st.Vars, Var{Name: d.name, Kind: "scalar", Value: d.value, Attrs: attrs})
				}
			}
		case "F":
			list = f.next()
		case "B":
			defs, exported, err := splitFunctions(list, f.next())
			if err != nil {
				st.Functions = nil // read them one by one (see State)
				continue
			}
			for name, def := range defs {
				if !reservedName(name) {
					st.Functions[name] = def
				}
			}
			for _, name := range exported {
				st.NotCarried = append(st.NotCarried, exportedFunction(name))
			}
		case "f":
			name, flags, def := f.next(), f.next(), f.next()
			if reservedName(name) {
				continue
			}
			st.Functions[name] = strings.TrimSuffix(def, "\n")
			if strings.Contains(flags, "x") {
				st.NotCarried = append(st.NotCarried, exportedFunction(name))
			}
		case "l":
			name, value := f.next(), f.next()
			if !reservedName(name) {
				st.Aliases[name] = value
			}
		case "d":
			n := f.count()
			for i := 0; i < n; i++ {
				d := f.next()
				if i > 0 {
					st.Dirs = append(st.Dirs, d)
				}
			}
		case "t":
			st.NotCarried = append(st.NotCarried, trapsNotCarried(f.next())...)
		case "j":
			st.NotCarried = append(st.NotCarried, jobsNotCarried(f.next())...)
		case "E":
			if err := f.end(end); err != nil {
				return nil, err
			}
			if _, read := st.Options["expand_aliases"]; !read && onSet == nil && onShopt == nil && listed.set == nil && listed.shopt == nil {
				// The functions read one by one: no options.
				st.Readonly = sortedKeys(readonly)
				return st, nil
			}
			if onSet == nil || onShopt == nil {
				return nil, fmt.Errorf("bash's state does not say which options are on")
			}
			st.bashOpts = &[2]string{*onSet, *onShopt}
			switch {
			case listed.set == nil && (b.opts == nil || b.opts.set == nil):
				return nil, fmt.Errorf("bash's state names the options that are on, and their names are not known")
			case listed.set == nil:
				on := map[string]bool{}
				for _, list := range []string{*onSet, *onShopt} {
					for _, name := range strings.Split(list, ":") {
						on[name] = true
					}
				}
				for _, names := range [][]string{b.opts.set, b.opts.shopt} {
					for _, name := range names {
						if carriedOption(name) {
							st.Options[name] = on[name]
						}
					}
				}
			case b.opts != nil && listed.set != nil && listed.shopt != nil:
				*b.opts = listed
			}
			st.Readonly = sortedKeys(readonly)
			return st, nil
		default:
			return nil, fmt.Errorf("unexpected field %q in bash's state", clipText(tag, 40))
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return nil, fmt.Errorf("bash's state has no end mark: the reader did not finish")
}

func exportedFunction(name string) NotCarried {
	return NotCarried{What: "function", Detail: "function " + name + " is exported (export -f); it is carried as a plain function"}
}

// bashAttrs takes the kind (a, A) and readonly (r, recorded) out of
// bash's attribute letters and returns the rest, sorted.
func bashAttrs(attrs, name string, readonly map[string]bool) string {
	var keep []byte
	for i := 0; i < len(attrs); i++ {
		switch c := attrs[i]; c {
		case 'a', 'A', 'n', '-':
		case 'r':
			readonly[name] = true
		default:
			keep = append(keep, c)
		}
	}
	sort.Slice(keep, func(i, j int) bool { return keep[i] < keep[j] })
	return string(keep)
}

type optionLine struct {
	name string
	on   bool
}

// optionLines parses `set -o` and `shopt` listings: "name<spaces>on".
func optionLines(text string) []optionLine {
	var out []optionLine
	for _, l := range strings.Split(text, "\n") {
		fs := strings.Fields(l)
		if len(fs) == 2 && (fs[1] == "on" || fs[1] == "off") {
			out = append(out, optionLine{fs[0], fs[1] == "on"})
		}
	}
	return out
}

func optionNames(lines []optionLine) []string {
	out := make([]string, len(lines))
	for i, o := range lines {
		out[i] = o.name
	}
	return out
}

// writer makes the file that applies st. bash parses and runs a sourced
// file one command at a time, and each command costs more than the work
// it does here, so what can be one command is: the unsets, the exports,
// the scalar assignments (values are quoted literals, assigned left to
// right, and nothing is expanded), the attribute declarations, the
// aliases and the options. Attributes come after every value (a -u or -i
// set first would change the value assigned), readonly after them all,
// and errexit, nounset, verbose and xtrace last of all, in the file's last
// command (they would change how the rest of it runs).
func (bashState) writer(st *ShellState, base map[string]string, _ string) string {
	var b strings.Builder
	size := 4096
	for _, v := range st.Vars {
		size += len(v.Name) + len(v.Value) + 4
	}
	for _, f := range st.Functions {
		size += len(f) + 1
	}
	b.Grow(size)
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...); b.WriteByte('\n') }
	// words writes one command of a fixed head and the given words, if
	// there are any.
	words := func(head string, ws []string) {
		if len(ws) == 0 {
			return
		}
		b.WriteString(head)
		for _, x := range ws {
			b.WriteByte(' ')
			b.WriteString(x)
		}
		b.WriteByte('\n')
	}
	w(`if [[ -o history && -z ${HISTIGNORE-} ]]; then \builtin history -d -1 2>/dev/null; fi`)
	if st.Cwd != "" {
		w(`\builtin cd -- %s`, quote(st.Cwd))
	}
	var unset []string
	for _, k := range sortedKeys(base) {
		if _, ok := st.Env[k]; !ok && !notStateVars[k] && !bashOwnVars[k] && !shellState[k] && !startupOnly[k] && !strings.HasPrefix(k, "TRL_") && !reservedName(k) {
			unset = append(unset, k)
		}
	}
	for _, v := range st.Vars {
		if _, ok := base[v.Name]; ok {
			unset = append(unset, v.Name)
		}
	}
	if _, ok := base["OLDPWD"]; !ok && st.Cwd != "" && !st.has("OLDPWD") {
		unset = append(unset, "OLDPWD") // cd set it; the state has none
	}
	words(`\builtin unset -v`, unset)
	// assign writes name='value', after sep.
	assign := func(sep byte, name, value string) {
		b.WriteByte(sep)
		b.WriteString(name)
		b.WriteByte('=')
		writeQuoted(&b, value)
	}
	if len(st.Env) > 0 {
		b.WriteString(`\builtin export`)
		for _, k := range sortedKeys(st.Env) {
			assign(' ', k, st.Env[k])
		}
		b.WriteByte('\n')
	}
	sep := byte(0)
	for _, v := range st.Vars {
		if v.Kind != "nameref" && v.Kind != "assoc" && v.Kind != "array" {
			if sep == 0 {
				b.WriteString(v.Name)
				b.WriteByte('=')
				writeQuoted(&b, v.Value)
				sep = ' '
				continue
			}
			assign(sep, v.Name, v.Value)
		}
	}
	if sep != 0 {
		b.WriteByte('\n')
	}
	attrs := map[string][]string{}
	for _, v := range st.Vars {
		switch v.Kind {
		case "nameref":
			w(`\builtin declare -n %s=%s`, v.Name, quote(v.Value))
			continue
		case "assoc":
			w(`\builtin declare -A %s`, v.Name)
			for _, k := range sortedKeys(v.Assoc) {
				w(`%s[%s]=%s`, v.Name, quote(k), quote(v.Assoc[k]))
			}
		case "array":
			var items []string
			for i, x := range v.Array {
				if len(v.Indices) > 0 {
					items = append(items, "["+strconv.Itoa(v.Indices[i])+"]="+quote(x))
				} else {
					items = append(items, quote(x))
				}
			}
			w(`%s=(%s)`, v.Name, strings.Join(items, " "))
		}
		if v.Attrs != "" {
			attrs[v.Attrs] = append(attrs[v.Attrs], v.Name)
		}
	}
	for _, a := range sortedKeys(attrs) {
		words(`\builtin declare -`+a, attrs[a])
	}
	words(`\builtin readonly`, st.Readonly)
	for i := len(st.Dirs) - 1; i >= 0; i-- {
		w(`\builtin pushd -n -- %s >/dev/null`, quote(st.Dirs[i]))
	}
	if st.Umask != "" {
		w(`\builtin umask %s`, st.Umask)
	}
	// Definitions as bash printed them: parsed here with aliases off, as
	// eval would, without eval's cost.
	for _, name := range sortedKeys(st.Functions) {
		b.WriteString(st.Functions[name])
		b.WriteByte('\n')
	}
	var aliases []string
	for _, name := range sortedKeys(st.Aliases) {
		aliases = append(aliases, quote(name+"="+st.Aliases[name]))
	}
	words(`\builtin alias --`, aliases)
	var set, on, off []string
	last := map[string]bool{"errexit": true, "nounset": true, "verbose": true, "xtrace": true}
	for _, name := range sortedKeys(st.Options) {
		switch {
		case bashSetOptions[name]:
			if !last[name] {
				set = append(set, flag(st.Options[name])+"o "+name)
			}
		case name == "expand_aliases":
		case st.Options[name]:
			on = append(on, name)
		default:
			off = append(off, name)
		}
	}
	// A state read in this daemon says what SHELLOPTS and BASHOPTS were
	// (with expand_aliases off, as it is here too): when the new shell's
	// are the same, every option but the last four already has its value
	// and setting them would change nothing, so they are not set.
	if st.bashOpts != nil {
		w(`if [[ $SHELLOPTS != %s || $BASHOPTS != %s ]]; then`, quote(st.bashOpts[0]), quote(st.bashOpts[1]))
	}
	words(`\builtin shopt -s`, on)
	words(`\builtin shopt -u`, off)
	words(`\builtin set`, set)
	if st.bashOpts != nil {
		w(`fi`)
	}
	if x, ok := st.Options["expand_aliases"]; !ok || x {
		w(`\builtin shopt -s expand_aliases`)
	}
	set = set[:0]
	for _, name := range []string{"nounset", "errexit", "verbose", "xtrace"} {
		if x, ok := st.Options[name]; ok {
			set = append(set, flag(x)+"o "+name)
		}
	}
	words(`\builtin set`, set)
	return b.String()
}

func flag(on bool) string {
	if on {
		return "-"
	}
	return "+"
}
