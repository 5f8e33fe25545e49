package session

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"

	"github.com/trl-project/trl/internal/rawio"
)

// notRunExitCode is the status of a command the shell did not run (126:
// found, not executed).
const notRunExitCode = 126

// readControl owns the control pipe: it turns prompt records into
// completions.
func (s *Session) readControl() {
	defer s.readers.Done()
	defer close(s.ctlEnded)
	rc, err := s.ctlR.SyscallConn()
	if err != nil {
		s.log.Warn().Err(err).Msg("read the control pipe")
		return
	}
	ctl := rawio.NewConn(rc) // raw calls on the poller (rawio)
	rp := newRecordParser(s.nonce)
	buf := make([]byte, 512) // records are short; this is held while idle
	first := true
	var tail exitTail
	for {
		n, err := ctl.Read(buf)
		if n > 0 {
			recs, noise := rp.feed(buf[:n])
			// Publish the end records of this batch before acting on any
			// of it, so that a start record handled first does not send
			// an interrupt to a line already over.
			for _, r := range recs {
				if !r.start && !first && r.seq > s.lastRecord.Load() {
					s.lastRecord.Store(r.seq)
				}
			}
			if s.log.GetLevel() <= zerolog.TraceLevel {
				s.log.Trace().Bytes("ctl", s.maskLog(buf[:n])).Msg("control")
			}
			if len(noise) > 0 {
				s.log.Debug().Bytes("noise", s.maskLog(noise)).Msg("shell said")
			}
			from := 0
			for _, r := range recs {
				tail.keep(s, noise[from:r.at])
				from = r.at
				tail.restart(s, r.start)
				if !r.start && r.valid {
					s.errexit.Store(r.errexit)
				}
				switch {
				case r.start:
					s.started(r.seq)
				case first && (!r.valid || r.seq != 0):
					s.log.Debug().Int64("seq", r.seq).Msg("a malformed first record ignored: not the shell's prompt")
				case first:
					first = false
					close(s.ready)
					s.mu.Lock()
					s.cwd = r.cwd
					s.mu.Unlock()
				default:
					s.complete(r.seq, Status{ExitCode: r.status, Cwd: r.cwd})
				}
			}
			tail.keep(s, noise[from:])
		}
		if err != nil {
			return
		}
	}
}

// exitTailNote: dash and zsh undo a command's redirections before they
// run an EXIT trap as they exit, so what the trap prints (stdout and
// stderr alike) goes where the shell's own output goes: the control pipe,
// where it used to be logged as noise and lost. So readControl keeps what
// the shell writes there after a line's start record (exitTail), and when
// the shell exits during that line, the line's output ends with it, on
// stdout (exitOutput): the shell wrote both streams to one pipe, in the
// order a person's terminal shows them. Lines that name trl's own
// statements (zsh traces them there under xtrace) are left out. When the
// line ends with its prompt record instead, what was kept is dropped: it
// was the shell's own noise, logged.

// maxExitTail bounds what is kept of the shell's writes during one line.
const maxExitTail = 64 << 10

// exitTail is readControl's side of exitTailNote.
type exitTail struct{ on, kept bool }

// restart starts keeping at a start record and stops at a prompt record,
// dropping what was kept.
func (t *exitTail) restart(s *Session, start bool) {
	if t.kept {
		s.ioMu.Lock()
		s.exitTail = s.exitTail[:0]
		s.ioMu.Unlock()
		t.kept = false
	}
	t.on = start
}

// keep keeps noise the shell wrote while a line runs.
func (t *exitTail) keep(s *Session, noise []byte) {
	if !t.on || len(noise) == 0 {
		return
	}
	s.ioMu.Lock()
	if room := maxExitTail - len(s.exitTail); room > 0 {
		s.exitTail = append(s.exitTail, noise[:min(room, len(noise))]...)
	}
	s.ioMu.Unlock()
	t.kept = true
}

// exitOutput delivers what the shell wrote to the control pipe after the
// running line's start record and before it exited (exitTailNote), as
// the line's stdout, without trl's own trace lines. Called with ioMu held.
func (s *Session) exitOutput() {
	if len(s.exitTail) == 0 {
		return
	}
	names, file := []byte(trlName(s.nonce, "")), []byte(s.cmdFile())
	var out []byte
	for rest := s.exitTail; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line = rest[:i+1]
		}
		rest = rest[len(line):]
		// trl's own statements, traced: they name its functions, or
		// (bash) its command file.
		if !bytes.Contains(line, names) && (!s.dialect.source || !bytes.Contains(line, file)) {
			out = append(out, line...)
		}
	}
	s.exitTail = nil
	if len(out) > 0 {
		s.deliver(Stdout, out)
	}
}

