package policy

import (
	"path"
	"regexp"
	"strings"
)

// rule is one compiled rule of the file.
type rule struct {
	index int
	name  string
	line  int
	// programs is nil when the rule does not name programs.
	programs            map[string][]string
	re                  *regexp.Regexp
	cwd, session, actor []string
	action              Action
	reason              string
	dangerous           bool
}

// matches says whether the rule applies to one simple command; unsure
// when it would, except that the subcommand a two-word program names is
// known only when the line runs (`git $sub`).
func (r *rule) matches(c *command, in *Input) (match, unsure bool) {
	if r.programs != nil {
		if c.prog == "" {
			return false, false
		}
		subs, ok := r.programs[c.prog]
		if !ok {
			return false, false
		}
		match, unsure = subcommandMatches(subs, c.args)
		if !match && !unsure {
			return false, false
		}
	}
	// The globs cost less than the regex.
	if !r.where(in) || r.re != nil && !r.re.MatchString(c.text) {
		return false, false
	}
	return match || r.programs == nil, unsure
}

// where checks the globs about where the line runs and who sent it.
func (r *rule) where(in *Input) bool {
	return anyGlob(r.cwd, in.Cwd, true) && anyGlob(r.session, in.Session, false) && anyGlob(r.actor, in.Actor, false)
}

// subcommandMatches says whether one of subs names the command's
// subcommand ("" matches any). trl cannot know which options of git or
// kubectl take a value (`git -C dir push`, `kubectl -n prod delete`), so
// a word right after an option is a candidate too; the candidates end at
// the first word that follows a non-option (`git log --grep push` is not
// `git push`). A candidate with an expansion makes the match unsure.
func subcommandMatches(subs []string, args []arg) (match, unsure bool) {
	for _, s := range subs {
		if s == "" {
			return true, false
		}
	}
	afterOption := false
	for _, a := range args {
		if !a.lit {
			return false, true
		}
		if len(a.s) > 1 && a.s[0] == '-' {
			afterOption = !strings.Contains(a.s, "=")
			continue
		}
		for _, s := range subs {
			if a.s == s {
				return true, false
			}
		}
		if !afterOption {
			return false, false
		}
		afterOption = false
	}
	return false, false
}

func anyGlob(pats []string, s string, isDir bool) bool {
	if len(pats) == 0 {
		return true
	}
	for _, p := range pats {
		if globMatch(p, s, isDir) {
			return true
		}
	}
	return false
}

// globMatch is path.Match, where a trailing "/**" on a directory pattern
// also matches every directory below.
func globMatch(pat, s string, isDir bool) bool {
	if isDir {
		if prefix, ok := strings.CutSuffix(pat, "/**"); ok {
			if prefix == "" {
				return strings.HasPrefix(s, "/")
			}
			for d := path.Clean(s); ; d = path.Dir(d) {
				if ok, _ := path.Match(prefix, d); ok {
					return true
				}
				if d == "/" || d == "." {
					return false
				}
			}
		}
		if s != "/" {
			s = strings.TrimSuffix(s, "/")
		}
	}
	ok, _ := path.Match(pat, s)
	return ok
}

func checkGlob(p string) error {
	_, err := path.Match(strings.TrimSuffix(p, "/**"), "")
	return err
}
