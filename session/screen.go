package session

import (
	"fmt"
	"sync"

	"github.com/trl-project/trl/screen"
	"golang.org/x/sys/unix"
)

// Screen is the session's terminal emulator (SPEC §9): everything written
// to the terminal and the stderr pipe, in arrival order.
func (s *Session) Screen() *screen.Screen { return s.scr }

// newScreen builds the session's screen; queries are answered on the
// terminal by this one responder.
func (s *Session) newScreen() {
	s.scr = screen.New(screen.Options{Rows: s.cfg.Rows, Cols: s.cfg.Cols, NewlineCR: true, Reply: s.reply})
}

// reply writes a terminal's answer to the program that asked. The master
// is non-blocking: an answer that does not fit in the terminal's input
// queue (nobody reads it) is dropped rather than stall the output path.
func (s *Session) reply(p []byte) {
	if s.ptmRaw == nil {
		return
	}
	s.wroteInput.Store(true)
	_ = s.ptmRaw.Control(func(fd uintptr) {
		if _, err := unix.Write(int(fd), p); err != nil {
			s.log.Debug().Err(err).Msg("terminal answer not written")
		}
	})
}

// Resize sets the terminal's size (the kernel signals the foreground
// group with SIGWINCH; we signal it again in case the size was unchanged
// for the kernel but not for the program) and the screen's.
func (s *Session) Resize(rows, cols int) error {
	if rows < 1 || rows > 1000 || cols < 1 || cols > 1000 {
		return errorf(ErrInvalid, "rows and cols must be between 1 and 1000, got %dx%d", rows, cols)
	}
	if err := s.resize(rows, cols); err != nil {
		return err
	}
	// Signalled with no lock held; a group that has just ended gets
	// nothing, and one that has just begun is of the size already.
	if pg := s.commandGroup(); pg > 0 {
		_ = s.sendSignal(-pg, unix.SIGWINCH)
	}
	return nil
}

// resize sets the terminal's size and the screen's, under mu, and tells
// the observers.
func (s *Session) resize(rows, cols int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == StateExited {
		return errorf(ErrExited, "session %s's shell has exited", s.id)
	}
	var ioErr error
	err := s.ptmRaw.Control(func(fd uintptr) {
		ioErr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Row: uint16(rows), Col: uint16(cols)})
	})
	if err == nil {
		err = ioErr
	}
	if err != nil {
		return fmt.Errorf("resize the terminal: %w", err)
	}
	s.cfg.Rows, s.cfg.Cols = rows, cols
	s.ioMu.Lock() // between the bytes laid out for the old size and the new
	s.scr.Resize(rows, cols)
	s.announce(Resized, fmt.Appendf(nil, "%dx%d", cols, rows))
	s.ioMu.Unlock()
	return nil
}

// idleLogSize bounds the per-session log of output written while no
// command runs.
const idleLogSize = 64 << 10

// idleLog keeps the last idleLogSize bytes written while no command ran
// (background jobs), with offsets counted from the session's start.
type idleLog struct {
	mu    sync.Mutex
	buf   []byte // ring, allocated on first use
	total int64  // bytes ever written
}

func (l *idleLog) write(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.buf == nil {
		l.buf = make([]byte, idleLogSize)
	}
	if len(p) > len(l.buf) {
		l.total += int64(len(p) - len(l.buf))
		p = p[len(p)-len(l.buf):]
	}
	for len(p) > 0 {
		i := int(l.total % int64(len(l.buf)))
		n := copy(l.buf[i:], p)
		p = p[n:]
		l.total += int64(n)
	}
}

// OutputChunk is a read of the idle log.
type OutputChunk struct {
	Data []byte
	// Offset is where Data starts; Next is where the next read starts.
	Offset, Next int64
	// Lost is how many bytes between the asked offset and Offset are gone
	// (the log keeps the last 64 KiB).
	Lost int64
}

// Output reads the log of output written while no command ran, from
// offset (bytes since the session's start), at most limit bytes.
func (s *Session) Output(offset int64, limit int) OutputChunk {
	l := &s.idle
	l.mu.Lock()
	defer l.mu.Unlock()
	oldest := max(l.total-int64(len(l.buf)), 0)
	c := OutputChunk{Offset: max(offset, oldest)}
	if c.Offset > l.total {
		c.Offset = l.total
	}
	c.Lost = max(c.Offset-max(offset, 0), 0)
	if offset > l.total {
		c.Lost = 0
	}
	n := int(min(l.total-c.Offset, int64(limit)))
	c.Data = make([]byte, 0, n)
	for i := c.Offset; i < c.Offset+int64(n); {
		j := int(i % int64(len(l.buf)))
		k := min(len(l.buf)-j, int(c.Offset+int64(n)-i))
		c.Data = append(c.Data, l.buf[j:j+k]...)
		i += int64(k)
	}
	c.Next = c.Offset + int64(n)
	return c
}
