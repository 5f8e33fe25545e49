package mcpserver

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFileTools: the file tools work in the session's context (a
// relative path after run's cd), read_file's sha256 lets write_file
// refuse to overwrite a change it has not seen, a long line is cut and
// said, a file with NUL bytes is binary, and a paged read's offsets read
// the whole file exactly once.
func TestFileTools(t *testing.T) {
	cs, _ := connect(t, nil)
	dir := t.TempDir()
	_, _, isErr := callTool(t, cs, "run", map[string]any{"session": "files", "command": "cd " + dir})
	require.False(t, isErr)

	text, st, isErr := callTool(t, cs, "write_file", map[string]any{"session": "files", "path": "a.txt", "content": "one\ntwo\n"})
	require.False(t, isErr, text)
	assert.Equal(t, filepath.Join(dir, "a.txt"), st["path"], "relative to the session's directory")
	text, st, isErr = callTool(t, cs, "read_file", map[string]any{"session": "files", "path": "a.txt"})
	require.False(t, isErr, text)
	assert.Equal(t, "     1\tone\n     2\ttwo\n["+filepath.Join(dir, "a.txt")+": lines 1–2 of 2; the whole file]", text)
	seen := st["sha256"].(string)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("changed\n"), 0o644))
	text, _, isErr = callTool(t, cs, "write_file", map[string]any{"session": "files", "path": "a.txt", "content": "mine\n", "if_sha256": seen})
	assert.True(t, isErr)
	assert.Contains(t, text, "CONFLICT: ")
	b, _ := os.ReadFile(filepath.Join(dir, "a.txt"))
	assert.Equal(t, "changed\n", string(b), "nothing overwritten")

	long := strings.Repeat("x", 3000) + "\nshort\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "long.txt"), []byte(long), 0o644))
	text, _, _ = callTool(t, cs, "read_file", map[string]any{"session": "files", "path": "long.txt"})
	assert.Contains(t, text, "[… 1000 more characters of this line not shown]")
	assert.Contains(t, text, "     2\tshort\n")

	require.NoError(t, os.WriteFile(filepath.Join(dir, "nul.bin"), []byte("text\x00more\n"), 0o644))
	text, st, _ = callTool(t, cs, "read_file", map[string]any{"session": "files", "path": "nul.bin"})
	assert.Contains(t, text, "is a binary file of 10 bytes")
	assert.Equal(t, true, st["binary"])

	var want strings.Builder
	for i := 0; i < 1000; i++ {
		want.WriteString(strings.Repeat("y", i%97) + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "pages.txt"), []byte(want.String()), 0o644))
	var got strings.Builder
	next := 1.0
	for pages := 0; next > 0; pages++ {
		require.Less(t, pages, 10)
		text, st, isErr = callTool(t, cs, "read_file", map[string]any{"session": "files", "path": "pages.txt", "line_offset": next, "line_limit": 300})
		require.False(t, isErr, text)
		assert.EqualValues(t, 1000, st["total_lines"])
		lines := strings.Split(text, "\n")
		for _, l := range lines[:len(lines)-1] {
			_, after, ok := strings.Cut(l, "\t")
			require.True(t, ok, l)
			got.WriteString(after + "\n")
		}
		next, _ = st["next_line_offset"].(float64)
		if next > 0 {
			assert.Contains(t, lines[len(lines)-1], "more: call read_file with line_offset=")
		}
	}
	assert.Equal(t, want.String(), got.String())
}
