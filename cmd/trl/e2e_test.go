package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/internal/golden"
)

// trlBin is the binary under test, built once by TestMain.
var trlBin string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "trl-e2e-")
	if err != nil {
		panic(err)
	}
	trlBin = filepath.Join(dir, "trl")
	build := exec.Command("go", "build", "-race", "-o", trlBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build trl:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// daemon is a running `trl serve`.
type daemon struct {
	cmd    *exec.Cmd
	socket string
	stderr *lockedBuffer
	done   chan error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func startDaemon(t *testing.T, args ...string) *daemon {
	t.Helper()
	return startDaemonEnv(t, nil, args...)
}

// startDaemonEnv starts `trl serve` with extra environment variables.
func startDaemonEnv(t *testing.T, env []string, args ...string) *daemon {
	t.Helper()
	return startDaemonBin(t, trlBin, env, args...)
}

// startDaemonBin starts `trl serve` from the binary bin.
func startDaemonBin(t *testing.T, bin string, env []string, args ...string) *daemon {
	t.Helper()
	return startDaemonAt(t, filepath.Join(t.TempDir(), "trl.sock"), bin, env, args...)
}

// startDaemonAt starts `trl serve` from bin on socket.
func startDaemonAt(t *testing.T, socket, bin string, env []string, args ...string) *daemon {
	t.Helper()
	d := &daemon{socket: socket, stderr: &lockedBuffer{}, done: make(chan error, 1)}
	d.cmd = exec.Command(bin, append([]string{"serve", "--socket", socket, "--log-level", "debug"}, args...)...)
	d.cmd.Stderr = d.stderr
	d.cmd.Env = append(os.Environ(), env...)
	require.NoError(t, d.cmd.Start())
	go func() { d.done <- d.cmd.Wait() }()
	require.Eventually(t, func() bool {
		// The socket is claimed first; "trl serving" says every other
		// listener (metrics, HTTP) is up and logged too.
		if !strings.Contains(d.stderr.String(), `"message":"trl serving"`) {
			return false
		}
		c, err := net.Dial("unix", socket)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "daemon did not listen: %s", d.stderr)
	t.Cleanup(func() { d.stop(t) })
	return d
}

// stop sends SIGTERM and waits for a clean exit.
func (d *daemon) stop(t *testing.T) {
	if d.cmd.ProcessState != nil {
		return
	}
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		assert.NoError(t, err, "daemon exit: %s", d.stderr)
	case <-time.After(10 * time.Second):
		// A hung daemon: its goroutines (SIGQUIT makes Go print them)
		// say where.
		d.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-d.done:
		case <-time.After(5 * time.Second):
			d.cmd.Process.Kill()
		}
		t.Errorf("daemon did not stop on SIGTERM within 10 s; its stderr:\n%s", d.stderr)
	}
}

// client speaks the TRL dialect over one socket connection.
type client struct {
	t    *testing.T
	conn net.Conn
	mu   sync.Mutex
	wait map[string]chan map[string]any
	next int
	// notes receives notifications.
	notes chan map[string]any
}

func dial(t *testing.T, socket string) *client {
	t.Helper()
	conn, err := net.Dial("unix", socket)
	require.NoError(t, err)
	c := &client{t: t, conn: conn, wait: map[string]chan map[string]any{}, notes: make(chan map[string]any, 1024)}
	go c.read()
	t.Cleanup(func() { conn.Close() })
	return c
}

func (c *client) read() {
	sc := bufio.NewScanner(c.conn)
	sc.Buffer(make([]byte, 1<<20), 128<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			c.t.Errorf("daemon wrote a line that is not JSON: %q", sc.Text())
			continue
		}
		id, ok := m["id"].(string)
		if !ok {
			c.notes <- m
			continue
		}
		c.mu.Lock()
		ch := c.wait[id]
		delete(c.wait, id)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// send writes a request and returns a channel for its response.
func (c *client) send(method string, params any) <-chan map[string]any {
	c.mu.Lock()
	c.next++
	id := fmt.Sprintf("r%d", c.next)
	ch := make(chan map[string]any, 1)
	c.wait[id] = ch
	c.mu.Unlock()
	b, _ := json.Marshal(map[string]any{"id": id, "method": method, "params": params})
	_, err := c.conn.Write(append(b, '\n'))
	require.NoError(c.t, err)
	return ch
}

func (c *client) call(method string, params any) map[string]any {
	c.t.Helper()
	select {
	case r := <-c.send(method, params):
		return r
	case <-time.After(60 * time.Second):
		c.t.Fatalf("%s: no response in 60 s", method)
		return nil
	}
}

func data(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	require.Equal(t, true, r["ok"], "response: %v", r)
	return r["data"].(map[string]any)
}

func TestSocketEndToEnd(t *testing.T) {
	d := startDaemon(t)
	fi, err := os.Stat(d.socket)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), "socket mode")

	c := dial(t, d.socket)
	s := data(t, c.call("session.create", map[string]any{"name": "e2e"}))
	id := s["session_id"].(string)

	// A long command does not delay a ping on the same connection.
	slow := c.send("exec.run", map[string]any{"session_id": id, "command": "sleep 2; echo slept"})
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	data(t, c.call("system.ping", nil))
	assert.Less(t, time.Since(start), time.Second, "ping waited for the running command")

	// A second command on the busy session is refused at once.
	busy := c.call("exec.run", map[string]any{"session_id": "e2e", "command": "true"})
	assert.Equal(t, false, busy["ok"])
	assert.Equal(t, "SESSION_BUSY", busy["error"].(map[string]any)["code"])

	r := <-slow
	assert.Equal(t, "slept\n", data(t, r)["stdout"])

	// Streams deliver over the socket too.
	st := data(t, c.call("exec.stream", map[string]any{"session_id": id, "command": "echo x; echo y >&2"}))
	var out, errs string
	for n := range c.notes {
		p := n["params"].(map[string]any)
		if n["method"] == "exec.exit" {
			assert.Equal(t, st["stream_id"], p["stream_id"])
			break
		}
		if p["stream"] == "stdout" {
			out += p["data"].(string)
		} else {
			errs += p["data"].(string)
		}
	}
	assert.Equal(t, "x\n", out)
	assert.Equal(t, "y\n", errs)
}

