package session

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// zshState reads a zsh session's state from the zsh/parameter module's
// special hashes: $parameters (names and types), $functions, $aliases,
// $options, $dirstack; values by ${(P)name}, written with printf '%s\0'.
// Applying assigns to the same hashes ($functions, $aliases, $options),
// keys going through a variable: zsh keeps quotes in a subscript.
type zshState struct{}

// zshReader: TRL_ is trl's prefix. The options are read first (with
// [@]: under KSH_ARRAYS a bare $options is its first element); then
// `emulate -L zsh` gives the reader zsh's defaults (no ksh arrays, no
// errexit, no xtrace) until it returns.
const zshReader = `TRL_s() {
\builtin local -a TRL_o TRL_n
TRL_o=("${(@kv)options[@]}")
\builtin emulate -L zsh
\builtin local TRL_v TRL_t TRL_k TRL_l
\builtin printf 'X\0%s\0o\0%s\0' "${TRL_x-on}" "${#TRL_o}" >&7
\builtin printf '%s\0' "${TRL_o[@]}" >&7
\builtin printf 'C\0%s\0U\0' "$PWD" >&7
\builtin umask >&7
\builtin printf '\0' >&7
for TRL_v in "${(@k)parameters}"; do
  TRL_t=${parameters[$TRL_v]}
  if [[ $TRL_t == *-special* && $TRL_t != *-export* ]]; then
    case $TRL_v in
      (IFS|HISTSIZE|SAVEHIST|WORDCHARS|fpath|cdpath) ;;
      (*) continue ;;
    esac
  fi
  case $TRL_t in
    (association*) TRL_n=("${(@Pkv)TRL_v}"); TRL_k=A ;;
    (array*) TRL_n=("${(@P)TRL_v}"); TRL_k=a ;;
    (*) TRL_l=${(P)TRL_v}; TRL_l=${TRL_l//\\/\\\\}
        \builtin printf 'v\0%s\0%s\0%s\0' "$TRL_v" "$TRL_t" "${TRL_l//$'\0'/\\0}" >&7; continue ;;
  esac
  TRL_n=("${(@)TRL_n//\\/\\\\}")
  \builtin printf '%s\0%s\0%s\0%s\0' "$TRL_k" "$TRL_v" "$TRL_t" "${#TRL_n}" >&7
  if (( ${#TRL_n} )); then \builtin printf '%s\0' "${(@)TRL_n//$'\0'/\\0}" >&7; fi
done
for TRL_v in "${(@k)functions}"; do
  TRL_l=${functions[$TRL_v]//\\/\\\\}
  \builtin printf 'f\0%s\0%s\0' "$TRL_v" "${TRL_l//$'\0'/\\0}" >&7
done
for TRL_v in "${(@k)aliases}"; do
  TRL_l=${aliases[$TRL_v]//\\/\\\\}
  \builtin printf 'l\0%s\0%s\0' "$TRL_v" "${TRL_l//$'\0'/\\0}" >&7
done
\builtin printf 'g\0' >&7
\builtin alias -g >&7
\builtin alias -s >&7
\builtin printf '\0D\0%s\0' "${#dirstack}" >&7
TRL_n=("${(@)dirstack//\\/\\\\}")
if (( ${#TRL_n} )); then \builtin printf '%s\0' "${(@)TRL_n//$'\0'/\\0}" >&7; fi
\builtin printf 't\0' >&7
\builtin trap >&7
\builtin printf '\0j\0' >&7
\builtin jobs >&7
\builtin printf '\0E\0%s\0' "${psvar[1]}" >&7
}
TRL_s 7<>OUT || \builtin true
\builtin unfunction TRL_s
`

func (zshState) reader(nonce, out, aux string, _ bool) string {
	r := strings.NewReplacer("TRL_", trlName(nonce, ""), "OUT", quote(out))
	return r.Replace(zshReader)
}

// line sources file with the ALIASES option off, and puts it back after
// unless the file sets it (applying a state).
func (zshState) line(nonce, file, errFile string, keepAliases bool) string {
	x := trlName(nonce, "x")
	src := `\. ` + quote(file) + ` </dev/null >/dev/null 2>|` + quote(errFile) + ` 3<&- 4>&- 5>&- || \builtin true`
	if !keepAliases {
		return `options[aliases]=off; ` + src
	}
	return x + `=${options[aliases]}; options[aliases]=off; ` + src + `; options[aliases]=$` + x + `; \builtin unset ` + x
}

// zshOwnVars are zsh's own parameters that are not marked special.
var zshOwnVars = map[string]bool{
	"ZSH_ARGZERO": true, "ZSH_EXECUTION_STRING": true, "ZSH_NAME": true, "ZSH_VERSION": true, "ZSH_PATCHLEVEL": true,
	"OSTYPE": true, "VENDOR": true, "CPUTYPE": true, "MACHTYPE": true, "HOST": true, "TTY": true, "signals": true,
	// Parameters of modules zsh loads on demand, there in one shell and
	// not yet in another.
	"WATCHFMT": true, "LOGCHECK": true, "watch": true, "zle_bracketed_paste": true,
}

