package files

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
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

// TestIdentityHoldsNoCapability: an operation as a uid runs with no
// effective capability at all, and the daemon's come back afterwards. With
// CAP_SETUID left, an fs.write to the uid_map of a user namespace the uid
// had made mapped host root into it; with CAP_SYS_PTRACE, fs.* read /proc
// of processes the uid cannot see.
func TestIdentityHoldsNoCapability(t *testing.T) {
	needRoot(t)
	effective := func() (e [2]uint32) {
		var d [2]unix.CapUserData
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		require.NoError(t, unix.Capget(&hdr, &d[0]))
		return [2]uint32{d[0].Effective, d[1].Effective}
	}
	id := &Identity{UID: uidA, GID: uidA}
	var inside [2]uint32
	require.NoError(t, asIdentity(id, func() error { inside = effective(); return nil }))
	assert.Equal(t, [2]uint32{}, inside, "no effective capability as the uid")
	goruntime.LockOSThread()
	after := effective()
	goruntime.UnlockOSThread()
	assert.NotEqual(t, [2]uint32{}, after, "the daemon's own threads keep theirs")

	// The attack itself: a process of uid A in a user namespace of its
	// own, and a write of a map that names host root.
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("no unshare(1) here: the uid_map half is not tried")
	}
	sleeper := exec.Command(unshare, "-U", "sleep", "30")
	sleeper.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uidA, Gid: uidA, Groups: []uint32{}}}
	require.NoError(t, sleeper.Start())
	exited := make(chan struct{})
	go func() { sleeper.Wait(); close(exited) }()
	t.Cleanup(func() { sleeper.Process.Kill(); <-exited })
	comm := fmt.Sprintf("/proc/%d/comm", sleeper.Process.Pid)
	for b, _ := os.ReadFile(comm); strings.TrimSpace(string(b)) != "sleep"; b, _ = os.ReadFile(comm) {
		select {
		case <-exited:
			t.Skipf("unshare -U as uid %d failed here (no unprivileged user namespaces?): the uid_map half is not tried", uidA)
		case <-time.After(5 * time.Millisecond):
		}
	}
	fs := newFS(t)
	a := Scope{Dir: "/", Identity: id}
	uidMap := fmt.Sprintf("/proc/%d/uid_map", sleeper.Process.Pid)
	_, err = fs.Write(a, uidMap, strings.NewReader("0 0 4294967295\n"), WriteOptions{Append: true})
	assert.Error(t, err, "uid A may not map host root")
	b, rerr := os.ReadFile(uidMap)
	require.NoError(t, rerr)
	assert.Empty(t, strings.TrimSpace(string(b)), "the namespace's uid map stays unset")
}

// TestIdentityDoesNotReachProc: as a session's identity nothing on /proc
// is opened, however the path gets there. The kernel shows a process its
// own /proc/PID whatever its credentials, so the daemon's environment
// (its token) and memory were open to an isolated session's fs.*.
func TestIdentityDoesNotReachProc(t *testing.T) {
	needRoot(t)
	fs := newFS(t)
	dir := t.TempDir()
	require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	require.NoError(t, os.Chmod(dir, 0o777))
	require.NoError(t, os.Symlink(fmt.Sprintf("/proc/%d/environ", os.Getpid()), filepath.Join(dir, "link")))
	a := Scope{Dir: dir, Identity: &Identity{UID: uidA, GID: uidA}}
	for _, p := range []string{
		fmt.Sprintf("/proc/%d/environ", os.Getpid()),
		fmt.Sprintf("/proc/%d/maps", os.Getpid()),
		"/proc/thread-self/environ",
		"link",
		"/proc/meminfo",
	} {
		_, err := fs.Read(a, p, ReadOptions{})
		assert.ErrorIs(t, err, ErrPermission, p)
	}
	// maps is readable by all (0444), so the kernel's own check let it by.
	_, err := fs.Read(a, fmt.Sprintf("/proc/%d/maps", os.Getpid()), ReadOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exec.run", "says how to read it instead")
	_, err = fs.Write(a, fmt.Sprintf("/proc/%d/timerslack_ns", os.Getpid()), strings.NewReader("1000000000"), WriteOptions{Append: true})
	assert.ErrorIs(t, err, ErrPermission)
	_, err = fs.List(a, "/proc", ListOptions{})
	assert.ErrorIs(t, err, ErrPermission)
	_, err = fs.Stat(a, fmt.Sprintf("/proc/%d/exe", os.Getpid()))
	assert.ErrorIs(t, err, ErrPermission)

	// The daemon's own reads of /proc are as before.
	c, err := fs.Read(Scope{}, "/proc/self/status", ReadOptions{})
	require.NoError(t, err)
	assert.Contains(t, string(c.Data), "Name:")
	// And a session still reads its files.
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plain"), []byte("ok"), 0o644))
	c, err = fs.Read(a, "plain", ReadOptions{})
	require.NoError(t, err)
	assert.Equal(t, "ok", string(c.Data))
}
