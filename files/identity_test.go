package files

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const uidA, uidB = 2005000001, 2005000002

func needRoot(t testing.TB) {
	if os.Geteuid() != 0 {
		t.Skip("changing the filesystem uid needs root (CAP_SETUID)")
	}
}

// TestIdentity: an operation as a uid can do what the uid can and no
// more, and files it makes are the uid's; the daemon's own operations,
// interleaved on the same threads, keep the daemon's rights.
func TestIdentity(t *testing.T) {
	needRoot(t)
	fs := newFS(t)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755)) // t.TempDir makes it 0700
	require.NoError(t, os.Chmod(dir, 0o777))
	private := filepath.Join(dir, "private")
	require.NoError(t, os.WriteFile(private, []byte("A's"), 0o600))
	require.NoError(t, os.Chown(private, uidA, uidA))
	a := Scope{Dir: dir, Identity: &Identity{UID: uidA, GID: uidA}}
	b := Scope{Dir: dir, Identity: &Identity{UID: uidB, GID: uidB}}

	c, err := fs.Read(a, "private", ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "A's", string(c.Data))
	_, err = fs.Read(b, "private", ReadOptions{})
	assert.ErrorIs(t, err, ErrPermission)
	_, err = fs.Write(b, "private", strings.NewReader("B was here"), WriteOptions{Append: true})
	assert.ErrorIs(t, err, ErrPermission)
	_, err = fs.Edit(b, "private", "A", "B", false)
	assert.ErrorIs(t, err, ErrPermission)

	w, err := fs.Write(b, "mine", strings.NewReader("B's"), WriteOptions{})
	require.NoError(t, err)
	st, err := os.Stat(w.Path)
	require.NoError(t, err)
	assert.Equal(t, uint32(uidB), st.Sys().(*syscall.Stat_t).Uid)
	assert.Equal(t, uint32(uidB), st.Sys().(*syscall.Stat_t).Gid)
	_, err = fs.Mkdir(b, "bdir", false)
	require.NoError(t, err)
	st, _ = os.Stat(filepath.Join(dir, "bdir"))
	assert.Equal(t, uint32(uidB), st.Sys().(*syscall.Stat_t).Uid)

	// A root-only file stays out of reach of a uid, and in reach of the
	// daemon, however the operations interleave on Go's threads.
	rootOnly := filepath.Join(dir, "root-only")
	require.NoError(t, os.WriteFile(rootOnly, []byte("root"), 0o600))
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%2 == 0 {
				_, err := fs.Read(b, rootOnly, ReadOptions{})
				assert.ErrorIs(t, err, ErrPermission)
			} else {
				_, err := fs.Read(Scope{}, rootOnly, ReadOptions{})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
}

// The measurements behind identity.go's choice.
func BenchmarkAsIdentity(b *testing.B) {
	needRoot(b)
	id := &Identity{UID: uidA, GID: uidA}
	for b.Loop() {
		asIdentity(id, func() error { return nil })
	}
}

func BenchmarkHelperProcess(b *testing.B) {
	needRoot(b)
	for b.Loop() {
		cmd := exec.Command("/bin/true")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uidA, Gid: uidA, Groups: []uint32{}}}
		if err := cmd.Run(); err != nil {
			b.Fatal(err)
		}
	}
}

// A panic as an identity reaches the caller, and the thread's
// credentials are put back all the same.
func TestIdentityPanicReachesCaller(t *testing.T) {
	needRoot(t)
	id := &Identity{UID: uidA, GID: uidA}
	assert.PanicsWithValue(t, "boom", func() { asIdentity(id, func() error { panic("boom") }) })
	// Every thread is the daemon's again: a root-only file stays readable.
	p := filepath.Join(t.TempDir(), "root-only")
	require.NoError(t, os.WriteFile(p, []byte("x"), 0o600))
	fs := newFS(t)
	for range 50 {
		_, err := fs.Read(Scope{}, p, ReadOptions{})
		require.NoError(t, err)
	}
}
