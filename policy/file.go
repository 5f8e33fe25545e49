package policy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/trl-project/trl/internal/suggest"
	"go.yaml.in/yaml/v3"
)

// ErrInvalid is wrapped by every error about a policy file's content.
var ErrInvalid = errors.New("invalid policy")

// Error is one problem in a policy file, at a line (0 when the problem is
// the whole file).
type Error struct {
	File    string
	Line    int
	Problem string
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteString(": ")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	b.WriteString(e.Problem)
	return b.String()
}

func (e *Error) Unwrap() error { return ErrInvalid }

// Policy is a loaded policy file. It is immutable and safe for concurrent
// use.
type Policy struct {
	file    string
	rules   []*rule
	def     Action
	unknown Action
	// defReason is the reason given for the default action.
	defReason string
	// lineRules are the rules without `program` and with `regex`: they
	// are also tried on the whole line, so that a pattern can span a
	// pipeline or a list.
	lineRules []*rule
}

// File is the path the policy was loaded from ("" when parsed from bytes
// without a name).
func (p *Policy) File() string { return p.file }

// Len is the number of rules.
func (p *Policy) Len() int { return len(p.rules) }

// Default is the action for a command no rule matches.
func (p *Policy) Default() Action { return p.def }

// Unknown is the action for what cannot be known before the line runs.
func (p *Policy) Unknown() Action { return p.unknown }

// Asks names the rules whose action is ask, in order, then "default"
// when that is ask (the unknown action is Unknown).
func (p *Policy) Asks() []string {
	var names []string
	for _, r := range p.rules {
		if r.action == Ask {
			names = append(names, r.name)
		}
	}
	if p.def == Ask {
		names = append(names, "default")
	}
	return names
}

// Load reads and checks the policy file at path.
func Load(path string) (*Policy, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("policy: %w", err)
	}
	return Parse(data, path)
}

// The file's shape. Unknown keys are errors (KnownFields); values that
// need checking have types whose UnmarshalYAML reports the line.
type fileYAML struct {
	Default *actionYAML `yaml:"default"`
	Unknown *actionYAML `yaml:"unknown"`
	Rules   []ruleYAML  `yaml:"rules"`
}

type ruleYAML struct {
	Name      string     `yaml:"name"`
	Match     matchYAML  `yaml:"match"`
	Action    actionYAML `yaml:"action"`
	Reason    string     `yaml:"reason"`
	Dangerous bool       `yaml:"dangerous"`
}

type matchYAML struct {
	Program programsYAML `yaml:"program"`
	Regex   regexYAML    `yaml:"regex"`
	Cwd     globsYAML    `yaml:"cwd"`
	Session globsYAML    `yaml:"session"`
	Actor   globsYAML    `yaml:"actor"`
}

// knownKeys are every key the file may have, for "did you mean", and
// where each belongs.
var knownKeys = map[string]string{
	"default": "at the top level", "unknown": "at the top level", "rules": "at the top level",
	"name": "in a rule", "match": "in a rule", "action": "in a rule", "reason": "in a rule", "dangerous": "in a rule",
	"program": "under match", "regex": "under match", "cwd": "under match", "session": "under match", "actor": "under match",
}

type actionYAML struct {
	a    Action
	line int
}

func (a *actionYAML) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &Error{Line: n.Line, Problem: "an action is one of allow, ask, deny"}
	}
	v, ok := parseAction(n.Value)
	if !ok {
		return &Error{Line: n.Line, Problem: fmt.Sprintf("action %q is not one of allow, ask, deny", n.Value)}
	}
	a.a, a.line = v, n.Line
	return nil
}

// scalars accepts one string or a list of strings.
func scalars(n *yaml.Node, what string) ([]string, error) {
	switch n.Kind {
	case yaml.ScalarNode:
		return []string{n.Value}, nil
	case yaml.SequenceNode:
		out := make([]string, 0, len(n.Content))
		for _, c := range n.Content {
			if c.Kind != yaml.ScalarNode {
				return nil, &Error{Line: c.Line, Problem: what + " is a string or a list of strings"}
			}
			out = append(out, c.Value)
		}
		return out, nil
	}
	return nil, &Error{Line: n.Line, Problem: what + " is a string or a list of strings"}
}