// Options trl's protocol needs as they are (see shell.go's zsh dialect),
// and those zsh fixes at start-up.
var zshReservedOptions = map[string]bool{
	"interactive": true, "monitor": true, "zle": true, "shinstdin": true, "singlecommand": true, "login": true,
	"privileged": true, "restricted": true, "promptsubst": true, "promptpercent": true, "promptbang": true,
	"checkjobs": true, "checkrunningjobs": true, "exec": true,
}

func (zshState) reservedOption(name string) bool { return zshReservedOptions[name] }

// zshAttrLetters maps zsh's type words to typeset flags.
var zshAttrLetters = map[string]byte{"lower": 'l', "upper": 'u', "unique": 'U', "tag": 't', "hide": 'h', "hideval": 'H', "export": 'x'}

// zshHistoryHooks is the array of zsh's zshaddhistory hooks, one of which
// is trl's (historyNote).
const zshHistoryHooks = "zshaddhistory_functions"

func (zshState) parse(out []byte, nonce, end string) (*ShellState, error) {
	st := &ShellState{Env: map[string]string{}, Functions: map[string]string{}, Aliases: map[string]string{}, Options: map[string]bool{}}
	f := &fields{b: out}
	readonly := map[string]bool{}
	own := func(name string) bool { return reservedName(name) || notStateVars[name] || zshOwnVars[name] }
	var aliasesOn string
	for !f.done() {
		switch tag := f.next(); tag {
		case "X":
			aliasesOn = f.next()
		case "o":
			n := f.count()
			for i := 0; i+1 < n; i += 2 {
				name, val := f.next(), f.next()
				if !zshReservedOptions[name] {
					st.Options[name] = val == "on"
				}
			}
		case "C":
			st.Cwd = f.next()
		case "U":
			st.Umask = umaskText(f.next())
		case "v", "a", "A":
			name, typ := f.next(), f.next()
			var value string
			var items []string
			if tag == "v" {
				value = zshUnescape(f.next())
			} else {
				n := f.count()
				items = make([]string, n)
				for i := range items {
					items[i] = zshUnescape(f.next())
				}
			}
			if own(name) {
				continue
			}
			if name == zshHistoryHooks {
				// trl's own hook is machinery (historyNote); the user's
				// are carried, and none at all is no variable.
				if items = slices.DeleteFunc(items, reservedName); len(items) == 0 {
					continue
				}
			}
			words := strings.Split(typ, "-")
			special := strings.Contains(typ, "-special")
			v := Var{Name: name}
			switch words[0] {
			case "association":
				v.Kind, v.Assoc = "assoc", map[string]string{}
				for i := 0; i+1 < len(items); i += 2 {
					v.Assoc[items[i]] = items[i+1]
				}
			case "array":
				v.Kind, v.Array = "array", items
			case "integer", "float":
				v.Kind, v.Value = words[0], value
			default:
				v.Kind, v.Value = "scalar", value
			}
			if special && (v.Kind == "integer" || v.Kind == "float") {
				v.Kind = "scalar" // assigned as it is: zsh keeps its type
			}
			var attrs []byte
			exported := false
			for _, w := range words[1:] {
				switch {
				case w == "readonly":
					readonly[name] = true
				case w == "export":
					exported = true
				case special || w == "special" || w == "tied" || w == "local":
				case zshAttrLetters[w] != 0:
					attrs = append(attrs, zshAttrLetters[w])
				default:
					st.NotCarried = append(st.NotCarried, NotCarried{What: "variable", Detail: fmt.Sprintf("%s's attribute %q (typeset) is not carried", name, w)})
				}
			}
			if exported && v.Kind == "scalar" && len(attrs) == 0 {
				st.Env[name] = v.Value
				continue
			}
			if exported {
				attrs = append(attrs, 'x')
			}
			sort.Slice(attrs, func(i, j int) bool { return attrs[i] < attrs[j] })
			v.Attrs = string(attrs)
			st.Vars = append(st.Vars, v)
		case "f":
			name, body := f.next(), zshUnescape(f.next())
			if !reservedName(name) {
				st.Functions[name] = body
			}
		case "l":
			name, value := f.next(), zshUnescape(f.next())
			if !reservedName(name) {
				st.Aliases[name] = value
			}
		case "g":
			for _, l := range strings.Split(f.next(), "\n") {
				if strings.TrimSpace(l) != "" {
					st.NotCarried = append(st.NotCarried, NotCarried{What: "alias", Detail: "global or suffix alias " + l})
				}
			}
		case "D":
			n := f.count()
			for i := 0; i < n; i++ {
				st.Dirs = append(st.Dirs, zshUnescape(f.next()))
			}
		case "t":
			st.NotCarried = append(st.NotCarried, trapsNotCarried(f.next())...)
		case "j":
			st.NotCarried = append(st.NotCarried, jobsNotCarried(f.next())...)
		case "E":
			if err := f.end(end); err != nil {
				return nil, err
			}
			st.Options["aliases"] = aliasesOn != "off"
			st.Readonly = sortedKeys(readonly)
			return st, nil
		default:
			return nil, fmt.Errorf("unexpected field %q in zsh's state", clipText(tag, 40))
		}
	}
	if f.err != nil {
		return nil, f.err
	}
	return nil, fmt.Errorf("zsh's state has no end mark: the reader did not finish")
}

