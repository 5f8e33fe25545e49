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
	log      *os.File // the daemon's stderr: its log, audit lines included
	done     chan struct{}
	waitErr  error
}

// startDaemon starts exe as `serve` on a socket in a fresh directory,
// with --http on a free loopback port when withHTTP is set, and waits
// until the socket (and HTTP) answers.
func startDaemon(exe string, withHTTP bool, extra []string) (*daemon, error) {
	dir, err := os.MkdirTemp("", "trl-bench-")
	if err != nil {
		return nil, err
	}
	d := &daemon{dir: dir, socket: filepath.Join(dir, "trl.sock"), done: make(chan struct{})}
	// The daemon logs to a file, not to a pipe this process reads: every
	// exec.run writes an audit line, and a goroutine here copying each
	// one would wake in this process, beside the client waiting for the
	// answer, in every latency sample.
	if d.log, err = os.Create(filepath.Join(dir, "trl.log")); err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
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
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		d.log.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	go func() {
		d.waitErr = d.cmd.Wait()
		close(d.done)
	}()
	deadline := time.Now().Add(15 * time.Second)
	for {
		// The daemon claims its socket before --http listens (and a
		// --http that fails ends it after the socket answered): with
		// --http, ready is both answering.
		if answers("unix", d.socket) && (d.httpAddr == "" || answers("tcp", d.httpAddr)) {
			return d, nil
		}
		select {
		case <-d.done:
			msg := d.logTail()
			d.log.Close()
			os.RemoveAll(dir)
			return nil, &exitError{status: d.waitErr, stderr: msg}
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			msg := d.logTail() // before stop removes the log
			d.stop()
			return nil, fmt.Errorf("trl serve did not listen within 15 s: %s", msg)
		}
	}
}

// answers reports whether a connection to addr is accepted.
func answers(network, addr string) bool {
	c, err := net.DialTimeout(network, addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}

// stop sends SIGTERM, waits for the exit (SIGKILL after 10 s) and
// removes the directory.
func (d *daemon) stop() error {
	defer os.RemoveAll(d.dir)
	defer d.log.Close()
	d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		d.cmd.Process.Kill()
		<-d.done
		return errors.New("trl serve did not stop within 10 s of SIGTERM; killed")
	}
	if d.waitErr != nil {
		return fmt.Errorf("trl serve: %v: %s", d.waitErr, d.logTail())
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

// logTail is the end of the daemon's log (its last 16 KiB), for error
// messages.
func (d *daemon) logTail() string {
	const keep = 16 << 10
	b := make([]byte, keep)
	size := int64(0)
	if fi, err := d.log.Stat(); err == nil {
		size = fi.Size()
	}
	n, _ := d.log.ReadAt(b, max(size-keep, 0))
	return strings.TrimSpace(string(b[:n]))
}
