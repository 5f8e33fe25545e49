package termwait

import (
	"bytes"
	"cmp"
	"io"
	"os"
	osexec "os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/trl-project/trl/internal/pollpty"
	"github.com/trl-project/trl/internal/terminput"
)

// prog is a program on a fresh PTY: session leader, the PTY its
// controlling terminal, its group in the foreground, the terminal in the
// kernel's default modes (canonical, echo) until the program changes them.
type prog struct {
	t    *testing.T
	ptm  *os.File
	cmd  *osexec.Cmd
	term *Terminal

	mu    sync.Mutex
	out   bytes.Buffer
	modes terminput.ModeTracker
	done  chan struct{}
}

func need(t *testing.T, tools ...string) {
	t.Helper()
	for _, tool := range tools {
		if _, err := osexec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed; this test needs it", tool)
		}
	}
}

// start runs argv on a new PTY; shell is the pid given to New as "the
// shell" (0: the program itself).
func start(t *testing.T, argv ...string) *prog {
	t.Helper()
	ptm, pts, err := pollpty.Open()
	if err != nil {
		t.Fatal(err)
	}
	if err := pty.Setsize(ptm, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	cmd := osexec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.Env = append(os.Environ(), "TERM=xterm", "PYTHONSTARTUP=", "LESS=", "PS1=$ ")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		ptm.Close()
		pts.Close()
		t.Fatal(err)
	}
	pts.Close()
	p := &prog{t: t, ptm: ptm, cmd: cmd, done: make(chan struct{})}
	go p.read()
	t.Cleanup(p.stop)
	raw, err := ptm.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	if p.term, err = New(raw, cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return p
}

// read owns the master's reads; it ends at EIO when the last slave fd is
// closed, or when stop closes the master. As the session's pump does, it
// reads and feeds under mu, so check never sees bytes read but not yet
// fed to the mode tracker.
func (p *prog) read() {
	defer close(p.done)
	rc, err := p.ptm.SyscallConn()
	if err != nil {
		return
	}
	buf := make([]byte, 4096)
	for {
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			n, e := unix.Read(int(fd), buf)
			if e == unix.EAGAIN || e == unix.EINTR {
				return false
			}
			if n > 0 {
				p.out.Write(buf[:n])
				p.modes.Feed(buf[:n])
				return true
			}
			rerr = cmp.Or(e, io.EOF)
			return true
		})
		if err != nil || rerr != nil {
			return
		}
	}
}

func (p *prog) stop() {
	unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
	p.cmd.Wait()
	p.ptm.Close()
	<-p.done
}

func (p *prog) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func (p *prog) alt() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.modes.AltScreen()
}

func (p *prog) write(s string) {
	p.t.Helper()
	if _, err := io.WriteString(p.ptm, s); err != nil {
		p.t.Fatal(err)
	}
}

// waitOutput waits until the output holds s.
func (p *prog) waitOutput(s string, limit time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for !bytes.Contains([]byte(p.output()), []byte(s)) {
		if time.Now().After(deadline) {
			p.t.Fatalf("no %q in the output within %s; output: %q", s, limit, p.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// check samples as the session does (Session.InputWait): output still
// unread in the terminal may switch the alternate screen, so the program
// does not count as waiting until all of it is read and fed.
func (p *prog) check() Status {
	p.t.Helper()
	if p.unread() {
		return Status{}
	}
	s, err := p.term.Check(false)
	if err != nil {
		p.t.Fatal(err)
	}
	if !s.Waiting {
		return s
	}
	if p.unread() {
		return Status{}
	}
	if p.alt() {
		s.Kind = KindTUI
	}
	return s
}

// unread reports whether the master holds output the reader has not read.
func (p *prog) unread() bool {
	rc, err := p.ptm.SyscallConn()
	if err != nil {
		p.t.Fatal(err)
	}
	return pollpty.Unread(rc)
}

// waitWaiting samples until the program waits for input (generous: two
// shared cores) and returns that status. As the runtime does, a wait
// counts once a second sample confirms it: what the program wrote just
// before it began to read may still be on its way through the kernel to
// the master (a worker moves it) at the first.
func (p *prog) waitWaiting(limit time.Duration) Status {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	seen := false
	for {
		s := p.check()
		if s.Waiting && seen {
			return s
		}
		seen = s.Waiting
		if time.Now().After(deadline) {
			p.t.Fatalf("not waiting within %s; last status %+v; output: %q", limit, s, p.output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitTUI waits until the program waits for input on its alternate
// screen. A full-screen program may first wait, raw, for the terminal's
// answer to a query it sent (vim asks for the terminal's version); no
// emulator answers here, so it goes on after its own timeout, which a
// loaded machine stretches.
func (p *prog) waitTUI(limit time.Duration) Status {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		s := p.waitWaiting(time.Until(deadline))
		if s.Kind == KindTUI {
			return s
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("not waiting on its alternate screen within %s; last status %+v (alt %v)", limit, s, p.alt())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// neverWaiting samples for d and fails at the first waiting status.
func (p *prog) neverWaiting(d time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(d)
	n := 0
	for time.Now().Before(deadline) {
		if s := p.check(); s.Waiting {
			p.t.Fatalf("waiting after %d samples: %+v; output: %q", n, s, p.output())
		}
		n++
		time.Sleep(10 * time.Millisecond)
	}
	if n < 10 {
		p.t.Fatalf("only %d samples in %s", n, d)
	}
}

// exited waits for the program's end.
func (p *prog) exited(limit time.Duration) {
	p.t.Helper()
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		p.cmd.Process.Wait()
	}()
	select {
	case <-ch:
	case <-time.After(limit):
		unix.Kill(-p.cmd.Process.Pid, unix.SIGKILL)
		<-ch
		p.t.Fatalf("did not exit within %s; output: %q", limit, p.output())
	}
}
