package session

import (
	"bytes"
	"maps"
	"slices"
	"time"

	"golang.org/x/sys/unix"
)

// AddSecret makes the session mask b (each of its lines of at least
// minSecretLen bytes) in all output from now on (see mask.go). Output
// already delivered is not changed.
func (s *Session) AddSecret(b []byte) {
	parts := secretParts(b)
	if len(parts) == 0 {
		return
	}
	s.ioMu.Lock()
	s.remember(parts)
	s.ioMu.Unlock()
}

// remember adds parts to the later secrets, forgetting the oldest past
// maxSecrets (the named ones are kept whatever comes), and makes the set
// masked from now on. Called with ioMu held, or before the session is
// shared.
func (s *Session) remember(parts [][]byte) {
	for _, p := range parts {
		if !slices.ContainsFunc(s.later, func(q []byte) bool { return bytes.Equal(p, q) }) {
			s.later = append(s.later, p)
		}
	}
	if n := len(s.later) - maxSecrets; n > 0 {
		s.later = slices.Delete(slices.Clone(s.later), 0, n)
	}
	s.secrets = secretSet(nil).with(s.named).with(s.later)
}

// maskLog masks the session's secrets in p, for a log line.
func (s *Session) maskLog(p []byte) []byte {
	out, _ := s.MaskBytes(p)
	return out
}

// secretSet is the secrets the session masks now.
func (s *Session) secretSet() secretSet {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	return s.secrets
}

// MaskBytes is p with every secret of the session replaced by ***, for
// an answer that is not the session's output (fs.read); masked reports
// whether any was. It returns p itself when none occurs.
func (s *Session) MaskBytes(p []byte) (out []byte, masked bool) {
	ss := s.secretSet()
	if len(ss) == 0 {
		return p, false
	}
	out = ss.maskAll(p)
	return out, !bytes.Equal(out, p)
}

// ForkSecrets is what a session forked from this one needs to go on
// masking what this one masks: the variables given as secrets, and the
// bytes of every secret (those typed with exec.input secret too).
func (s *Session) ForkSecrets() (named map[string]string, masks [][]byte) {
	return maps.Clone(s.cfg.Secrets), slices.Clone(s.secretSet())
}

// MaskState makes st, read from this session, what a client may see of
// it: the variables given as secrets are left out (a state carried
// elsewhere does not take them along; not_carried says so), and the
// bytes of every secret elsewhere in it (a value that holds one, a
// function that prints one) are replaced by ***.
func (s *Session) MaskState(st *ShellState) {
	for _, name := range slices.Sorted(maps.Keys(s.cfg.Secrets)) {
		_, env := st.Env[name]
		delete(st.Env, name)
		n := len(st.Vars)
		st.Vars = slices.DeleteFunc(st.Vars, func(v Var) bool { return v.Name == name })
		st.Readonly = slices.DeleteFunc(st.Readonly, func(v string) bool { return v == name })
		if env || len(st.Vars) < n {
			st.NotCarried = append(st.NotCarried, NotCarried{What: "variable", Detail: name + ": a secret (session.create's secrets); give it again in the new session's secrets"})
		}
	}
	if len(s.secretSet()) == 0 {
		return
	}
	m := s.MaskText
	st.Cwd = m(st.Cwd)
	for _, vs := range []map[string]string{st.Env, st.Functions, st.Aliases} {
		for k, v := range vs {
			vs[k] = m(v)
		}
	}
	for i := range st.Vars {
		v := &st.Vars[i]
		v.Value = m(v.Value)
		for j := range v.Array {
			v.Array[j] = m(v.Array[j])
		}
		for k, x := range v.Assoc {
			v.Assoc[k] = m(x)
		}
	}
	for i := range st.Dirs {
		st.Dirs[i] = m(st.Dirs[i])
	}
	for i := range st.NotCarried {
		st.NotCarried[i].Detail = m(st.NotCarried[i].Detail) // a trap's text, a job's command line
	}
}

// MaskChunk masks the session's secrets in data, a chunk of a file, for
// fs.read. before and after are what the file holds just ahead of the
// chunk and just after it (LongestSecret()-1 bytes each where there are
// that many): a secret the chunk's start or end cuts is masked too, its
// part in the chunk answered as ***. masked reports whether anything was.
func (s *Session) MaskChunk(before, data, after []byte) (out []byte, masked bool) {
	ss := s.secretSet()
	if len(ss) == 0 {
		return data, false
	}
	buf := append(append(slices.Clip(before), data...), after...)
	var spans [][2]int // every occurrence of every secret in buf
	for _, sec := range ss {
		for from := 0; ; {
			i := bytes.Index(buf[from:], sec)
			if i < 0 {
				break
			}
			spans = append(spans, [2]int{from + i, from + i + len(sec)})
			from += i + 1
		}
	}
	if len(spans) == 0 {
		return data, false
	}
	slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
	merged := spans[:1] // overlapping occurrences are one ***
	for _, sp := range spans[1:] {
		if last := &merged[len(merged)-1]; sp[0] < last[1] {
			last[1] = max(last[1], sp[1])
		} else {
			merged = append(merged, sp)
		}
	}
	start, end := len(before), len(before)+len(data)
	at := start
	for _, sp := range merged {
		if sp[1] <= at || sp[0] >= end {
			continue
		}
		out = append(out, buf[at:max(at, sp[0])]...)
		out = append(out, maskText...)
		at = min(sp[1], end)
		masked = true
	}
	if !masked {
		return data, false
	}
	return append(out, buf[at:end]...), true
}

