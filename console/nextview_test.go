package console

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestNextView: a login goes on only to a console view's address, of at
// most 200 characters after the "#".
func TestNextView(t *testing.T) {
	for _, ok := range []string{"#", "#session/s-1", "#recordings/s-1.cast", "#a%2Fb", "#" + strings.Repeat("a", 200)} {
		assert.True(t, isNextView(ok), "%q", ok)
	}
	for _, bad := range []string{"", "session", "https://evil.example/", "#a b", "#<script>", "#" + strings.Repeat("a", 201), "//evil", "#a\n"} {
		assert.False(t, isNextView(bad), "%q", bad)
	}
}
