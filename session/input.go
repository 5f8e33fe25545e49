package session

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/trl-project/trl/internal/pollpty"
	"github.com/trl-project/trl/internal/termwait"
)

// inputTimeout bounds one write of input to the terminal: a program that
// reads nothing while its input queue is full must not hold the caller.
const inputTimeout = 2 * time.Second

// WriteInput types p on the session's terminal, as a person at the
// keyboard would (SPEC §8 exec.input): the terminal's line discipline
// echoes and edits it as its modes say.
func (s *Session) WriteInput(p []byte) error {
	return s.writeInput(p, false)
}

func (s *Session) writeInput(p []byte, secret bool) error {
	s.mu.Lock()
	exited := s.state == StateExited
	s.mu.Unlock()
	if exited {
		return errorf(ErrExited, "session %s's shell has exited", s.id)
	}
	if err := s.checkLineLimit(p); err != nil {
		return err
	}
	if err := s.ptm.SetWriteDeadline(time.Now().Add(inputTimeout)); err != nil {
		return fmt.Errorf("write input to the terminal: %w", err)
	}
	s.wroteInput.Store(true)
	n, err := s.ptm.Write(p)
	if n > 0 {
		s.observeInput(p[:n], secret)
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Not trl's fault: the terminal holds about 4 KiB a program has
		// not read, and this one read none of it for inputTimeout.
		return errorf(ErrLimit, "typed %d of %d bytes: the terminal's input queue is full and the program read none of it for %s; type less at a time, once it reads", n, len(p), inputTimeout)
	}
	if err != nil {
		return fmt.Errorf("write input to the terminal: %w", err)
	}
	return nil
}

// InputWait samples whether the command in the foreground of the
// session's terminal waits for terminal input (see package termwait). It
// is cheap (tens of microseconds) and keeps no state between calls but
// the sampler itself, made on first use.
func (s *Session) InputWait() (termwait.Status, error) {
	t, err := s.terminal()
	if err != nil {
		return termwait.Status{}, err
	}
	// Output the program wrote before it began to wait may still sit in
	// the terminal or the stderr pipe, unread by the pumps: the screen
	// (its alternate screen, its prompt) is not yet what the program
	// shows, so the program does not count as waiting yet.
	if pollpty.Unread(s.ptmRaw) || pollpty.Unread(s.errRaw) {
		return termwait.Status{}, nil
	}
	// The screen is asked (which parses what it holds) only for a
	// program that waits: a busy one costs one /proc look, not a parse.
	st, err := t.Check(false)
	if err != nil || !st.Waiting {
		return st, err
	}
	// The program waits, so all it wrote before is written. Bytes may
	// have arrived since the first look, or a pump may hold some it read
	// but has not yet handed to the screen: look again, and take ioMu
	// once so any such hand-over is finished before the screen is asked.
	if pollpty.Unread(s.ptmRaw) || pollpty.Unread(s.errRaw) {
		return termwait.Status{}, nil
	}
	// What it wrote to the terminal last may still be on its way to the
	// master (a kernel worker moves it), neither readable nor counted as
	// unread: a prompt seen then is cut (top's frame ended mid-row).
	// Reading the master dry waits for that worker; bytes found are
	// output, which restarts the sampling.
	s.ioMu.Lock()
	late := s.drain(s.ptmRaw, Stdout)
	s.ioMu.Unlock()
	if late > 0 {
		return termwait.Status{}, nil
	}
	// Input typed but not yet read: the program has been woken and will
	// read it. Its echo is output, which restarts the sampling at once, so
	// without this a loaded machine showed a prompt just answered as
	// waiting again.
	if s.typedUnread() {
		return termwait.Status{}, nil
	}
	// The same lock hands on what the streams held back as a possible
	// start of a secret: the program waits, so no more of it comes now.
	s.ioMu.Lock()
	s.flushHeld()
	s.ioMu.Unlock()
	if s.scr.AltScreen() {
		st.Kind = termwait.KindTUI
	}
	return st, nil
}

// typedUnread reports whether the terminal holds input its program has not
// read (the slave side's queue).
func (s *Session) typedUnread() bool { return pollpty.Unread(s.ptsRaw) }

// InputModes returns what encoding keys for the terminal needs: the
// erase and end-of-file characters (from its modes) and whether the
// program asked for application cursor keys and bracketed paste.
func (s *Session) InputModes() (appCursor, bracketedPaste bool, erase, eof byte) {
	m := s.scr.Modes()
	appCursor, bracketedPaste = m.AppCursor, m.BracketedPaste
	erase, eof = 0x7f, 0x04
	if t, err := s.terminal(); err == nil {
		if m, err := t.Modes(); err == nil {
			erase, eof = m.Erase, m.EOF
		}
	}
	return appCursor, bracketedPaste, erase, eof
}

// Foreground is the terminal's foreground process group.
func (s *Session) Foreground() (int, error) {
	t, err := s.terminal()
	if err != nil {
		return 0, err
	}
	return t.Foreground()
}

// TerminalModes are the terminal's current modes.
func (s *Session) TerminalModes() (termwait.Modes, error) {
	t, err := s.terminal()
	if err != nil {
		return termwait.Modes{}, err
	}
	return t.Modes()
}

// terminal is the session's terminal sampler, made on first use.
func (s *Session) terminal() (*termwait.Terminal, error) {
	s.twOnce.Do(func() {
		s.tw, s.twErr = termwait.New(s.ptmRaw, s.pid)
	})
	return s.tw, s.twErr
}

// maxCanonLine is the longest line a terminal in canonical mode keeps:
// Linux's line discipline holds 4096 bytes and keeps the last for the
// newline; what is typed beyond that is dropped without a word.
const maxCanonLine = 4095

// checkLineLimit refuses input holding a line the terminal would cut
// (issue 24 item 9): in canonical mode the program would read its first
// 4095 bytes and never know the rest was typed. Splitting it is no
// answer (a newline in the middle is a different input), so the caller
// is told what to do instead. In raw mode the program reads as bytes come
// and nothing is dropped.
func (s *Session) checkLineLimit(p []byte) error {
	if len(p) <= maxCanonLine {
		return nil
	}
	t, err := s.terminal()
	if err != nil {
		return nil
	}
	m, err := t.Modes()
	if err != nil || !m.Canonical {
		return nil
	}
	run := 0
	for _, c := range p {
		if c == '\n' || c == '\r' || c == m.EOF && c != 0 {
			run = 0
			continue
		}
		if run++; run > maxCanonLine {
			return errorf(ErrInvalid, "the input holds a line longer than %d bytes, the terminal's limit for a line in canonical mode: the program would read only its first %d bytes and the kernel would drop the rest, so nothing was typed; send long text as a file or as exec.run's stdin, or in lines the program accepts", maxCanonLine, maxCanonLine)
		}
	}
	return nil
}
