package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestParseDeclare: bash's declare -p quoting, including the raw newline
// older bash leaves inside double quotes, ANSI-C escapes and array keys
// that hold ] and quotes.
func TestParseDeclare(t *testing.T) {
	text := "local -\n" +
		`declare -- x=$'a\nb\001\x7f\E\u00e9\'q'` + "\n" +
		`declare -- y="q\"\$\` + "`" + `\\ plain\n"` + "\n" +
		"declare -x old=\"line1\ndeclare -x fake=1\"\n" +
		"declare -- unset_one\n" +
		`declare -ar a=([0]="1" [1]=$'n\nl' [7]="")` + "\n" +
		`declare -A h=([$'a\nb']="3" ["x]y"]="2" [k]="v w" )` + "\n" +
		`declare -n r="x"` + "\n"
	ds, err := parseDeclare(text)
	require.NoError(t, err)
	require.Len(t, ds, 7)
	assert.Equal(t, declared{flags: "-", name: "x", set: true, value: "a\nb\x01\x7f\x1bé'q"}, ds[0])
	assert.Equal(t, "q\"$`\\ plain\\n", ds[1].value)
	assert.Equal(t, declared{flags: "x", name: "old", set: true, value: "line1\ndeclare -x fake=1"}, ds[2])
	assert.False(t, ds[3].set)
	assert.Equal(t, []string{"0", "1", "7"}, ds[4].keys)
	assert.Equal(t, []string{"1", "n\nl", ""}, ds[4].vals)
	assert.Equal(t, []string{"a\nb", "x]y", "k"}, ds[5].keys)
	assert.Equal(t, []string{"3", "2", "v w"}, ds[5].vals)
	assert.Equal(t, "x", ds[6].value)
}

// TestShellLines: dash's listings, quoted its way.
func TestShellLines(t *testing.T) {
	lines, err := shellLines("x='it'\"'\"'s a\nmulti'\nexport e1='é'\nalias\\ x='y'\n")
	require.NoError(t, err)
	assert.Equal(t, [][]string{{"x=it's a\nmulti"}, {"export", "e1=é"}, {"alias x=y"}}, lines)
	_, err = shellLines("x='open")
	assert.Error(t, err)
}
