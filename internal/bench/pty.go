package bench

import (
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// outputCommand prints exactly n bytes of printable lines: a fast
// generator (yes) so that the PTY, not the command, is the bottleneck.
func outputCommand(n int) string {
	return "yes 0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 | head -c " + strconv.Itoa(n)
}

// rawPTY runs command under /bin/sh on a fresh PTY, set up as trl sets up
// its own (no echo, no ONLCR), and reads the master in this process until
// the hang-up: the throughput floor a daemon reading a PTY has to beat.
// It returns the wall time from start to the last byte and the bytes read.
func rawPTY(command string) (time.Duration, int64, error) {
	ptm, pts, err := pty.Open()
	if err != nil {
		return 0, 0, err
	}
	defer ptm.Close()
	if err := rawTermios(pts); err != nil {
		pts.Close()
		return 0, 0, err
	}
	cmd := osexec.Command("/bin/sh", "-c", command)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pts, pts, pts
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	start := time.Now()
	err = cmd.Start()
	pts.Close()
	if err != nil {
		return 0, 0, err
	}
	buf := make([]byte, 32<<10)
	var total int64
	var rerr error
	for {
		n, err := ptm.Read(buf)
		total += int64(n)
		if err != nil {
			// EIO once the last holder of the slave has gone is a
			// hang-up, the PTY's end of file.
			if !errors.Is(err, syscall.EIO) {
				rerr = err
			}
			break
		}
	}
	elapsed := time.Since(start)
	if err := cmd.Wait(); err != nil && rerr == nil {
		rerr = fmt.Errorf("%s: %w", command, err)
	}
	return elapsed, total, rerr
}

func rawTermios(pts *os.File) error {
	rc, err := pts.SyscallConn()
	if err != nil {
		return err
	}
	var ioErr error
	if err := rc.Control(func(fd uintptr) {
		t, e := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if e != nil {
			ioErr = e
			return
		}
		t.Lflag &^= unix.ECHO
		t.Oflag &^= unix.ONLCR
		ioErr = unix.IoctlSetTermios(int(fd), unix.TCSETS, t)
	}); err != nil {
		return err
	}
	return ioErr
}
