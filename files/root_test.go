package files

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// jail makes a root with a file inside and a secret outside it.
func jail(t *testing.T) (fs *FS, root, secret string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "root")
	require.NoError(t, os.MkdirAll(filepath.Join(root, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(root, "inside"), []byte("ok"), 0o644))
	secret = filepath.Join(base, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("SECRET"), 0o644))
	return newFS(t, root), root, secret
}

func TestRootEscapesRefused(t *testing.T) {
	fs, root, secret := jail(t)
	require.NoError(t, os.Symlink(secret, filepath.Join(root, "abs")))
	require.NoError(t, os.Symlink("../secret", filepath.Join(root, "rel")))
	require.NoError(t, os.Symlink("../../secret", filepath.Join(root, "sub", "deeprel")))
	require.NoError(t, os.Symlink(filepath.Dir(secret), filepath.Join(root, "absdir")))
	require.NoError(t, os.Symlink("inside", filepath.Join(root, "fine")))
	sc := Scope{Dir: root}
	for _, p := range []string{
		"../secret", secret, root + "/sub/../../secret", "abs", "rel", "sub/deeprel", "absdir/secret",
		"/proc/self/root" + secret, "/",
	} {
		t.Run(strings.ReplaceAll(p, "/", "_"), func(t *testing.T) {
			c, err := fs.Read(sc, p, ReadOptions{})
			require.ErrorIs(t, err, ErrOutsideRoot, "read %s answered %q", p, c.Data)
			_, err = fs.Write(sc, p, strings.NewReader("x"), WriteOptions{Append: true})
			assert.ErrorIs(t, err, ErrOutsideRoot)
			_, err = fs.Write(sc, p+"/new", strings.NewReader("x"), WriteOptions{CreateDirs: true})
			assert.ErrorIs(t, err, ErrOutsideRoot)
			_, err = fs.List(sc, p, ListOptions{})
			assert.ErrorIs(t, err, ErrOutsideRoot)
		})
	}
	b, _ := os.ReadFile(secret)
	assert.Equal(t, "SECRET", string(b))
	// Inside is fine, through a relative symlink too.
	c, err := fs.Read(sc, "fine", ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ok", string(c.Data))
	_, err = fs.Read(sc, "sub/../inside", ReadOptions{})
	require.NoError(t, err)
	// Moving out is refused too.
	_, _, err = fs.Move(sc, "inside", "../moved", false)
	assert.ErrorIs(t, err, ErrOutsideRoot)
	_, _, err = fs.Remove(Scope{}, root, true)
	assert.ErrorIs(t, err, ErrInvalid, "a root cannot be removed")
}

// TestRootSymlinkSwapRace: while reads of root/d/f run, another goroutine
// swaps d between a directory and a symlink to the outside. No read may
// answer the secret: the kernel resolves every read beneath the root.
func TestRootSymlinkSwapRace(t *testing.T) {
	fs, root, secret := jail(t)
	outside := filepath.Dir(secret)
	require.NoError(t, os.WriteFile(filepath.Join(outside, "f"), []byte("SECRET"), 0o644))
	realDir := filepath.Join(root, "real")
	require.NoError(t, os.Mkdir(realDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(realDir, "f"), []byte("ok"), 0o644))
	link, dirLink := filepath.Join(root, "d"), filepath.Join(root, "d.link")
	dirTmp := filepath.Join(root, "d.dir")
	require.NoError(t, os.Symlink(outside, dirLink))
	require.NoError(t, os.Symlink("real", dirTmp))

	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // swap d: a link inside, then a link outside, by rename
		defer wg.Done()
		for i := 0; i < 20000 && !stop.Load(); i++ {
			if i%2 == 0 {
				os.Symlink("real", dirTmp)
				os.Rename(dirTmp, link)
			} else {
				os.Symlink(outside, dirLink)
				os.Rename(dirLink, link)
			}
		}
	}()
	var ok, refused int
	for i := 0; i < 3000; i++ {
		c, err := fs.Read(Scope{}, link+"/f", ReadOptions{})
		if err == nil {
			require.Equal(t, "ok", string(c.Data), "read %d escaped the root", i)
			ok++
			continue
		}
		require.Truef(t, isKind(err, ErrOutsideRoot) || isKind(err, ErrNotFound), "read %d: %v", i, err)
		refused++
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("%d reads inside, %d refused", ok, refused)
	assert.Positive(t, refused, "the swap never showed the outside link")
}

func isKind(err, kind error) bool {
	e, ok := err.(*Error)
	return ok && e.Kind == kind
}
