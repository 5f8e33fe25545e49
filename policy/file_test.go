package policy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBadFiles checks that a bad policy file is refused with the line and
// the problem, in the file's words.
func TestBadFiles(t *testing.T) {
	tests := []struct {
		name, file string
		line       int
		problem    string
	}{
		{"misspelled key", "rules:\n  - match: {program: rm}\n    acton: deny\n", 3, `unknown key "acton" (did you mean "action"?)`},
		{"misspelled match key", "rules:\n  - match: {progam: rm}\n    action: deny\n", 2, `unknown key "progam" (did you mean "program"?)`},
		{"key in the wrong place", "rules:\n  - match: {program: rm}\n    session: x\n    action: deny\n", 3, `key "session" does not belong here: it goes under match`},
		{"unknown top-level key", "default: allow\nstrict: true\n", 2, `unknown key "strict"`},
		{"no action", "rules:\n  - match: {program: rm}\n  - match: {program: ls}\n    action: allow\n", 2, "rules[0] has no action (allow, ask or deny)"},
		{"bad action", "default: allow\nunknown: maybe\n", 2, `action "maybe" is not one of allow, ask, deny`},
		{"bad regex", "rules:\n  - match:\n      regex: '(('\n    action: deny\n", 3, "regex: error parsing regexp: missing closing ): `((`"},
		{"perl regex", "rules:\n  - match:\n      regex: '(?=x)'\n    action: deny\n", 3, "regex: error parsing regexp: invalid or unsupported Perl syntax: `(?=`"},
		{"bad glob", "rules:\n  - match: {cwd: '[x'}\n    action: deny\n", 2, `glob "[x": syntax error in pattern`},
		{"program with a directory", "rules:\n  - match: {program: /bin/rm}\n    action: deny\n", 2, `program "/bin/rm": programs are matched by name, whatever their directory: write "rm"`},
		{"program of three words", "rules:\n  - match:\n      program: [ls, git remote add]\n    action: deny\n", 3, `program "git remote add": a name is one word (rm) or two (git push)`},
		{"not a bool", "rules:\n  - match: {program: rm}\n    action: deny\n    dangerous: maybe\n", 4, `"maybe": expected true or false`},
		{"duplicate key", "default: allow\ndefault: deny\n", 2, `mapping key "default" already defined at line 1`},
		{"syntax error", "default: allow\nrules:\n\t- match: {program: rm}\n", 3, "found character that cannot start any token"},
		{"two documents", "default: allow\n---\ndefault: deny\n", 2, "more than one YAML document: a policy is one"},
		{"a list", "- rm\n", 1, "a policy is a mapping with rules, default and unknown"},
		{"empty", "", 0, "the file is empty: a policy has rules, a default, or both"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.file), "p.yaml")
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInvalid)
			var pe *Error
			require.True(t, errors.As(err, &pe), "%v", err)
			assert.Equal(t, tt.line, pe.Line, "%v", err)
			assert.Equal(t, tt.problem, pe.Problem)
			assert.Equal(t, "p.yaml", pe.File)
		})
	}
}

// TestFileShapes checks the accepted shapes: one string or a list, and
// the defaults of default (allow) and unknown (ask).
func TestFileShapes(t *testing.T) {
	p, err := Parse([]byte("rules:\n  - match: {program: rm, session: 'prod-*', actor: [ci, 'bot-*']}\n    action: deny\n"), "p.yaml")
	require.NoError(t, err)
	assert.Equal(t, Allow, p.Default())
	assert.Equal(t, Ask, p.Unknown())
	assert.Equal(t, 1, p.Len())
	assert.Equal(t, Deny, p.Evaluate(Input{Line: "rm x", Session: "prod-2", Actor: "bot-7"}).Action)
	assert.Equal(t, Allow, p.Evaluate(Input{Line: "rm x", Session: "prod-2", Actor: "alice"}).Action)

	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

// TestReloadKeepsOldPolicy checks that a broken file is refused and the
// policy in force stays.
func TestReloadKeepsOldPolicy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "policy.yaml")
	var e Evaluator
	assert.Equal(t, Allow, e.Evaluate(Input{Line: "rm -rf /"}).Action, "no policy allows")

	require.NoError(t, os.WriteFile(path, []byte("rules:\n  - match: {program: rm}\n    action: deny\n"), 0o600))
	require.NoError(t, e.Reload(path))
	assert.Equal(t, Deny, e.Evaluate(Input{Line: "rm x"}).Action)
	first := e.Policy()

	require.NoError(t, os.WriteFile(path, []byte("rules:\n  - match: {program: rm}\n    action: allw\n"), 0o600))
	err := e.Reload(path)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `policy.yaml: line 3: action "allw" is not one of allow, ask, deny`)
	assert.Same(t, first, e.Policy(), "the broken file is refused")
	assert.Equal(t, Deny, e.Evaluate(Input{Line: "rm x"}).Action, "the old policy is in force")

	require.NoError(t, os.WriteFile(path, []byte("rules:\n  - match: {program: rm}\n    action: ask\n"), 0o600))
	require.NoError(t, e.Reload(path))
	assert.Equal(t, Ask, e.Evaluate(Input{Line: "rm x"}).Action)
}

// TestReloadWhileEvaluating swaps policies while other goroutines
// evaluate (run with -race).
func TestReloadWhileEvaluating(t *testing.T) {
	dir := t.TempDir()
	deny, ask := filepath.Join(dir, "deny.yaml"), filepath.Join(dir, "ask.yaml")
	require.NoError(t, os.WriteFile(deny, []byte("rules:\n  - match: {program: rm}\n    action: deny\n"), 0o600))
	require.NoError(t, os.WriteFile(ask, []byte("rules:\n  - match: {program: rm}\n    action: ask\n"), 0o600))
	e := NewEvaluator(nil)
	require.NoError(t, e.Reload(deny))
	done := make(chan struct{})
	errs := make(chan string, 4)
	for range 4 {
		go func() {
			defer func() { errs <- "" }()
			for {
				select {
				case <-done:
					return
				default:
				}
				if a := e.Evaluate(Input{Line: "sudo rm -rf /tmp/x"}).Action; a != Deny && a != Ask {
					errs <- a.String()
					return
				}
			}
		}()
	}
	for i := range 200 {
		require.NoError(t, e.Reload([]string{deny, ask}[i%2]))
	}
	close(done)
	for range 4 {
		assert.Empty(t, <-errs)
	}
}

// TestAsks names the rules that ask a person, and the default when it asks.
func TestAsks(t *testing.T) {
	p, err := Parse([]byte("default: ask\nrules:\n  - match: {program: rm}\n    action: deny\n  - name: pushes\n    match: {program: [\"git push\"]}\n    action: ask\n"), "p.yaml")
	require.NoError(t, err)
	assert.Equal(t, []string{"pushes", "default"}, p.Asks())
	p, err = Parse([]byte("default: allow\n"), "p.yaml")
	require.NoError(t, err)
	assert.Empty(t, p.Asks())
}
