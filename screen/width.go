package screen

import (
	"unicode"

	"github.com/mattn/go-runewidth"
)

// widths measures as glibc's wcwidth does, which is what tmux and most
// terminals use: East Asian ambiguous characters are narrow.
var widths = &runewidth.Condition{EastAsianWidth: false, StrictEmojiNeutral: true}

// runeWidth is the number of columns r takes: 0 for a combining mark or a
// format character (joined to the character before), 1 or 2.
func runeWidth(r rune) int {
	switch {
	case r < 0x7f:
		return 1
	case r < 0xa0:
		return 0
	case r == 0xad:
		return 1
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	}
	return widths.RuneWidth(r)
}