func TestSocketClientDisconnect(t *testing.T) {
	d := startDaemon(t)
	c := dial(t, d.socket)
	data(t, c.call("session.create", map[string]any{"name": "dc"}))
	c.send("exec.run", map[string]any{"session_id": "dc", "command": "sleep 1; echo done > marker"})
	time.Sleep(200 * time.Millisecond)
	c.conn.Close()

	c2 := dial(t, d.socket)
	data(t, c2.call("system.ping", nil))
	// The command ran to its end; the session is usable afterwards.
	require.Eventually(t, func() bool {
		r := c2.call("exec.run", map[string]any{"session_id": "dc", "command": "cat marker"})
		return r["ok"] == true && r["data"].(map[string]any)["stdout"] == "done\n"
	}, 10*time.Second, 100*time.Millisecond)
}

func TestSocketRules(t *testing.T) {
	d := startDaemon(t)
	// A second daemon on a live socket refuses to start.
	out, err := exec.Command(trlBin, "serve", "--socket", d.socket).CombinedOutput()
	require.Error(t, err)
	assert.Contains(t, string(out), "already")

	// A regular file at the path is left alone.
	file := filepath.Join(t.TempDir(), "not-a-socket")
	require.NoError(t, os.WriteFile(file, []byte("keep"), 0o644))
	out, err = exec.Command(trlBin, "serve", "--socket", file).CombinedOutput()
	require.Error(t, err, "%s", out)
	b, _ := os.ReadFile(file)
	assert.Equal(t, "keep", string(b))
}

