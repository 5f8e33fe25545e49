package session

import (
	"fmt"
	"strings"
)

// shState reads a POSIX shell's (dash's) state from its own listings —
// `set`, `export -p`, `readonly -p`, `alias`, `set +o` — which print values
// as quoted shell words; the sections are NUL-separated and each is
// parsed as shell words (see words.go). dash has no arrays, and no way to
// print a function, so functions are said not to be carried.
type shState struct{}

const shReader = `\command printf 'C\0%s\0U\0' "$PWD" >&7
\command umask >&7
\command printf '\0V\0' >&7
set >&7
\command printf '\0P\0' >&7
export -p >&7
\command printf '\0R\0' >&7
readonly -p >&7
\command printf '\0L\0' >&7
\command alias >&7
\command printf '\0O\0' >&7
set +o >&7
\command printf '\0t\0' >&7
trap >&7
\command printf '\0j\0' >&7
\command jobs >&7
\command printf '\0E\0%s\0' "$TRL_n" >&7
`

func (shState) reader(nonce, out, aux string, _ bool) string {
	// fd 7 is the state file for the group only: a user's own fd 7 is
	// the same again afterwards.
	return "{\n" + strings.ReplaceAll(shReader, "TRL_", trlName(nonce, "")) + "} 7<>" + quote(out) + "\n"
}

// line sources file. dash does not expand aliases on reserved words, and
// every command word in trl's file is quoted or a special builtin.
func (shState) line(nonce, file, errFile string, keepAliases bool) string {
	return `\. ` + quote(file) + ` </dev/null >/dev/null 2>|` + quote(errFile) + ` 3<&- 4>&- || \command true`
}

// Options trl needs as they are, or dash fixes at start-up.
var shReservedOptions = map[string]bool{
	"interactive": true, "monitor": true, "noexec": true, "stdin": true, "vi": true, "emacs": true, "privileged": true,
}

func (shState) reservedOption(name string) bool { return shReservedOptions[name] }

// shNotCarried is said of every dash state.
var shNotCarried = NotCarried{What: "function", Detail: "dash cannot print its functions: any defined in the session are not carried"}

func (shState) parse(out []byte, nonce, end string) (*ShellState, error) {
	st := &ShellState{Env: map[string]string{}, Functions: map[string]string{}, Aliases: map[string]string{}, Options: map[string]bool{}}
	f := &fields{b: out}
	vals := map[string]string{}
	exported := map[string]bool{}
	readonly := map[string]bool{}
	own := func(name string) bool { return reservedName(name) || notStateVars[name] }
	for !f.done() {
		switch tag := f.next(); tag {
		case "C":
			st.Cwd = f.next()
		case "U":
			st.Umask = umaskText(f.next())
		case "V", "P", "R", "L":
			lines, err := shellLines(f.next())
			if err != nil {
				return nil, fmt.Errorf("dash's %s listing: %w", map[string]string{"V": "set", "P": "export -p", "R": "readonly -p", "L": "alias"}[tag], err)
			}
			for _, ws := range lines {
				if (tag == "P" || tag == "R") && len(ws) > 0 {
					ws = ws[1:] // "export" or "readonly"
				}
				if len(ws) != 1 {
					continue
				}
				name, value, hasValue := strings.Cut(ws[0], "=")
				switch tag {
				case "V":
					vals[name] = value
				case "P":
					if hasValue {
						exported[name] = true
					}
				case "R":
					readonly[name] = true
				case "L":
					if !reservedName(name) {
						st.Aliases[name] = value
					}
				}
			}
		case "O":
			for _, l := range strings.Split(f.next(), "\n") {
				fs := strings.Fields(l)
				if len(fs) == 3 && fs[0] == "set" && (fs[1] == "-o" || fs[1] == "+o") && !shReservedOptions[fs[2]] {
					st.Options[fs[2]] = fs[1] == "-o"
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
			for name, v := range vals {
				if own(name) {
					continue
				}
				if exported[name] {
					st.Env[name] = v
				} else {
					st.Vars = append(st.Vars, Var{Name: name, Kind: "scalar", Value: v})
				}
			}
			for name := range readonly {
				if _, ok := vals[name]; ok && !own(name) {
					st.Readonly = append(st.Readonly, name)
				}
			}
			st.NotCarried = append(st.NotCarried, shNotCarried)
			return st, nil
		default:
			return nil, fmt.Errorf("unexpected field %q in the shell's state", clipText(tag, 40))
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return nil, fmt.Errorf("the shell's state has no end mark: the reader did not finish")
}

func (shState) writer(st *ShellState, base map[string]string, nonce string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...); b.WriteByte('\n') }
	if st.Cwd != "" {
		w(`\command cd -- %s`, quote(st.Cwd))
	}
	for _, name := range sortedKeys(base) {
		if _, ok := st.Env[name]; !ok && !notStateVars[name] && !shellState[name] && !startupOnly[name] && !strings.HasPrefix(name, "TRL_") && !reservedName(name) {
			w(`unset %s`, name)
		}
	}
	if _, ok := base["OLDPWD"]; !ok && st.Cwd != "" && !st.has("OLDPWD") {
		w(`unset OLDPWD`) // cd set it; the state has none
	}
	for _, name := range sortedKeys(st.Env) {
		w(`%s=%s; export %s`, name, quote(st.Env[name]), name)
	}
	for _, v := range st.Vars {
		if _, ok := base[v.Name]; ok {
			w(`unset %s`, v.Name)
		}
		w(`%s=%s`, v.Name, quote(v.Value))
	}
	for _, n := range st.Readonly {
		w(`readonly %s`, n)
	}
	if st.Umask != "" {
		w(`\command umask %s`, st.Umask)
	}
	for _, name := range sortedKeys(st.Aliases) {
		w(`\command alias %s`, quote(name+"="+st.Aliases[name]))
	}
	var set []string
	last := map[string]bool{"errexit": true, "nounset": true, "verbose": true, "xtrace": true}
	for _, name := range sortedKeys(st.Options) {
		if !last[name] {
			set = append(set, flag(st.Options[name])+"o "+name)
		}
	}
	if len(set) > 0 {
		w(`set %s`, strings.Join(set, " "))
	}
	for _, name := range []string{"nounset", "errexit", "verbose", "xtrace"} {
		if on, ok := st.Options[name]; ok {
			w(`set %so %s`, flag(on), name)
		}
	}
	return b.String()
}
