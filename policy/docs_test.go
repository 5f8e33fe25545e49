package policy

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDocsExample keeps docs/policy.md honest: its example is
// testdata/example.yaml, and its table of lines is what that policy
// decides.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile("../docs/policy.md")
	require.NoError(t, err)
	example, err := os.ReadFile("testdata/example.yaml")
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(doc), "```yaml\n")
	require.True(t, ok, "the doc has a yaml example")
	block, _, ok := strings.Cut(rest, "```")
	require.True(t, ok)
	assert.Equal(t, string(example), block, "docs/policy.md's example is testdata/example.yaml")

	p, err := Parse([]byte(block), "docs/policy.md")
	require.NoError(t, err)
	row := regexp.MustCompile("^\\| `(.+)` \\| (allow|ask|deny)(, dangerous)? \\|")
	n := 0
	for line := range strings.Lines(string(doc)) {
		m := row.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		n++
		cmd := strings.ReplaceAll(m[1], `\|`, "|")
		d := p.Evaluate(Input{Line: cmd, Cwd: "/home/agent", Session: "dev-1", Actor: "agent"})
		assert.Equal(t, m[2], d.Action.String(), "%s: %+v", cmd, d)
		assert.Equal(t, m[3] != "", d.Dangerous, "%s: %+v", cmd, d)
	}
	assert.GreaterOrEqual(t, n, 10, "the doc's table of decisions")
}
