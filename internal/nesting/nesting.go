// Package nesting bounds what trl hands to the shell parser
// (mvdan.cc/sh): the parser recurses once per level of nesting, so a line
// of a million nested `$(` overflowed the daemon's stack and crashed it
// (600,000 nested `{` or `${x:-` did too, and a million `!` in `$((…))`, and
// half a million `|true`), and fifty thousand took gigabytes. Nearly any
// operator can nest, so the bound is the line's length, with a tighter
// one on what opens blocks: a line that may nest too deep is not parsed.
package nesting

import "strings"

// Max is how many openers a line may hold to be parsed: far more than
// any line a person writes nests, and far fewer levels than overflow the
// stack.
const Max = 10_000

// Openers counts what may open a nested construct in src: ( { [ and
// backquotes, and the words if, case, for, while, until and select. It
// counts them all, nested or not, quoted or not, and never subtracts what
// closes them: nothing a line holds can make it look shallower than it
// is (a quoted ")" would, to a count of depth).
func Openers(src string) int {
	n := strings.Count(src, "(") + strings.Count(src, "{") + strings.Count(src, "[") + strings.Count(src, "`")
	for _, w := range []string{"if", "case", "for", "while", "until", "select"} {
		n += words(src, w)
	}
	return n
}

// MaxBytes is the longest text parsed: no more levels than bytes.
const MaxBytes = 64 << 10

// TooDeep reports whether src is longer than MaxBytes or holds more than
// Max openers.
func TooDeep(src string) bool { return len(src) > MaxBytes || Openers(src) > Max }

// words counts w in src where it stands as a word of its own.
func words(src, w string) int {
	n := 0
	for i := strings.Index(src, w); i >= 0; {
		end := i + len(w)
		if (i == 0 || !wordByte(src[i-1])) && (end == len(src) || !wordByte(src[end])) {
			n++
		}
		next := strings.Index(src[end:], w)
		if next < 0 {
			break
		}
		i = end + next
	}
	return n
}

func wordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
