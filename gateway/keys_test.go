package gateway

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKeysUnambiguousWithNUL is issue 23 §4: ids joined with a NUL made
// tenant "q\x00r" with call "c" the same key as tenant "q" with call
// "r\x00c" (and likewise for sessions and isolation keys).
func TestKeysUnambiguousWithNUL(t *testing.T) {
	assert.NotEqual(t, memoKey("q\x00r", "c"), memoKey("q", "r\x00c"))
	assert.NotEqual(t, isolationKey("q\x00r", "w"), isolationKey("q", "r\x00w"))
	assert.NotEqual(t, sessionName("q\x00r", "w", "s"), sessionName("q", "r\x00w", "s"))
	assert.NotEqual(t, sessionName("q", "w\x00s", ""), sessionName("q", "w", "s\x00"))
	assert.NotEqual(t, joinKey("ab", "c"), joinKey("a", "bc"))
	assert.Equal(t, memoKey("q", "c"), memoKey("q", "c"))
}

// TestIdempotencyAcrossTenantsWithNUL: through the gateway, the second
// tenant's call with the colliding ids runs its own command instead of
// getting the first tenant's answer.
func TestIdempotencyAcrossTenantsWithNUL(t *testing.T) {
	h := newHarness(t, Options{})
	first := h.run(newCall("echo from-first").with("target.tenantId", "q\x00r").with("ctx.toolCallId", "c"))
	require.Equal(t, map[string]any{"ok": true, "output": "from-first\n"}, first)
	status, second := h.post(newCall("echo from-second").with("target.tenantId", "q").with("ctx.toolCallId", "r\x00c").String())
	require.Equal(t, 200, status, "%v", second)
	assert.Equal(t, map[string]any{"ok": true, "output": "from-second\n"}, second)
}
