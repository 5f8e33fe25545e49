package policy

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// FuzzEvaluate: any line gets a decision the policy could give, naming a
// rule that exists, without panicking.
func FuzzEvaluate(f *testing.F) {
	for _, tt := range probeLines {
		f.Add(tt.line)
	}
	f.Add("alias a='a a a a a a a a'; a")
	f.Add("f() { rm -rf /; }; sudo -u x env A=1 timeout 5 xargs -I{} bash -c 'eval \"$1\"' _ {}")
	p, err := Load("testdata/example.yaml")
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, line string) {
		start := time.Now()
		d := p.Evaluate(Input{Line: line, Cwd: "/srv/releases/x", Session: "prod-1"})
		assert.Contains(t, []Action{Allow, Ask, Deny}, d.Action)
		if d.Rule >= 0 {
			require.Less(t, d.Rule, p.Len())
			assert.Equal(t, p.rules[d.Rule].name, d.RuleName)
			assert.Equal(t, p.rules[d.Rule].action, d.Action)
		} else {
			assert.Contains(t, []string{"default", "unknown"}, d.RuleName)
		}
		assert.NotEmpty(t, d.Reason)
		assert.Less(t, time.Since(start), 5*time.Second, "evaluation is bounded")
	})
}

// FuzzParse: any file is loaded or refused with an Error, never a panic.
func FuzzParse(f *testing.F) {
	f.Add([]byte("rules:\n  - match: {program: [rm, git push], regex: x, cwd: /a/**}\n    action: deny\n"))
	f.Add([]byte("default: ask\nunknown: deny\n"))
	f.Add([]byte("rules: [{match: {session: '[', actor: [a]}, action: allow}]"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "f.yaml")
		if err != nil {
			assert.ErrorIs(t, err, ErrInvalid)
			return
		}
		p.Evaluate(Input{Line: "git push -f; rm x | $y", Cwd: "/a/b"})
	})
}

// TestAliasBlowUpBounded: an alias using itself many times, or two using
// each other, are looked at in bounded time.
func TestAliasBlowUpBounded(t *testing.T) {
	p := loadExample(t)
	start := time.Now()
	d := p.Evaluate(Input{Line: "alias a='a a a a a a a a'; a"})
	assert.Less(t, time.Since(start), 2*time.Second)
	// As bash does, an alias is not expanded again inside its own value:
	// the line runs the program a, which no rule names.
	assert.Equal(t, "default", d.RuleName)
	d = p.Evaluate(Input{Line: "alias a='b b b b'; alias b='a a a a'; a"})
	assert.Less(t, time.Since(start), 2*time.Second)
	assert.Equal(t, "default", d.RuleName)
}
