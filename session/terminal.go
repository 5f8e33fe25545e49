package session

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/trl-project/trl/internal/rawio"
)

// Terminal hygiene (SPEC §9): the modes and window size trl gives the
// terminal at launch are trl's, not the commands'. A command may change
// them (`stty onlcr`, `stty olcuc`, `reset`, `stty cols 20`, a `less`
// killed by a timeout), and every later command's output would be
// changed with them; so before each command line the launch settings are
// put back. Whatever configureTerminal sets is captured after it has set
// it, so the restore follows any change to the launch settings (echo on or
// off alike).

// termModes is what restoreTerminal puts back, with the session's size.
type termModes struct {
	termios unix.Termios
}

// configureTerminal sets trl's terminal modes (echo on for what
// exec.input types, ONLCR off so "\n" stays "\n"), sets the window size,
// and returns the settings as the kernel now holds them.
func configureTerminal(pts *os.File, rows, cols int) (termModes, error) {
	rc, err := pts.SyscallConn()
	if err != nil {
		return termModes{}, err
	}
	var m termModes
	var ioErr error
	err = rc.Control(func(fd uintptr) {
		t, e := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if e != nil {
			ioErr = e
			return
		}
		// Commands arrive through a pipe, so echo never shows them; it
		// shows what exec.input types, as a terminal does, and tells a
		// line prompt from a password prompt (SPEC §8). ECHOCTL is off so
		// that a typed control key does not print as ^X.
		t.Lflag |= unix.ECHO | unix.ECHOE | unix.ECHOK
		t.Lflag &^= unix.ECHONL | unix.ECHOCTL
		// No XON/XOFF flow control (IXON off, as `stty -ixon`): nobody
		// watches this terminal to type ^Q, so a C-s sent to a program in
		// cooked mode would freeze its output; it reaches the program
		// as a character instead. A program that turns IXON on gets it,
		// and restoreTerminal restarts output such a ^S stopped.
		t.Iflag &^= unix.IXON
		t.Oflag &^= unix.ONLCR
		if e := unix.IoctlSetTermios(int(fd), unix.TCSETS, t); e != nil {
			ioErr = e
			return
		}
		if e := unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)}); e != nil {
			ioErr = e
			return
		}
		// Read back: the kernel may adjust what it was given.
		if t, e = unix.IoctlGetTermios(int(fd), unix.TCGETS); e != nil {
			ioErr = e
			return
		}
		m.termios = *t
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return termModes{}, fmt.Errorf("configure pty: %w", err)
	}
	return m, nil
}

// restoreTerminal puts the terminal back as trl set it up, between
// commands (called with mu held): the launch modes and the session's window
// size, through the master (a mode ioctl on a PTY master acts on its
// slave; setting the size it already has is a no-op in the kernel, so no
// SIGWINCH is sent unless a command changed it); then, through the
// daemon's copy of the slave:
//
//   - unread input is discarded (TCFLSH): what was typed for the last
//     command and not read by it (a second "y\n" to a prompt that took
//     one), or a terminal's answer to a query found in binary output, would
//     otherwise be read by the next command that reads its stdin — a stale
//     "y" answering a later `rm -i` (TestUnreadInputDiscarded). Input can
//     reach a command only once it runs (exec.input needs a running
//     command), so nothing meant for the command being started is lost;
//   - stopped output is started again: restoring the modes turns IXON
//     off, which restarts output a ^S stopped while a command had it on
//     (TestStoppedOutputRestarted), and TCXONC off-then-on restarts
//     output a program suspended with tcflow(TCOOFF) ("on" alone only
//     undoes an "off", so the pair works whatever the state;
//     TestSuspendedOutputRestarted). Otherwise every later command's
//     output would block in write(2) and the session would hang. When trl
//     wrote no input since the last restore, TCFLSH and the "off" are
//     skipped: the queue is empty, no ^S was typed, and "on" alone
//     undoes a program's tcflow(TCOOFF).
//
// None of these waits for a writer. TCSETSF would flush input too, but it
// first takes the terminal's write lock, which a process blocked writing
// to a stopped or full terminal holds: a background writer blocked on
// stopped output then hung the next command's start, under mu, and with it
// the session and the daemon's shutdown (TestRestoreWaitsForNoWriter). On
// Linux 6.18 such a TCSETSF with a signal pending even spins in the kernel,
// unkillable, until the writer goes: never use TCSETSF or TCSETSW here.
func (s *Session) restoreTerminal() {
	m := &s.modes
	var ioErr error
	err := s.ptmRaw.Control(func(fd uintptr) {
		// Read before writing: the modes and size are almost always
		// still the session's, and reading them is cheaper than setting
		// them (TCSETS takes the line discipline's locks).
		var cur unix.Termios
		if e := rawio.IoctlPtr(int(fd), unix.TCGETS, unsafe.Pointer(&cur)); e != nil || cur != m.termios {
			if e := unix.IoctlSetTermios(int(fd), unix.TCSETS, &m.termios); e != nil {
				ioErr = e
				return
			}
		}
		// The size is the session's current one (session.resize
		// changes it), not the launch one.
		want := unix.Winsize{Row: uint16(s.cfg.Rows), Col: uint16(s.cfg.Cols)}
		var size unix.Winsize
		if e := rawio.IoctlPtr(int(fd), unix.TIOCGWINSZ, unsafe.Pointer(&size)); e != nil || size != want {
			ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &want)
		}
	})
	if err == nil {
		err = ioErr
	}
	if err == nil {
		// Only trl writes the terminal's input (writeInput, reply): when
		// it wrote none since the last restore there is nothing to
		// discard, and no ^S can have stopped output; a program's
		// tcflow(TCOOFF) is undone by TCOON alone. That saves two of
		// these ioctls on most commands.
		// The lone TCOON goes raw (rawio); after input, the flush and the
		// pair go the ordinary way (a flush may wait for the terminal's
		// line discipline).
		ops := []struct{ req, arg int }{{unix.TCXONC, unix.TCOON}}
		ioctl := rawio.IoctlInt
		if s.wroteInput.Swap(false) {
			ops = []struct{ req, arg int }{{unix.TCFLSH, unix.TCIFLUSH}, {unix.TCXONC, unix.TCOOFF}, {unix.TCXONC, unix.TCOON}}
			ioctl = unix.IoctlSetInt
		}
		err = s.ptsRaw.Control(func(fd uintptr) {
			for _, op := range ops {
				if ioErr = ioctl(int(fd), uint(op.req), op.arg); ioErr != nil {
					return
				}
			}
		})
		if err == nil {
			err = ioErr
		}
	}
	if err != nil {
		s.log.Debug().Err(err).Msg("restore the terminal's modes")
	}
}