// programsYAML maps a program's name to the subcommands that match; an
// empty subcommand matches the program whatever its arguments.
type programsYAML map[string][]string

func (p *programsYAML) UnmarshalYAML(n *yaml.Node) error {
	names, err := scalars(n, "program")
	if err != nil {
		return err
	}
	m := programsYAML{}
	for _, name := range names {
		words := strings.Fields(name)
		switch {
		case len(words) == 0:
			return &Error{Line: n.Line, Problem: "program: an empty name"}
		case len(words) > 2:
			return &Error{Line: n.Line, Problem: fmt.Sprintf("program %q: a name is one word (rm) or two (git push)", name)}
		case strings.Contains(words[0], "/"):
			return &Error{Line: n.Line, Problem: fmt.Sprintf("program %q: programs are matched by name, whatever their directory: write %q", name, path.Base(words[0]))}
		}
		sub := ""
		if len(words) == 2 {
			sub = words[1]
		}
		m[words[0]] = append(m[words[0]], sub)
	}
	*p = m
	return nil
}

type regexYAML struct{ re *regexp.Regexp }

func (r *regexYAML) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return &Error{Line: n.Line, Problem: "regex is one string"}
	}
	re, err := regexp.Compile(n.Value)
	if err != nil {
		return &Error{Line: n.Line, Problem: "regex: " + err.Error()}
	}
	r.re = re
	return nil
}

type globsYAML []string

func (g *globsYAML) UnmarshalYAML(n *yaml.Node) error {
	pats, err := scalars(n, "a glob")
	if err != nil {
		return err
	}
	for _, p := range pats {
		if err := checkGlob(p); err != nil {
			return &Error{Line: n.Line, Problem: fmt.Sprintf("glob %q: %v", p, err)}
		}
	}
	*g = pats
	return nil
}

// Parse checks a policy file's content; name is used in errors.
func Parse(data []byte, name string) (*Policy, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, yamlError(err, name)
	}
	if len(root.Content) == 0 {
		return nil, &Error{File: name, Problem: "the file is empty: a policy has rules, a default, or both"}
	}
	if root.Content[0].Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Content[0].Line, Problem: "a policy is a mapping with rules, default and unknown"}
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	var f fileYAML
	if err := dec.Decode(&f); err != nil {
		return nil, yamlError(err, name)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, &Error{File: name, Line: extra.Line, Problem: "more than one YAML document: a policy is one"}
	}

	p := &Policy{file: name, def: Allow, unknown: Ask}
	if f.Default != nil {
		p.def = f.Default.a
	}
	if f.Unknown != nil {
		p.unknown = f.Unknown.a
	}
	p.defReason = "no rule matches; the policy's default is " + p.def.String()
	lines := ruleLines(root.Content[0])
	for i, ry := range f.Rules {
		line := 0
		if i < len(lines) {
			line = lines[i]
		}
		if ry.Action.a == 0 {
			return nil, &Error{File: name, Line: line, Problem: fmt.Sprintf("rules[%d] has no action (allow, ask or deny)", i)}
		}
		r := &rule{
			index: i, name: ry.Name, line: line,
			programs: ry.Match.Program, re: ry.Match.Regex.re,
			cwd: ry.Match.Cwd, session: ry.Match.Session, actor: ry.Match.Actor,
			action: ry.Action.a, reason: ry.Reason, dangerous: ry.Dangerous,
		}
		if r.name == "" {
			r.name = describe(i, ry.Match)
		}
		if r.reason == "" {
			r.reason = fmt.Sprintf("%s says %s", r.name, r.action)
		}
		p.rules = append(p.rules, r)
		if r.programs == nil && r.re != nil {
			p.lineRules = append(p.lineRules, r)
		}
	}
	return p, nil
}

