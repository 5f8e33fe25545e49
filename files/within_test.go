package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWithinResolvesInTheTree: an FS Within a directory (a session's
// namespace root) resolves absolute paths, .. and absolute symlinks in
// that directory's tree, never in the daemon's; --fs-root roots are paths
// in that tree.
func TestWithinResolvesInTheTree(t *testing.T) {
	tree := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "tmp"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(tree, "etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(tree, "etc", "passwd"), []byte("the tree's"), 0o644))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(tree, "tmp", "abs")))
	dir, err := os.Open(tree)
	require.NoError(t, err)
	defer dir.Close()

	whole, err := New(Options{})
	require.NoError(t, err)
	defer whole.Close()
	in, err := whole.Within(dir)
	require.NoError(t, err)
	defer in.Close()
	sc := Scope{Dir: "/tmp"}
	for _, p := range []string{"/etc/passwd", "abs", "../../../etc/passwd", "/tmp/abs"} {
		c, err := in.Read(sc, p, ReadOptions{})
		require.NoError(t, err, p)
		assert.Equal(t, "the tree's", string(c.Data), p)
	}
	w, err := in.Write(sc, "new", strings.NewReader("written"), WriteOptions{})
	require.NoError(t, err)
	assert.Equal(t, "/tmp/new", w.Path, "answers name the path as the tree sees it")
	b, err := os.ReadFile(filepath.Join(tree, "tmp", "new"))
	require.NoError(t, err)
	assert.Equal(t, "written", string(b))
	_, err = in.Read(sc, "/proc/self/root/etc/hostname", ReadOptions{})
	assert.Error(t, err, "no magic link leads out of the tree")

	// --fs-root /tmp means the tree's /tmp; a root the tree lacks is
	// not found.
	confined, err := New(Options{Roots: []string{"/tmp", "/var/tmp"}})
	require.NoError(t, err)
	defer confined.Close()
	cin, err := confined.Within(dir)
	require.NoError(t, err)
	defer cin.Close()
	c, err := cin.Read(sc, "new", ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "written", string(c.Data))
	_, err = cin.Read(sc, "abs", ReadOptions{})
	assert.ErrorIs(t, err, ErrOutsideRoot, "an absolute symlink out of the root")
	_, err = cin.Read(sc, "/etc/passwd", ReadOptions{})
	assert.ErrorIs(t, err, ErrOutsideRoot)
	_, err = cin.Read(sc, "/var/tmp/x", ReadOptions{})
	assert.ErrorIs(t, err, ErrNotFound)
	_, err = cin.Stat(sc, "/var/tmp")
	assert.ErrorIs(t, err, ErrNotFound)
}
