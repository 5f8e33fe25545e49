package session

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// isolatedManagerRange is isolatedManager with n uids of its own,
// starting at first.
func isolatedManagerRange(t *testing.T, first, n uint32) *Manager {
	t.Helper()
	if err := CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-test-ns-%d-%s", os.Getpid(), NewID("", 4)))
	t.Cleanup(func() { os.RemoveAll(homes) })
	m := NewManager(Options{Logger: testLogger(), Subreaper: true, Isolation: &Isolation{
		FirstUID: first, LastUID: first + n - 1, HomeRoot: homes,
	}})
	t.Cleanup(m.CloseAll)
	require.NoError(t, m.poolErr)
	return m
}

// leaveTraces is issue 23's session A: mode-0600 files in every
// shared-writable place and a SysV shared memory segment. It prints the
// segment's id.
func leaveTraces(name string) string {
	return "umask 077; for d in /tmp /var/tmp /dev/shm; do echo sk-123 > $d/" + name + " || echo FAILED $d; done; " +
		"ipcmk -M 4096 | sed -n 's/^Shared memory id: //p'"
}

// findTraces prints what of leaveTraces a session can see.
func findTraces(name, shmid string) string {
	return "cat /tmp/" + name + " /var/tmp/" + name + " /dev/shm/" + name + " 2>/dev/null; " +
		"ipcs -m -i " + shmid + " 2>/dev/null | grep -q 'shmid=" + shmid + "$' && echo SHM-" + shmid + " FOUND; echo end"
}

// TestUIDReuseInheritsNothing is issue 23 §1's reproduction with a 4-uid
// range: session A leaves mode-0600 files in /tmp, /var/tmp and /dev/shm
// and a SysV segment; the next session that gets A's uid finds none of
// it, and nothing of A's ever reached the host's directories.
func TestUIDReuseInheritsNothing(t *testing.T) {
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		t.Run(filepath.Base(shell), func(t *testing.T) {
			first := uint32(2005000000 + os.Getpid()%50000*16)
			if shell == "/bin/bash" {
				first += 8
			}
			m := isolatedManagerRange(t, first, 4)
			name := "a-notes-" + NewID("", 6)
			a, err := m.Create(Config{Shell: shell})
			require.NoError(t, err)
			out, errOut, st := run2(t, a, leaveTraces(name))
			require.Equal(t, 0, st.ExitCode, "stderr %q", errOut)
			shmid := strings.TrimSpace(out)
			require.Regexp(t, regexp.MustCompile(`^\d+$`), shmid, "A's output %q", out)
			out, _, _ = run2(t, a, findTraces(name, shmid))
			require.Equal(t, "sk-123\nsk-123\nsk-123\nSHM-"+shmid+" FOUND\nend\n", out, "A sees its own traces")
			for _, d := range privateDirs {
				_, err := os.Lstat(filepath.Join(d, name))
				assert.True(t, os.IsNotExist(err), "A's file reached the host's %s", d)
			}
			uid := a.lease.uid
			_, err = m.Destroy(a.ID(), true)
			require.NoError(t, err)

			// The uids are handed out in turn: at most four sessions on.
			var b *Session
			for i := 0; i < 4 && b == nil; i++ {
				s, err := m.Create(Config{Shell: shell})
				require.NoError(t, err)
				if s.lease.uid == uid {
					b = s
				} else {
					m.Destroy(s.ID(), true)
				}
			}
			require.NotNil(t, b, "uid %d was not handed out again", uid)
			out, _, _ = run2(t, b, findTraces(name, shmid))
			assert.Equal(t, "end\n", out, "the next tenant of uid %d found the last one's traces", uid)
		})
	}
}

