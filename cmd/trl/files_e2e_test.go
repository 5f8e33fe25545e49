package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/session"
)

func hexSum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// fail asserts that r is an error with code and returns its message.
func fail(t *testing.T, r map[string]any, code string) string {
	t.Helper()
	require.Equal(t, false, r["ok"], "response: %v", r)
	e := r["error"].(map[string]any)
	require.Equal(t, code, e["code"], "error: %v", e)
	return e["message"].(string)
}

// TestFilesEndToEnd: fs.* through the real daemon, in the default
// session's context.
func TestFilesEndToEnd(t *testing.T) {
	audit := filepath.Join(t.TempDir(), "audit.log")
	d := startDaemon(t, "--audit-log", audit)
	c := dial(t, d.socket)
	dir := t.TempDir()

	// Relative paths resolve where the session's last command left it.
	data(t, c.call("exec.run", map[string]any{"command": "mkdir -p " + dir + "/work && cd " + dir + "/work"}))
	text := "héllo wörld\nline two\n"
	w := data(t, c.call("fs.write", map[string]any{"path": "notes/a.txt", "data": text}))
	assert.Equal(t, filepath.Join(dir, "work/notes/a.txt"), w["path"])
	assert.Equal(t, hexSum([]byte(text)), w["sha256"])
	assert.EqualValues(t, len(text), w["size"])
	r := data(t, c.call("fs.read", map[string]any{"path": "notes/a.txt"}))
	assert.Equal(t, text, r["data"])
	assert.Equal(t, "utf-8", r["encoding"])
	assert.Equal(t, true, r["complete"])
	assert.Equal(t, "0644", r["mode"])
	out := data(t, c.call("exec.run", map[string]any{"command": "cat notes/a.txt"}))
	assert.Equal(t, text, out["stdout"], "the session sees what fs.write wrote")

	// Every byte value, both ways.
	all := make([]byte, 0, 512)
	for i := range 512 {
		all = append(all, byte(i))
	}
	data(t, c.call("fs.write", map[string]any{"path": "bin", "data": base64.StdEncoding.EncodeToString(all), "encoding": "base64", "mode": "0600"}))
	onDisk, err := os.ReadFile(filepath.Join(dir, "work/bin"))
	require.NoError(t, err)
	assert.Equal(t, all, onDisk)
	r = data(t, c.call("fs.read", map[string]any{"path": "bin"}))
	assert.Equal(t, "base64", r["encoding"], "auto answers bytes that are not UTF-8 in base64")
	got, err := base64.StdEncoding.DecodeString(r["data"].(string))
	require.NoError(t, err)
	assert.Equal(t, all, got)
	assert.Equal(t, "0600", r["mode"])

	// Chunked reads reassemble, a character cut by a chunk included.
	big := strings.Repeat("abcdé", 30000) // 180000 bytes
	require.NoError(t, os.WriteFile(filepath.Join(dir, "work/big"), []byte(big), 0o644))
	var whole strings.Builder
	off := 0.0
	for i := 0; ; i++ {
		require.Less(t, i, 100)
		r := data(t, c.call("fs.read", map[string]any{"path": "big", "offset": off, "length": 10001}))
		assert.Equal(t, off, r["offset"])
		require.Equal(t, "utf-8", r["encoding"])
		whole.WriteString(r["data"].(string))
		off += r["length"].(float64)
		if r["complete"] == true {
			break
		}
	}
	assert.Equal(t, big, whole.String())
	// An offset inside a character (2 is inside é) is answered from
	// there: chunks never overlap, so the bytes, not text, come in base64.
	r = data(t, c.call("fs.read", map[string]any{"path": "notes/a.txt", "offset": 2, "length": 5}))
	assert.Equal(t, "base64", r["encoding"])
	assert.EqualValues(t, 2, r["offset"])
	r = data(t, c.call("fs.read", map[string]any{"path": "bin", "offset": 129, "length": 4}))
	assert.Equal(t, "base64", r["encoding"], "bytes that are no character stay base64")
	assert.EqualValues(t, 129, r["offset"])
	// A binary file read in chunks never overlaps: byte 0xC3 followed by
	// 0xA9 looks like é, but what follows is no text.
	mixed := []byte{0xff, 0xc3, 0xa9, 0x00, 0xfe, 0x80, 0x81}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "work/mixed"), mixed, 0o644))
	r = data(t, c.call("fs.read", map[string]any{"path": "mixed", "offset": 2, "length": 5}))
	assert.EqualValues(t, 2, r["offset"], "answered from the offset asked")
	r = data(t, c.call("fs.read", map[string]any{"path": "notes/a.txt", "line_offset": 2, "line_limit": 1}))
	assert.Equal(t, "line two\n", r["data"])
	assert.EqualValues(t, 2, r["line_offset"])

	// if_sha256: a write against a stale hash is refused, nothing changed.
	data(t, c.call("fs.write", map[string]any{"path": "notes/a.txt", "data": "v2", "if_sha256": w["sha256"]}))
	msg := fail(t, c.call("fs.write", map[string]any{"path": "notes/a.txt", "data": "v3", "if_sha256": w["sha256"]}), "CONFLICT")
	assert.Contains(t, msg, "notes/a.txt")
	b, _ := os.ReadFile(filepath.Join(dir, "work/notes/a.txt"))
	assert.Equal(t, "v2", string(b))

	// fs.edit refusals leave the file untouched.
	src := "a := 1\nb := 1\n"
	data(t, c.call("fs.write", map[string]any{"path": "x.go", "data": src}))
	msg = fail(t, c.call("fs.edit", map[string]any{"path": "x.go", "old": ":= 1", "new": ":= 2"}), "INVALID_PARAMS")
	assert.Contains(t, msg, "found 2 times")
	msg = fail(t, c.call("fs.edit", map[string]any{"path": "x.go", "old": ":= 3", "new": ":= 2"}), "INVALID_PARAMS")
	assert.Contains(t, msg, "not found")
	b, _ = os.ReadFile(filepath.Join(dir, "work/x.go"))
	assert.Equal(t, src, string(b))
	e := data(t, c.call("fs.edit", map[string]any{"path": "x.go", "old": "b := 1", "new": "b := 2"}))
	assert.Equal(t, []any{map[string]any{"line": 2.0, "text": "b := 2"}}, e["lines"])

	// The tree operations.
	data(t, c.call("fs.mkdir", map[string]any{"path": "d1/d2", "parents": true}))
	fail(t, c.call("fs.mkdir", map[string]any{"path": "d1"}), "CONFLICT")
	data(t, c.call("fs.move", map[string]any{"from": "x.go", "to": "d1/d2/y.go"}))
	st := data(t, c.call("fs.stat", map[string]any{"path": "d1/d2/y.go"}))
	assert.Equal(t, "file", st["type"])
	l := data(t, c.call("fs.list", map[string]any{"path": "d1", "depth": 2}))
	assert.EqualValues(t, 2, l["total"])
	assert.Equal(t, filepath.Join(dir, "work/d1/d2/y.go"), l["entries"].([]any)[1].(map[string]any)["path"])
	l = data(t, c.call("fs.list", map[string]any{}))
	assert.Equal(t, filepath.Join(dir, "work"), l["path"], "no path lists the current directory")
	fail(t, c.call("fs.remove", map[string]any{"path": "d1"}), "INVALID_PARAMS")
	rm := data(t, c.call("fs.remove", map[string]any{"path": "d1", "recursive": true}))
	assert.EqualValues(t, 3, rm["removed"])
	fail(t, c.call("fs.stat", map[string]any{"path": "d1"}), "FILE_NOT_FOUND")
	fail(t, c.call("fs.read", map[string]any{"path": "notes"}), "IS_A_DIRECTORY")
	fail(t, c.call("fs.read", map[string]any{"path": "bin/x"}), "NOT_A_DIRECTORY")
	fail(t, c.call("fs.read", map[string]any{"path": "bin", "session_id": ""}), "INVALID_PARAMS")
	fail(t, c.call("fs.read", map[string]any{"path": "bin", "session_id": "nope"}), "SESSION_NOT_FOUND")
	fail(t, c.call("fs.read", map[string]any{"path": "bin", "length": 5 << 20}), "LIMIT_EXCEEDED")

	// The audit trail names the changes, never their content.
	d.stop(t)
	raw, err := os.ReadFile(audit)
	require.NoError(t, err)
	var files []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev))
		if ev["event"] == "file" {
			files = append(files, ev)
		}
	}
	require.NotEmpty(t, files)
	first := files[0]
	assert.Equal(t, "fs.write", first["method"])
	assert.Equal(t, filepath.Join(dir, "work/notes/a.txt"), first["path"])
	assert.Equal(t, hexSum([]byte(text)), first["sha256"])
	assert.EqualValues(t, len(text), first["size"])
	assert.NotEmpty(t, first["session"])
	assert.Contains(t, first["actor"], "uid=")
	assert.NotContains(t, string(raw), "héllo", "no content in the audit trail")
	methods := map[string]bool{}
	for _, ev := range files {
		methods[ev["method"].(string)] = true
	}
	for _, m := range []string{"fs.write", "fs.edit", "fs.move", "fs.remove"} {
		assert.True(t, methods[m], "no audit event for %s", m)
	}
}

