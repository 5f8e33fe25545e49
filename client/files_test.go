package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/client"
)

func TestFileMethods(t *testing.T) {
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			p := filepath.Join(dir, "a/b.txt")
			text := "one\ntwo\n"
			w, err := c.WriteFile(ctx, client.FSWriteParams{Path: p, Data: &text})
			require.NoError(t, err)
			assert.EqualValues(t, len(text), w.Size)
			r, err := c.ReadFile(ctx, client.FSReadParams{Path: p})
			require.NoError(t, err)
			assert.Equal(t, text, r.Data)
			stale := "x"
			_, err = c.WriteFile(ctx, client.FSWriteParams{Path: p, Data: &stale, IfSHA256: hex.EncodeToString(make([]byte, 32))})
			assert.ErrorIs(t, err, client.ErrConflict)
			old, repl := "two", "2"
			e, err := c.EditFile(ctx, client.FSEditParams{Path: p, Old: &old, New: &repl})
			require.NoError(t, err)
			assert.Equal(t, 2, e.Lines[0].Line)
			require.NoError(t, c.Mkdir(ctx, "", filepath.Join(dir, "x/y"), true))
			l, err := c.ListDir(ctx, client.FSListParams{Path: dir, Depth: 2})
			require.NoError(t, err)
			assert.Equal(t, 4, l.Total) // a, a/b.txt, x, x/y
			st, err := c.Stat(ctx, "", p)
			require.NoError(t, err)
			assert.Equal(t, "file", st.Type)
			_, err = c.Move(ctx, "", p, filepath.Join(dir, "x/y/c.txt"), false)
			require.NoError(t, err)
			rm, err := c.Remove(ctx, "", filepath.Join(dir, "x"), true)
			require.NoError(t, err)
			assert.Equal(t, 3, rm.Removed)
			_, err = c.ReadFile(ctx, client.FSReadParams{Path: p})
			assert.ErrorIs(t, err, client.ErrFileNotFound)
		})
	}
}

func TestUploadDownload(t *testing.T) {
	for name, c := range clients(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			content := make([]byte, 3<<20+12345) // several socket chunks
			rng := rand.NewChaCha8([32]byte{7})
			rng.Read(content)
			local := filepath.Join(dir, "local")
			require.NoError(t, os.WriteFile(local, content, 0o600))
			remote := filepath.Join(dir, "remote/f")
			w, err := c.Upload(ctx, "", local, remote, "0640")
			require.NoError(t, err)
			sum := sha256.Sum256(content)
			assert.Equal(t, hex.EncodeToString(sum[:]), w.SHA256)
			assert.EqualValues(t, len(content), w.Size)
			st, err := os.Stat(remote)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o640), st.Mode().Perm())
			got, _ := os.ReadFile(remote)
			assert.True(t, bytes.Equal(content, got), "the upload is byte-exact")
			entries, _ := os.ReadDir(filepath.Dir(remote))
			assert.Len(t, entries, 1, "no temporary file is left")

			back := filepath.Join(dir, "back")
			n, err := c.Download(ctx, "", remote, back)
			require.NoError(t, err)
			assert.EqualValues(t, len(content), n)
			got, _ = os.ReadFile(back)
			assert.True(t, bytes.Equal(content, got), "the download is byte-exact")
			_, err = c.Download(ctx, "", filepath.Join(dir, "missing"), back)
			assert.ErrorIs(t, err, client.ErrFileNotFound)
			_, err = c.Upload(ctx, "", local, filepath.Join(dir, "remote/f/under-a-file"), "")
			assert.ErrorIs(t, err, client.ErrNotADirectory)
		})
	}
}