// pump owns reading one output fd. Each read happens under ioMu together
// with the hand-over to the running job, so bytes reach the sink in kernel
// order even when a drain runs concurrently.
func (s *Session) pump(rc syscall.RawConn, stream Stream) {
	defer s.readers.Done()
	var rerr error
	for {
		err := rc.Read(func(fd uintptr) bool {
			s.ioMu.Lock()
			defer s.ioMu.Unlock()
			// An idle session holds no read buffer: one is borrowed only
			// while the fd has data.
			bp := readBufs.Get().(*[]byte)
			defer readBufs.Put(bp)
			buf := *bp
			n, e := rawio.Read(int(fd), buf)
			if e == unix.EAGAIN || e == unix.EINTR {
				return false
			}
			if n > 0 {
				// Take what else is already there, without waiting, so a
				// fast writer costs one hand-over per buffer rather than
				// per 4 KiB terminal read.
				for n < len(buf) {
					m, e := rawio.Read(int(fd), buf[n:])
					if m <= 0 || e != nil {
						break
					}
					n += m
				}
				if stream == Stderr {
					// A write to the stderr pipe is readable at once; one
					// to the terminal reaches the master through a kernel
					// worker, later. So terminal output written before
					// these bytes (the last line echoed before `read -p`
					// prints its prompt) may not have been read yet:
					// reading the master until it has nothing waits for
					// that worker (n_tty_read flushes the pending buffer
					// before it answers EAGAIN), and delivering it first
					// keeps the screen and the prompt in the order the
					// program wrote. Terminal output written after these
					// bytes but before this read can still come first;
					// nothing in the kernel dates them.
					s.drain(s.ptmRaw, Stdout)
				}
				s.deliver(stream, buf[:n])
				return true
			}
			rerr = e
			if rerr == nil {
				rerr = io.EOF
			}
			return true
		})
		if err != nil || rerr != nil {
			// EIO from the master after the last slave holder exits is a
			// hang-up, not an error; nor is EOF or the fd closed by Close.
			// A closed fd is known by filesClosed, not by the error: an
			// os.File's RawConn.Read returns internal/poll's "use of
			// closed file", which is not os.ErrClosed (the daemon keeps
			// the slave open, so the master never hangs up before Close
			// closes it, and every normal end used to log a warning).
			if e := cmp.Or(rerr, err); e != unix.EIO && e != io.EOF && !errors.Is(e, os.ErrClosed) && !s.filesClosed.Load() {
				s.log.Warn().Err(e).Str("stream", stream.String()).Msg("read from the shell failed")
			}
			return
		}
	}
}

// readBufs are the buffers output is read into; sinks copy what they keep.
var readBufs = sync.Pool{New: func() any {
	b := make([]byte, 32*1024)
	return &b
}}

// deliver hands bytes to the screen and the observers, then to the
// running job, or, when none runs (a background job's output between
// commands), to the idle log. Called with ioMu held.
//
// Secrets are masked first (mask.go), so that nothing downstream sees
// them; a tail that could start one is held back in s.held.
func (s *Session) deliver(stream Stream, p []byte) {
	if stream == Stderr {
		if p = s.strayRecord(p); len(p) == 0 {
			return
		}
	}
	if len(s.secrets) > 0 || len(s.held[stream]) > 0 {
		p, s.held[stream] = s.secrets.mask(s.held[stream], p, false)
		if len(p) == 0 {
			return
		}
	}
	s.deliverMasked(stream, p)
}

// deliverMasked is deliver for bytes already masked.
func (s *Session) deliverMasked(stream Stream, p []byte) {
	if stream == Stderr && s.job != nil && s.job.src != nil {
		// bash: what it says about the line, and its job notices
		// (sourcename.go, jobnotice.go).
		p = s.job.src.scrub(p)
		s.observe(stream, p)
		var notices []byte
		p, notices, s.job.noticeOpen = splitNotices(p, s.job.noticeOpen)
		if len(notices) > 0 {
			s.idle.write(notices)
		}
		if len(p) > 0 {
			s.job.sink.Output(stream, p)
		}
		return
	}
	s.observe(stream, p)
	if s.job != nil {
		s.job.sink.Output(stream, p)
		return
	}
	s.idle.write(p)
}

