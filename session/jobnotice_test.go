package session

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNoticeOverSeveralLines: a job whose command text holds a newline
// in quotes is one notice over several lines (its second line went to the
// next command's stderr); the command's own lines stay its own.
func TestNoticeOverSeveralLines(t *testing.T) {
	for _, tc := range []struct{ in, rest, notices string }{
		{"[1]+  Terminated              sh -c \"sleep 100\" \"x\ny\"\nwarn\n", "warn\n", "[1]+  Terminated              sh -c \"sleep 100\" \"x\ny\"\n"},
		{"[2]-  Done                    echo 'a\nb\nc'\n", "", "[2]-  Done                    echo 'a\nb\nc'\n"},
		{"[3]   Done                    echo \"it's\"\nmine\n", "mine\n", "[3]   Done                    echo \"it's\"\n"},
		{"[4]+  Done                    echo \\\"\nmine\n", "mine\n", "[4]+  Done                    echo \\\"\n"},
		{"plain\n[1]+  Done                    sleep 1\n", "plain\n", "[1]+  Done                    sleep 1\n"},
	} {
		rest, notices, open := splitNotices([]byte(tc.in), false)
		assert.False(t, open, "%q", tc.in)
		assert.Equal(t, tc.rest, string(rest), "%q", tc.in)
		assert.Equal(t, tc.notices, string(notices), "%q", tc.in)
	}
	// The notice's lines in two reads.
	rest, notices, open := splitNotices([]byte("[1]+  Terminated              sh -c \"x\n"), false)
	assert.Empty(t, rest)
	assert.True(t, open)
	rest, notices2, open := splitNotices([]byte("y\"\nwarn\n"), open)
	assert.Equal(t, "warn\n", string(rest))
	assert.Equal(t, "[1]+  Terminated              sh -c \"x\ny\"\n", string(notices)+string(notices2))
	assert.False(t, open)
}