// TestIsolatedSessionReachesWhatItNeeds: behind its private /tmp an
// isolated session still reaches its home, its stdin and command files
// (under the daemon's $TMPDIR) and a working directory under /tmp that
// was given to it; two live sessions do not see each other's /tmp.
func TestIsolatedSessionReachesWhatItNeeds(t *testing.T) {
	m := isolatedManagerRange(t, uint32(2005800000+os.Getpid()%50000*16), 4)
	wd, err := os.MkdirTemp("", "trl-wd-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(wd) })
	require.NoError(t, os.Chmod(wd, 0o777))
	require.NoError(t, os.WriteFile(filepath.Join(wd, "given"), []byte("here\n"), 0o644))
	for _, shell := range []string{"/bin/sh", "/bin/bash"} {
		s, err := m.Create(Config{Shell: shell, WorkingDir: wd})
		require.NoError(t, err)
		out, errOut, st := run2(t, s, "pwd; cat given; echo mine > ~/f && cat ~/f; ls -A /tmp | grep -v '^trl-' | wc -l")
		assert.Equal(t, 0, st.ExitCode, "%s: stderr %q", shell, errOut)
		assert.Equal(t, wd+"\nhere\nmine\n0\n", out, shell)
		in := "fed\n"
		k := &splitSink{}
		j, err := s.Start(Command{Text: "cat", Stdin: &in}, k)
		require.NoError(t, err)
		<-j.Done()
		out, _ = k.get()
		assert.Equal(t, in, out, "%s: the stdin file", shell)
	}
	a, err := m.Create(Config{})
	require.NoError(t, err)
	b, err := m.Create(Config{})
	require.NoError(t, err)
	out, _, _ := run2(t, a, "echo x > /tmp/only-a; sleep 300 & echo $!")
	bg := strings.TrimSpace(out)
	out, _, _ = run2(t, b, "ls /tmp/only-a 2>&1 >/dev/null | wc -l; ipcs -m | grep -c '^0x'")
	assert.Equal(t, "1\n0\n", out)
	// Nor does b see a's processes, or the daemon, in its /proc.
	out, _, _ = run2(t, b, fmt.Sprintf("ls -d /proc/%s /proc/%d /proc/%d 2>/dev/null | wc -l; ls -d /proc/$$ | wc -l", bg, a.pid, os.Getpid()))
	assert.Equal(t, "0\n1\n", out, "b sees other processes")
}

// TestPoolSweepsLeftoversOfItsUIDs: what a uid of the range owns in the
// host's shared-writable places (left by a daemon before namespaces, or
// one that died) is gone before the pool hands the uid out: a restarted
// daemon never gives a tenant the last one's files or IPC objects.
func TestPoolSweepsLeftoversOfItsUIDs(t *testing.T) {
	if err := CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	if _, err := exec.LookPath("ipcmk"); err != nil {
		t.Skip("ipcmk (util-linux) is not installed")
	}
	first := uint32(2005400000 + os.Getpid()%50000*4)
	name := "a-notes-" + NewID("", 6)
	cmd := exec.Command("/bin/sh", "-c", "umask 077; for d in /tmp /var/tmp /dev/shm; do echo sk-123 > $d/"+name+"; mkdir $d/"+name+".d; echo x > $d/"+name+".d/f; done; "+
		"ipcmk -M 4096 | sed -n 's/^Shared memory id: //p'")
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: first, Gid: first, Groups: []uint32{}}}
	out, err := cmd.Output()
	require.NoError(t, err)
	shmid := strings.TrimSpace(string(out))
	require.Regexp(t, regexp.MustCompile(`^\d+$`), shmid)
	t.Cleanup(func() {
		for _, d := range privateDirs {
			os.RemoveAll(filepath.Join(d, name))
			os.RemoveAll(filepath.Join(d, name+".d"))
		}
		exec.Command("ipcrm", "-m", shmid).Run()
	})
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-test-sweep-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	p, err := newUIDPool(Isolation{FirstUID: first, LastUID: first + 3, HomeRoot: homes})
	require.NoError(t, err)
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		for _, f := range []string{name, name + ".d"} {
			_, err := os.Lstat(filepath.Join(d, f))
			assert.True(t, os.IsNotExist(err), "%s/%s of uid %d survived", d, f, first)
		}
	}
	b, _ := os.ReadFile("/proc/sysvipc/shm")
	assert.NotRegexp(t, regexp.MustCompile(`(?m)^\s*\d+\s+`+shmid+`\s`), string(b), "segment %s of uid %d survived", shmid, first)
	l, err := p.acquire("")
	require.NoError(t, err)
	assert.Equal(t, first, l.uid)
	l.release()
}