// drain reads fd until it would block and returns how many bytes it
// delivered. Called with ioMu held.
func (s *Session) drain(rc syscall.RawConn, stream Stream) (total int) {
	bp := readBufs.Get().(*[]byte)
	defer readBufs.Put(bp)
	buf := *bp
	rc.Control(func(fd uintptr) {
		for {
			n, err := rawio.Read(int(fd), buf)
			if n > 0 {
				s.deliver(stream, buf[:n])
				total += n
				continue
			}
			if err == unix.EINTR {
				continue
			}
			return
		}
	})
	return total
}

// complete ends the job whose command line had sequence number seq (-1:
// whichever runs, because the shell ended).
func (s *Session) complete(seq int64, st Status) {
	oomKills := int64(-1)
	if s.limits.MemoryMB > 0 {
		oomKills = s.lim.oomKills() // before the locks: a file read
	}
	var broken error
	if !st.Exited {
		// Before the locks too (a prlimit on the shell), and before the
		// line is done, so that the next command already finds the
		// session closing if a command left it unable to run another.
		broken = s.checkLimits()
	}
	s.mu.Lock()
	s.ioMu.Lock()
	j := s.job
	checkDrop := j != nil && seq >= 0 && seq < j.seq && !j.started && !j.dropChecked
	if checkDrop {
		j.dropChecked = true
	}
	if j == nil || (seq >= 0 && seq != j.seq) {
		// A prompt printed again for a line already answered (a shell
		// re-prompts when interrupted while idle) or for none at all.
		s.ioMu.Unlock()
		s.mu.Unlock()
		if checkDrop {
			s.checkDropped(j)
		}
		if seq >= 0 {
			s.log.Debug().Int64("seq", seq).Msg("prompt record with no matching command ignored")
		}
		return
	}
	// The shell ran the line (its prompt names it) but not its start
	// record: what trl's statements call is no longer the builtin (zsh's
	// `builtin() { :; }`), so the command did not run either, and no
	// later one would. A line a typed ^C interrupted before its start
	// record (status 130) is not that.
	notRun := seq >= 0 && j.announced && !j.started && broken == nil && st.ExitCode != 128+int(unix.SIGINT)
	if notRun {
		broken = fmt.Errorf("%w: the shell went through trl's line for this command without running trl's own statements or the command (a function named builtin, printf or eval stands in for them?), and would run no other; ended", ErrUnresponsive)
		st.ExitCode = notRunExitCode
	}
	s.drain(s.ptmRaw, Stdout)
	s.drain(s.errRaw, Stderr)
	if st.Exited && j.started {
		s.exitOutput()
	}
	s.flushHeld() // the command is over: nothing more of a secret comes
	if j.announced {
		s.announce(CommandEnd, strconv.AppendInt(nil, int64(st.ExitCode), 10))
	}
	s.job = nil
	s.ioMu.Unlock()
	st.OOMKilled = oomKills > j.oomBase && j.oomBase >= 0 && oomKills >= 0
	if st.Exited {
		st.Cwd = s.cwd
	} else {
		s.cwd = st.Cwd
		if s.state == StateBusy {
			s.state = StateIdle
		}
		if j.announced { // a command's line, not trl's own
			s.lastStatus = st.ExitCode
		}
	}
	s.lastUsed = time.Now().UTC()
	if broken != nil {
		// The command ended by itself; the session ends after it. Its
		// answer says so (its status stays its own), with the cause
		// recorded before the line is done.
		s.closing = true
		if !notRun {
			broken = afterCommand{broken}
		}
		s.setCause(broken)
		st.Exited = true
	}
	s.mu.Unlock()
	if broken != nil {
		go s.endWith(broken)
	}
	s.scr.Settle()
	if j.stdin != "" {
		os.Remove(j.stdin)
	}
	j.status = st
	close(j.done)
	s.lineEnded() // what the follower holds for the line is dropped
	if j.onDone != nil {
		j.onDone()
	}
}
