package bench

import (
	"bufio"
	"fmt"
	"os"
	osexec "os/exec"
	"time"

	"github.com/creack/pty"
)

// shellFloor measures the round trip any persistent-shell design pays:
// /bin/sh reads a command line from a pipe (its stdout on a PTY) and
// reports completion on another fd, all in this process, with no JSON and
// no daemon. exec.run minus this minus the transport floor is what trl's
// own machinery costs.
func shellFloor(warm, n int) ([]time.Duration, error) {
	ptm, pts, err := pty.Open()
	if err != nil {
		return nil, err
	}
	defer ptm.Close()
	if err := rawTermios(pts); err != nil {
		pts.Close()
		return nil, err
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		pts.Close()
		return nil, err
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		pts.Close()
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	defer doneR.Close()
	sh := osexec.Command("/bin/sh")
	sh.Stdin, sh.Stdout, sh.Stderr = cmdR, pts, pts
	sh.ExtraFiles = []*os.File{doneW} // fd 3
	err = sh.Start()
	cmdR.Close()
	pts.Close()
	doneW.Close()
	if err != nil {
		cmdW.Close()
		return nil, err
	}
	defer func() {
		cmdW.Close() // end of input: the shell exits
		sh.Wait()
	}()
	done := bufio.NewReader(doneR)
	line := []byte("true; echo $? >&3\n")
	return sample(warm, n, func() error {
		if _, err := cmdW.Write(line); err != nil {
			return err
		}
		status, err := done.ReadString('\n')
		if err != nil {
			return err
		}
		if status != "0\n" {
			return fmt.Errorf("shell reported %q", status)
		}
		return nil
	})
}