func TestShutdownEndsSessions(t *testing.T) {
	d := startDaemon(t)
	c := dial(t, d.socket)
	s := data(t, c.call("session.create", nil))
	pid := int(s["pid"].(float64))
	data(t, c.call("exec.run", map[string]any{"session_id": s["session_id"], "command": "sleep 300 & sleep 300 &"}))
	pending := c.send("exec.run", map[string]any{"session_id": s["session_id"], "command": "sleep 300"})
	time.Sleep(200 * time.Millisecond)

	start := time.Now()
	d.stop(t)
	assert.Less(t, time.Since(start), 5*time.Second)
	select {
	case r := <-pending:
		assert.Equal(t, false, r["ok"])
		assert.Equal(t, "SHUTTING_DOWN", r["error"].(map[string]any)["code"])
		assert.Contains(t, r["error"].(map[string]any)["message"], "may have run in part", "a retry is not safe without a look")
	case <-time.After(2 * time.Second):
		t.Error("the in-flight exec.run got no answer at shutdown")
	}
	_, err := os.Stat(d.socket)
	assert.True(t, os.IsNotExist(err), "socket removed")
	assert.Error(t, syscall.Kill(pid, 0), "shell still alive")
	assert.Empty(t, sessionMembers(pid), "processes of the session survived")
}

// sessionMembers lists live processes whose session id is sid.
func sessionMembers(sid int) []string {
	return processes(func(f []string) bool { return len(f) > 3 && f[3] == fmt.Sprint(sid) && f[0] != "Z" })
}

// processes lists the /proc/PID/stat files whose fields after the command
// name (state, ppid, pgrp, sid, ...) satisfy keep.
func processes(keep func(fields []string) bool) []string {
	var out []string
	files, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		s := string(b)
		if keep(strings.Fields(s[strings.LastIndexByte(s, ')')+2:])) {
			out = append(out, f)
		}
	}
	return out
}

// TestCallCommand checks `trl call`'s output and exit status.
func TestCallCommand(t *testing.T) {
	d := startDaemon(t)
	out, err := exec.Command(trlBin, "call", "--socket", d.socket, "exec.run", `{"command":"echo hi"}`).Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), `"stdout":"hi\n"`)
	out, err = exec.Command(trlBin, "call", "--socket", d.socket, "session.info", `{"session_id":"nope"}`).Output()
	require.Error(t, err)
	assert.Contains(t, string(out), "SESSION_NOT_FOUND")
	out, err = exec.Command(trlBin, "call", "--socket", d.socket, "exec.stream", `{"command":"echo s"}`).Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), `"method":"exec.exit"`)
	// Flags after METHOD and PARAMS_JSON are flags too (they printed
	// only the usage).
	out, err = exec.Command(trlBin, "call", "exec.run", `{"command":"echo after"}`, "--socket", d.socket, "--timeout", "30s").Output()
	require.NoError(t, err)
	assert.Contains(t, string(out), `"stdout":"after\n"`)
	err = exec.Command(trlBin, "call", "--socket", d.socket, "a", "b", "c").Run()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 2, ee.ExitCode(), "three positional arguments: the usage")
}

// TestStdioSmoke pipes one golden conversation through the built binary
// (`trl stdio`): the flags, the logger and the process around the
// transport. Every conversation runs in-process, on every transport, in
// test/conversations.
func TestStdioSmoke(t *testing.T) {
	c, err := golden.Load("../../testdata/conversations/basic.txtar")
	require.NoError(t, err)
	in, err := c.Input()
	require.NoError(t, err)
	want, ok := c.Want("stdio")
	require.True(t, ok)
	cmd := exec.Command(trlBin, "stdio", "--log-level", "error")
	cmd.Stdin = bytes.NewReader(in)
	cmd.Dir = t.TempDir()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "trl stdio: %s", stderr.String())
	assert.Equal(t, want, golden.Lines(out))
}
