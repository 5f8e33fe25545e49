package session

import (
	"bytes"
	"slices"
)

// Secrets are masked, not only kept from being echoed (issue 23 §2): a
// program may echo for itself (readline prints what is typed whatever the
// terminal's echo says), a secret may be typed while echo is back on, or
// a command may simply print one. So a session remembers the bytes of
// every secret it was given — exec.input's secret items, session.create's
// secrets, what a person typed at a password prompt — and replaces each
// occurrence with "***" where output enters the session (deliver), before
// the screen, the observers (console viewers, recordings, transcripts),
// the running command's sink (results, exec.read, notifications) or the
// idle log see it. Like a CI system's log masking it works across read
// boundaries: a stream holds back only a tail that could begin a secret,
// and hands it on when the rest proves it is not one, when the command
// ends, or when the program is found waiting for input.

// maskText replaces a secret in output.
const maskText = "***"

// minSecretLen is the shortest secret masked: masking shorter ones would
// star out ordinary output ("a", "ok"). Such a secret is still typed with
// echo off.
const minSecretLen = 3

// maxSecrets bounds how many secrets a session remembers besides those
// it was created with; the oldest are forgotten first (Session.remember).
// Each secret costs a search of every output chunk.
const maxSecrets = 64

// secretParts splits a secret into what output shows of it: the terminal
// turns a typed "\r" into "\n" and an output "\n" into "\r\n", so each
// line is masked on its own; typed input may also hold a bracketed
// paste's markers or other control bytes the program never prints back,
// which separate parts too.
func secretParts(b []byte) [][]byte {
	b = bytes.ReplaceAll(b, []byte("\x1b[200~"), []byte("\n"))
	b = bytes.ReplaceAll(b, []byte("\x1b[201~"), []byte("\n"))
	var out [][]byte
	for _, line := range bytes.FieldsFunc(b, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		if len(line) >= minSecretLen {
			out = append(out, bytes.Clone(line))
		}
	}
	return out
}

// secretSet is a session's secrets, longest first (so that of two
// secrets starting at one place the longer is masked whole). It is
// replaced, never changed, so a reader may keep the slice it loaded.
type secretSet [][]byte

func (ss secretSet) with(parts [][]byte) secretSet {
	next := slices.Clone(ss)
	for _, p := range parts {
		if !slices.ContainsFunc(next, func(q []byte) bool { return bytes.Equal(p, q) }) {
			next = append(next, p)
		}
	}
	slices.SortStableFunc(next, func(a, b []byte) int { return len(b) - len(a) })
	return next
}

// maskAll masks every whole secret in p (for text that is not a stream:
// a log line). It returns p itself when none occurs.
func (ss secretSet) maskAll(p []byte) []byte {
	out, held := ss.mask(nil, p, false)
	return append(out, held...)
}

// mask masks the secrets in held+p. Unless final, it holds back the
// longest tail that could be the start of a secret; it returns what may
// be handed on now and what is held. out aliases p when nothing changed.
func (ss secretSet) mask(held, p []byte, final bool) (out, hold []byte) {
	if len(ss) == 0 {
		return append(held, p...), nil
	}
	buf := p
	if len(held) > 0 {
		buf = append(slices.Clip(held), p...)
	}
	var b []byte // built only once a secret is found
	start := 0   // buf[:start] is done
	holdAt := -1 // a match that a longer secret may yet extend
	for {
		at, n := ss.next(buf[start:])
		if at < 0 {
			break
		}
		if !final && ss.longerPrefix(buf[start+at:], n) {
			holdAt = start + at
			break
		}
		if b == nil {
			b = make([]byte, 0, len(buf))
		}
		b = append(b, buf[start:start+at]...)
		b = append(b, maskText...)
		start += at + n
	}
	keep := 0
	switch {
	case holdAt >= 0:
		keep = len(buf) - holdAt
	case !final:
		keep = ss.partialTail(buf[start:])
	}
	rest := buf[start : len(buf)-keep]
	if keep > 0 {
		hold = bytes.Clone(buf[len(buf)-keep:])
	}
	if b == nil {
		return rest, hold
	}
	return append(b, rest...), hold
}

// next finds the first secret in p: where it starts and its length, or
// -1.
func (ss secretSet) next(p []byte) (at, n int) {
	at = -1
	for _, s := range ss {
		limit := p
		if at >= 0 {
			limit = p[:min(len(p), at+len(s))]
		}
		if i := bytes.Index(limit, s); i >= 0 && (at < 0 || i < at) {
			at, n = i, len(s)
		}
	}
	return at, n
}

// longerPrefix reports whether p, where a secret of length n matched,
// is all a proper prefix of a longer secret: the longer one may be
// coming, and masks more.
func (ss secretSet) longerPrefix(p []byte, n int) bool {
	for _, s := range ss {
		if len(s) > n && len(p) < len(s) && bytes.HasPrefix(s, p) {
			return true
		}
	}
	return false
}

// partialTail is the length of the longest suffix of p that is a proper
// prefix of a secret.
func (ss secretSet) partialTail(p []byte) int {
	best := 0
	for _, s := range ss {
		lo := max(0, len(p)-(len(s)-1))
		for i := len(p) - 1; i >= lo; i-- {
			j := bytes.LastIndexByte(p[lo:i+1], s[0])
			if j < 0 {
				break
			}
			i = lo + j
			if len(p)-i > best && bytes.HasPrefix(s, p[i:]) {
				best = len(p) - i
			}
		}
	}
	return best
}
