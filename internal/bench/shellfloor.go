package bench

import (
	"bufio"
	"fmt"
	"os"
	osexec "os/exec"

	"github.com/creack/pty"
)

// shellPipe is the round trip any persistent-shell design pays: /bin/sh
// reads a command line from a pipe (its stdout on a PTY) and reports
// completion on another fd, all in this process, with no JSON and no
// daemon. exec.run minus this minus the transport floor is what trl's own
// machinery costs.
type shellPipe struct {
	ptm, cmdW *os.File
	doneR     *os.File
	done      *bufio.Reader
	sh        *osexec.Cmd
}

// startShellPipe starts the floor's shell.
func startShellPipe() (*shellPipe, error) {
	ptm, pts, err := pty.Open()
	if err != nil {
		return nil, err
	}
	if err := rawTermios(pts); err != nil {
		pts.Close()
		ptm.Close()
		return nil, err
	}
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		pts.Close()
		ptm.Close()
		return nil, err
	}
	doneR, doneW, err := os.Pipe()
	if err != nil {
		pts.Close()
		ptm.Close()
		cmdR.Close()
		cmdW.Close()
		return nil, err
	}
	sh := osexec.Command("/bin/sh")
	sh.Stdin, sh.Stdout, sh.Stderr = cmdR, pts, pts
	sh.ExtraFiles = []*os.File{doneW} // fd 3
	err = sh.Start()
	cmdR.Close()
	pts.Close()
	doneW.Close()
	if err != nil {
		cmdW.Close()
		doneR.Close()
		ptm.Close()
		return nil, err
	}
	return &shellPipe{ptm: ptm, cmdW: cmdW, doneR: doneR, done: bufio.NewReader(doneR), sh: sh}, nil
}

var floorLine = []byte("true; echo $? >&3\n")

// once runs one command line and waits for its status.
func (f *shellPipe) once() error {
	if _, err := f.cmdW.Write(floorLine); err != nil {
		return err
	}
	status, err := f.done.ReadString('\n')
	if err != nil {
		return err
	}
	if status != "0\n" {
		return fmt.Errorf("shell reported %q", status)
	}
	return nil
}

// Close ends the shell (end of input) and releases its files.
func (f *shellPipe) Close() {
	f.cmdW.Close()
	f.sh.Wait()
	f.doneR.Close()
	f.ptm.Close()
}