// TestFilesConcurrentWriters: 100 whole-file writes of one file at once,
// over several connections, leave exactly one whole version.
func TestFilesConcurrentWriters(t *testing.T) {
	d := startDaemon(t)
	p := filepath.Join(t.TempDir(), "f")
	version := func(i int) string { return strings.Repeat(fmt.Sprintf("%03d", i), 20000) }
	conns := []*client{dial(t, d.socket), dial(t, d.socket), dial(t, d.socket), dial(t, d.socket)}
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := conns[i%len(conns)].call("fs.write", map[string]any{"path": p, "data": version(i)})
			assert.Equal(t, true, r["ok"], "%v", r)
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	var i int
	_, err = fmt.Sscanf(string(b[:3]), "%d", &i)
	require.NoError(t, err)
	assert.True(t, string(b) == version(i), "the file is one whole version")
	entries, _ := os.ReadDir(filepath.Dir(p))
	assert.Len(t, entries, 1, "no temporary file is left")
}

// TestFilesRootEndToEnd: under --fs-root the daemon refuses every way out.
func TestFilesRootEndToEnd(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	require.NoError(t, os.Mkdir(root, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(base, "secret"), []byte("SECRET"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(base, "secret"), filepath.Join(root, "abs")))
	require.NoError(t, os.Symlink("../secret", filepath.Join(root, "rel")))
	d := startDaemon(t, "--fs-root", root)
	c := dial(t, d.socket)
	data(t, c.call("exec.run", map[string]any{"command": "cd " + root}))
	data(t, c.call("fs.write", map[string]any{"path": "ok", "data": "inside"}))
	for _, p := range []string{"../secret", filepath.Join(base, "secret"), "abs", "rel", "/etc/passwd"} {
		msg := fail(t, c.call("fs.read", map[string]any{"path": p}), "OUTSIDE_ROOT")
		assert.NotContains(t, msg, "SECRET")
		fail(t, c.call("fs.write", map[string]any{"path": p, "data": "x", "append": true}), "OUTSIDE_ROOT")
	}
	b, _ := os.ReadFile(filepath.Join(base, "secret"))
	assert.Equal(t, "SECRET", string(b))
}

// TestFilesIsolatedEndToEnd: under --isolate fs.* runs as the session's
// uid: one session cannot read another's mode-600 file through fs.*, and
// the files it writes are its own.
func TestFilesIsolatedEndToEnd(t *testing.T) {
	if err := session.CheckIsolationPrivilege(); err != nil {
		t.Skipf("isolation needs privilege this test run lacks: %v", err)
	}
	first := 2006000000 + os.Getpid()%50000*16
	homes := filepath.Join(os.TempDir(), fmt.Sprintf("trl-e2e-fshomes-%d", os.Getpid()))
	t.Cleanup(func() { os.RemoveAll(homes) })
	d := startDaemon(t, "--isolate", "--uid-range", fmt.Sprintf("%d-%d", first, first+15), "--isolate-homes", homes)
	c := dial(t, d.socket)
	a := data(t, c.call("session.create", map[string]any{}))["session_id"]
	b := data(t, c.call("session.create", map[string]any{}))["session_id"]
	w := data(t, c.call("fs.write", map[string]any{"session_id": a, "path": "private", "data": "A's secret", "mode": "0600"}))
	path := w["path"].(string)
	st, err := os.Stat(path)
	require.NoError(t, err)
	uid := st.Sys().(*syscall.Stat_t).Uid
	ra := data(t, c.call("exec.run", map[string]any{"session_id": a, "command": "id -u; id -g; cat private"}))
	assert.Equal(t, fmt.Sprintf("%d\n%d\nA's secret", uid, st.Sys().(*syscall.Stat_t).Gid), ra["stdout"], "the file is the session's")
	assert.GreaterOrEqual(t, int(uid), first)

	// b does not even see a's home: it is bound into a's namespace only
	// (the homes live under /tmp, which is each session's own).
	fail(t, c.call("fs.read", map[string]any{"session_id": b, "path": path}), "FILE_NOT_FOUND")
	r := data(t, c.call("fs.read", map[string]any{"session_id": a, "path": path}))
	assert.Equal(t, "A's secret", r["data"])

	// In a directory both sessions see, b may not read or change a's
	// mode-600 file.
	shared := sharedDir(t)
	path = filepath.Join(shared, "private")
	data(t, c.call("fs.write", map[string]any{"session_id": a, "path": path, "data": "A's secret", "mode": "0600"}))
	data(t, c.call("exec.run", map[string]any{"session_id": a, "command": "mkdir -m 700 " + filepath.Join(shared, "adir")}))
	fail(t, c.call("fs.read", map[string]any{"session_id": b, "path": path}), "PERMISSION_DENIED")
	fail(t, c.call("fs.write", map[string]any{"session_id": b, "path": path, "data": "B", "append": true}), "PERMISSION_DENIED")
	fail(t, c.call("fs.edit", map[string]any{"session_id": b, "path": path, "old": "A", "new": "B"}), "PERMISSION_DENIED")
	fail(t, c.call("fs.remove", map[string]any{"session_id": b, "path": path}), "PERMISSION_DENIED")
	fail(t, c.call("fs.list", map[string]any{"session_id": b, "path": filepath.Join(shared, "adir")}), "PERMISSION_DENIED")
	r = data(t, c.call("fs.read", map[string]any{"session_id": a, "path": path}))
	assert.Equal(t, "A's secret", r["data"])
	// Nor can it read a root-only file the daemon itself could.
	rootOnly := filepath.Join(shared, "root-only")
	require.NoError(t, os.WriteFile(rootOnly, []byte("root"), 0o600))
	fail(t, c.call("fs.read", map[string]any{"session_id": b, "path": rootOnly}), "PERMISSION_DENIED")
}

// sharedDir is a directory every isolated session sees and may write to
// (mode 1777, like /tmp): made under /, because /tmp, /var/tmp and
// /dev/shm are each isolated session's own.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/", ".trl-e2e-shared-")
	if err != nil {
		t.Skipf("a directory outside /tmp that sessions share is needed: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	require.NoError(t, os.Chmod(dir, os.ModeSticky|0o777))
	return dir
}
