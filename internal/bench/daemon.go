package bench

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// daemon is a `trl serve` the benchmark started and owns.
type daemon struct {
	cmd      *osexec.Cmd
	dir      string
	socket   string
	httpAddr string // "" when the daemon serves no HTTP
	token    string
	stderr   *tailBuffer
	done     chan struct{}
	waitErr  error
}

// startDaemon starts exe as `serve` on a socket in a fresh directory,
// with --http on a free loopback port when withHTTP is set, and waits
// until the socket answers.
func startDaemon(exe string, withHTTP bool, extra []string) (*daemon, error) {
	dir, err := os.MkdirTemp("", "trl-bench-")
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "trl.sock"), stderr: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	args := append([]string{"serve", "--socket", d.socket, "--max-sessions", "2000"}, extra...)
	env := os.Environ()
	if withHTTP {
		if d.httpAddr, err = freeLoopbackAddr(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		d.token = randomToken()
		args = append(args, "--http", d.httpAddr)
		env = append(env, "TRL_AUTH_TOKEN="+d.token)
	}
	d.cmd = osexec.Command(exe, args...)
	d.cmd.Env = env
	d.cmd.Stderr = d.stderr
	if err := d.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.done)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		if c, err := net.Dial("unix", d.socket); err == nil {
			c.Close()
			return d, nil
		}
		select {
		case <-d.done:
			os.RemoveAll(dir)
			return nil, &exitError{status: d.waitErr, stderr: strings.TrimSpace(d.stderr.String())}
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("trl serve did not listen within 15 s: %s", strings.TrimSpace(d.stderr.String()))
		}
	}
}

// stop sends SIGTERM, waits for the exit (SIGKILL after 10 s) and
// removes the directory.
func (d *daemon) stop() error {
	defer os.RemoveAll(d.dir)
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
		return errors.New("trl serve did not stop within 10 s of SIGTERM; killed")
	}
	if d.waitErr != nil {
		return fmt.Errorf("trl serve: %v: %s", d.waitErr, strings.TrimSpace(d.stderr.String()))
	}
	return nil
}

// exitError is a daemon that exited before it listened.
type exitError struct {
	status error
	stderr string
}

func (e *exitError) Error() string {
	return fmt.Sprintf("trl serve exited (%v): %s", e.status, e.stderr)
}

func (d *daemon) pid() int { return d.cmd.Process.Pid }

// rssBytes reads VmRSS of a process from /proc.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc/pid/status")
}

// cpuTime is a process's user+system CPU time from /proc/pid/stat, in
// clock ticks of 10 ms (USER_HZ is 100 on Linux).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, errors.New("unreadable /proc/pid/stat")
	}
	f := strings.Fields(string(b[i+2:]))
	if len(f) < 13 {
		return 0, errors.New("short /proc/pid/stat")
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}

// selfCPU is this process's user+system CPU time.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func freeLoopbackAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

func randomToken() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tailBuffer keeps the last max bytes written: the daemon's log is read
// continuously (a full pipe would stall it) but only its end is kept, for
// error messages.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	// Trim only at twice the size, so a steady log costs an append.
	if len(t.b) > 2*t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b[max(len(t.b)-t.max, 0):])
}