// LongestSecret is the length of the longest secret the session masks.
func (s *Session) LongestSecret() int {
	ss := s.secretSet()
	if len(ss) == 0 {
		return 0
	}
	return len(ss[0]) // sorted longest first (secretSet.with)
}

// flushHeld hands on the bytes a stream held back as a possible start of
// a secret: the command ended, or its program waits for input, so no
// more of it is coming now. Called with ioMu held.
func (s *Session) flushHeld() {
	for st := range s.held {
		if h := s.held[st]; len(h) > 0 {
			s.held[st] = nil
			out, _ := s.secrets.mask(nil, h, true)
			s.deliverMasked(Stream(st), out)
		}
	}
}

// secretEchoLimit bounds how long echo stays off after a secret is
// typed, waiting for the program to read it (WriteSecret).
const secretEchoLimit = 2 * time.Second

// WriteSecret types p like WriteInput, as a secret: its bytes are masked
// in all output from now on (AddSecret), what observers see of it is one
// '*' per byte, and the terminal's echo is off until the line discipline
// has taken all of it in, so that a prompt that echoes does not show it.
// Taken in means the program has read what was typed (the terminal's
// input queue no longer holds it): a program that is slow to read, or
// one whose input queue was full when the secret came, leaves it waiting
// outside the line discipline, which echoes it only when it takes it. A
// fixed pause (30 ms once) echoed such a secret. The program's own modes
// are put back afterwards, unless it changed them meanwhile.
func (s *Session) WriteSecret(p []byte) error {
	s.AddSecret(p)
	var before *unix.Termios
	_ = s.ptmRaw.Control(func(fd uintptr) {
		t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		if err != nil || t.Lflag&unix.ECHO == 0 {
			return
		}
		quiet := *t
		quiet.Lflag &^= unix.ECHO | unix.ECHONL
		if unix.IoctlSetTermios(int(fd), unix.TCSETS, &quiet) == nil {
			before = t
		}
	})
	err := s.writeInput(p, true)
	if before != nil {
		s.waitTakenIn()
		_ = s.ptmRaw.Control(func(fd uintptr) {
			if t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS); err == nil && t.Lflag&unix.ECHO == 0 && t.Lflag&unix.ICANON == before.Lflag&unix.ICANON {
				_ = unix.IoctlSetTermios(int(fd), unix.TCSETS, before)
			}
		})
	}
	return err
}

// waitTakenIn waits, up to secretEchoLimit, until the program has read
// what was typed, or the session's shell is gone. The line discipline
// echoes a byte when it takes it into its queue, and takes new input only
// as the program reads what is queued; so once the queue has been seen
// empty twice, some milliseconds apart (the kernel's input work runs
// right after a read makes room), what was typed has been taken in with
// echo off. A partial line in canonical mode does not count as queued
// (TIOCINQ counts whole lines): it was taken in already.
func (s *Session) waitTakenIn() {
	deadline := time.Now().Add(secretEchoLimit)
	empty := 0
	for wait := 30 * time.Millisecond; empty < 2 && time.Now().Before(deadline); wait = 10 * time.Millisecond {
		select {
		case <-s.exited:
			return
		case <-time.After(wait):
		}
		if s.typedUnread() {
			empty = 0
		} else {
			empty++
		}
	}
}

// WriteTyped types p as a person at a keyboard does (the console): at a
// password prompt — the terminal in canonical mode with echo off — what
// is typed is a secret: observers (a recording's "i" events) see '*' for
// each byte, and each line, once ended, is masked in all output. It
// reports whether p was taken as a secret.
func (s *Session) WriteTyped(p []byte) (secret bool, err error) {
	secret = s.atPasswordPrompt()
	// The line is registered before its bytes are written: the program
	// may read the line and print it back before the write returns, and
	// what it prints must already be masked.
	s.typeLine(p, secret)
	return secret, s.writeInput(p, secret)
}

// typeLine follows what a person types at a password prompt. The line is
// registered when it ends, not key by key: every prefix of a password as
// a secret would star out ordinary words ("pas") and crowd out the real
// secrets. Until then nothing of it is shown: the prompt does not echo.
func (s *Session) typeLine(p []byte, secret bool) {
	s.typedMu.Lock()
	defer s.typedMu.Unlock()
	if !secret {
		s.typed = s.typed[:0]
		return
	}
	for _, c := range p {
		switch c {
		case '\r', '\n':
			s.AddSecret(s.typed)
			clear(s.typed)
			s.typed = s.typed[:0]
		case 0x7f, 0x08: // erase
			if n := len(s.typed); n > 0 {
				s.typed = s.typed[:n-1]
			}
		case 0x15: // kill the line
			clear(s.typed)
			s.typed = s.typed[:0]
		default:
			if len(s.typed) < 4096 {
				s.typed = append(s.typed, c)
			}
		}
	}
}

// atPasswordPrompt reports whether the terminal is in canonical mode with
// echo off: the modes of a password prompt (getpass, read -s).
func (s *Session) atPasswordPrompt() bool {
	pw := false
	_ = s.ptmRaw.Control(func(fd uintptr) {
		t, err := unix.IoctlGetTermios(int(fd), unix.TCGETS)
		pw = err == nil && t.Lflag&unix.ICANON != 0 && t.Lflag&unix.ECHO == 0
	})
	return pw
}

// MaskText masks the session's secrets in t: for text about the session
// that is not its output (a command's text in the audit log and in
// exec.list, typed input in the audit log).
func (s *Session) MaskText(t string) string {
	if len(s.secretSet()) == 0 {
		return t // no copy on the path of every command of a session without secrets
	}
	if out, masked := s.MaskBytes([]byte(t)); masked {
		return string(out)
	}
	return t
}
