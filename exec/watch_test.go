package exec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestLastHome: the last sequence that places the cursor by absolute
// position or clears the screen, wherever it is and whatever other
// escapes surround it.
func TestLastHome(t *testing.T) {
	for p, want := range map[string]int{
		"":                              -1,
		"plain text\n":                  -1,
		"\x1b[H":                        0,
		"ab\x1b[Hcd":                    2,
		"\x1b[5;10Hx\x1b[31mred\x1b[0m": 0,
		"\x1b[Ha\x1b[2;3fb":             4,
		"x\x1b[2Jy":                     1,
		"x\x1b[J\x1b[1J\x1b[22J":        -1,
		"\x1b[H\x1b":                    0,
		"\x1b[2":                        -1,
		"\x1b[12;":                      -1,
		"\x1b]0;title\x07\x1b[3;1H":     10,
		"\x1b\x1b[H":                    1,
		"\x1b[?1049h\x1b[H\x1b[2J":      8 + 3,
	} {
		assert.Equal(t, want, lastHome([]byte(p)), "%q", p)
	}
	// A long run of text with escapes that are not it, then one that is.
	long := strings.Repeat("text \x1b[1mbold\x1b[0m\n", 4096)
	assert.Equal(t, -1, lastHome([]byte(long)))
	assert.Equal(t, len(long), lastHome([]byte(long+"\x1b[H")))
	assert.Equal(t, 0, lastHome(append([]byte("\x1b[1;1H"), bytes.Repeat([]byte("y\n"), 1<<16)...)))
}

func BenchmarkLastHome(b *testing.B) {
	p := bytes.Repeat([]byte("y\n"), 2048)
	b.SetBytes(int64(len(p)))
	for b.Loop() {
		lastHome(p)
	}
}