// describe names a rule without a name by what it matches.
func describe(i int, m matchYAML) string {
	var parts []string
	if len(m.Program) > 0 {
		var names []string
		for prog, subs := range m.Program {
			for _, s := range subs {
				names = append(names, strings.TrimSpace(prog+" "+s))
			}
		}
		slices.Sort(names)
		parts = append(parts, "program: "+strings.Join(names, ", "))
	}
	if m.Regex.re != nil {
		parts = append(parts, "regex: "+m.Regex.re.String())
	}
	for _, g := range []struct {
		k string
		v []string
	}{{"cwd", m.Cwd}, {"session", m.Session}, {"actor", m.Actor}} {
		if len(g.v) > 0 {
			parts = append(parts, g.k+": "+strings.Join(g.v, ", "))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("rules[%d] (any command)", i)
	}
	return fmt.Sprintf("rules[%d] (%s)", i, strings.Join(parts, "; "))
}

// ruleLines finds the line of each rule in the parsed document, for
// problems found after decoding.
func ruleLines(doc *yaml.Node) []int {
	for i := 0; i+1 < len(doc.Content); i += 2 {
		if doc.Content[i].Value == "rules" && doc.Content[i+1].Kind == yaml.SequenceNode {
			var lines []int
			for _, c := range doc.Content[i+1].Content {
				lines = append(lines, c.Line)
			}
			return lines
		}
	}
	return nil
}

var (
	yamlLineRe     = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	unknownFieldRe = regexp.MustCompile(`^field (\S+) not found in type \S+$`)
	wrongTypeRe    = regexp.MustCompile("^cannot unmarshal !!\\w+ `(.*)` into (\\S+)$")
)

// goTypes says in the file's words what a Go type the YAML library names
// expects.
var goTypes = map[string]string{
	"bool":              "true or false",
	"string":            "a string",
	"[]policy.ruleYAML": "a list of rules",
	"policy.ruleYAML":   "a rule (a mapping with match, action, reason…)",
	"policy.matchYAML":  "a mapping with program, regex, cwd, session or actor",
	"policy.fileYAML":   "a mapping with rules, default and unknown",
}

// yamlError turns the YAML library's errors into Errors naming the line,
// in the policy's words rather than Go's type names.
func yamlError(err error, name string) error {
	var pe *Error
	if errors.As(err, &pe) {
		pe.File = name
		return pe
	}
	var msgs []string
	var te *yaml.TypeError
	if errors.As(err, &te) {
		msgs = te.Errors
	} else {
		msgs = []string{err.Error()}
	}
	var errs []error
	for _, m := range msgs {
		e := &Error{File: name, Problem: strings.TrimPrefix(m, "yaml: ")}
		if sm := yamlLineRe.FindStringSubmatch(m); sm != nil {
			e.Line, _ = strconv.Atoi(sm[1])
			e.Problem = sm[2]
		}
		if sm := unknownFieldRe.FindStringSubmatch(e.Problem); sm != nil {
			if where, ok := knownKeys[sm[1]]; ok {
				e.Problem = fmt.Sprintf("key %q does not belong here: it goes %s", sm[1], where)
			} else {
				e.Problem = fmt.Sprintf("unknown key %q", sm[1])
				if s := closest(sm[1], knownKeys); s != "" {
					e.Problem += fmt.Sprintf(" (did you mean %q?)", s)
				}
			}
		}
		if sm := wrongTypeRe.FindStringSubmatch(e.Problem); sm != nil {
			if want, ok := goTypes[sm[2]]; ok {
				e.Problem = fmt.Sprintf("%q: expected %s", sm[1], want)
			}
		}
		errs = append(errs, e)
	}
	if len(errs) == 1 {
		return errs[0]
	}
	return errors.Join(errs...)
}

// closest is the known key within two edits of s, if any.
func closest(s string, keys map[string]string) string {
	best, bestD := "", 3
	for k := range keys {
		if d := suggest.Distance(s, k); d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	return best
}
