package policy

import (
	"fmt"
	"strings"
)

// Evaluate decides a line: each simple command gets the action of the
// first rule it matches, the default when none does, or the unknown
// action when what it runs cannot be known and no rule matches it; the
// strictest action wins, the first command to reach it is the one named.
func (p *Policy) Evaluate(in Input) Decision {
	s := scanner{cmds: make([]command, 0, 8), aliases: in.Aliases}
	s.script(in.Line, 0)
	if strings.Contains(in.Line, "$'") || strings.Contains(in.Line, "&>") {
		// dash reads these otherwise than bash ($'…' is $ and a quoted
		// string; `a &> f b` is `a &` then `> f b`): both readings are
		// checked, as the session's shell may be either.
		ps := scanner{cmds: make([]command, 0, 8), aliases: in.Aliases, posix: true}
		ps.script(strings.ReplaceAll(in.Line, "&>", "& >"), 0)
		s.cmds = append(s.cmds, ps.cmds...)
	}
	if zshQualifier.MatchString(in.Line) {
		s.cmds = append(s.cmds, command{text: in.Line, unknown: "a zsh glob qualifier that runs code ((e:…) or (+function))"})
	}
	best := p.evaluate(&s, in)
	best.Aliases = s.defined
	return best
}

// evaluate is the decision for the commands s found in in's line.
func (p *Policy) evaluate(s *scanner, in Input) Decision {
	var best Decision
	for i := range s.cmds {
		d := p.decide(&s.cmds[i], &in)
		if best.Action == 0 || d.Action > best.Action {
			best = d
			if d.Action == Deny {
				return best
			}
		}
	}
	// Rules naming no program but a regex also see the whole line, so a
	// pattern can span a pipeline (`curl .*\| *sh`).
	for _, r := range p.lineRules {
		if r.re.MatchString(in.Line) && r.where(&in) {
			if r.action > best.Action {
				best = r.decision(in.Line)
			}
			break
		}
	}
	if best.Action == 0 {
		return Decision{Action: Allow, Rule: -1, RuleName: "default", Reason: "the line runs no command"}
	}
	return best
}

// decide is the action for one simple command.
func (p *Policy) decide(c *command, in *Input) Decision {
	for _, r := range p.rules {
		match, unsure := r.matches(c, in)
		if unsure {
			// The rule may or may not apply: what runs is not known.
			return Decision{Action: p.unknown, Rule: -1, RuleName: "unknown", Command: c.text,
				Reason: fmt.Sprintf("the subcommand of %s is known only when the line runs (%s might apply); the policy's unknown action is %s", c.prog, r.name, p.unknown)}
		}
		if match {
			return r.decision(c.text)
		}
	}
	if c.unknown != "" {
		return Decision{Action: p.unknown, Rule: -1, RuleName: "unknown", Command: c.text,
			Reason: c.unknown + "; the policy's unknown action is " + p.unknown.String()}
	}
	return Decision{Action: p.def, Rule: -1, RuleName: "default", Command: c.text, Reason: p.defReason}
}

func (r *rule) decision(text string) Decision {
	return Decision{Action: r.action, Rule: r.index, RuleName: r.name, Reason: r.reason, Dangerous: r.dangerous, Command: text}
}