func (zshState) writer(st *ShellState, base map[string]string, nonce string) string {
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...); b.WriteByte('\n') }
	k := trlName(nonce, "k")
	if st.Cwd != "" {
		w(`\builtin cd -q -- %s`, zshQuote(st.Cwd))
	}
	for _, name := range sortedKeys(base) {
		if _, ok := st.Env[name]; !ok && !notStateVars[name] && !zshOwnVars[name] && !shellState[name] && !startupOnly[name] && !strings.HasPrefix(name, "TRL_") && !reservedName(name) {
			w(`\builtin unset %s`, name)
		}
	}
	for _, name := range sortedKeys(st.Env) {
		w(`%s=%s; \builtin export %s`, name, zshQuote(st.Env[name]), name)
	}
	for _, v := range st.Vars {
		if _, ok := base[v.Name]; ok {
			w(`\builtin unset %s`, v.Name)
		}
		switch v.Kind {
		case "assoc":
			var items []string
			for _, key := range sortedKeys(v.Assoc) {
				items = append(items, zshQuote(key), zshQuote(v.Assoc[key]))
			}
			w(`\builtin typeset -gA %s; %s=(%s)`, v.Name, v.Name, strings.Join(items, " "))
		case "array":
			var items []string
			for _, x := range v.Array {
				items = append(items, zshQuote(x))
			}
			w(`%s=(%s)`, v.Name, strings.Join(items, " "))
		case "integer":
			w(`\builtin typeset -gi %s=%s`, v.Name, zshQuote(v.Value))
		case "float":
			fl := "F"
			if strings.ContainsAny(v.Value, "eE") {
				fl = "E"
			}
			w(`\builtin typeset -g%s %s=%s`, fl, v.Name, zshQuote(v.Value))
		default:
			w(`%s=%s`, v.Name, zshQuote(v.Value))
		}
		if v.Attrs != "" {
			w(`\builtin typeset -g%s %s`, v.Attrs, v.Name)
		}
	}
	for _, v := range st.Vars {
		if v.Name == zshHistoryHooks {
			// The state's hooks replaced the session's: trl's goes back.
			w(`%s+=(%s)`, zshHistoryHooks, trlName(nonce, "hh"))
		}
	}
	for _, n := range st.Readonly {
		w(`\builtin typeset -gr %s`, n)
	}
	if len(st.Dirs) > 0 {
		var items []string
		for _, d := range st.Dirs {
			items = append(items, zshQuote(d))
		}
		w(`dirstack=(%s)`, strings.Join(items, " "))
	}
	if st.Umask != "" {
		w(`\builtin umask %s`, st.Umask)
	}
	for _, name := range sortedKeys(st.Functions) {
		w(`%s=%s; functions[$%s]=%s`, k, zshQuote(name), k, zshQuote(st.Functions[name]))
	}
	for _, name := range sortedKeys(st.Aliases) {
		w(`%s=%s; aliases[$%s]=%s`, k, zshQuote(name), k, zshQuote(st.Aliases[name]))
	}
	w(`\builtin unset %s`, k)
	last := map[string]bool{"errexit": true, "unset": true, "verbose": true, "xtrace": true, "aliases": true}
	for _, name := range sortedKeys(st.Options) {
		if !last[name] {
			w(`options[%s]=%s`, name, onOff(st.Options[name]))
		}
	}
	if on, ok := st.Options["aliases"]; !ok || on {
		w(`options[aliases]=on`)
	}
	for _, name := range []string{"unset", "errexit", "verbose", "xtrace"} {
		if on, ok := st.Options[name]; ok {
			w(`options[%s]=%s`, name, onOff(on))
		}
	}
	return b.String()
}

func onOff(on bool) string {
	if on {
		return "on"
	}
	return "off"
}

// zshUnescape undoes the reader's escapes: zsh values may hold NUL bytes,
// written as \0, and a backslash is written \\.
func zshUnescape(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '0' {
				b.WriteByte(0)
			} else {
				b.WriteByte(s[i])
			}
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// zshQuote is quote for zsh, which keeps NUL bytes in values: each NUL
// is written $'\0' between quoted parts.
func zshQuote(s string) string {
	if !strings.ContainsRune(s, 0) {
		return quote(s)
	}
	parts := strings.Split(s, "\x00")
	for i, p := range parts {
		parts[i] = quote(p)
	}
	return strings.Join(parts, "$'\\0'")
}
