package terminput

// ModeTracker follows the input-related modes a program sets in its
// output. Feed it every output byte in order; sequences split across
// chunks are handled. Not safe for concurrent use.
type ModeTracker struct {
	appCursor bool
	bracketed bool
	alt       bool

	state  uint8
	params [maxParams]byte
	n      int // bytes in params; > maxParams means overflowed
	inter  byte
}

const (
	stGround uint8 = iota
	stEsc
	stCSI
)

// maxParams bounds a CSI's parameter bytes kept; longer ones are not
// mode changes we track and are skipped to their final byte.
const maxParams = 32

// Feed consumes a chunk of the terminal's output.
func (t *ModeTracker) Feed(p []byte) {
	for _, c := range p {
		switch t.state {
		case stGround:
			if c == 0x1b {
				t.state = stEsc
			}
		case stEsc:
			switch c {
			case '[':
				t.state, t.n, t.inter = stCSI, 0, 0
			case 'c': // RIS, full reset
				t.appCursor, t.bracketed, t.alt = false, false, false
				t.state = stGround
			case 0x1b:
			default:
				t.state = stGround
			}
		case stCSI:
			switch {
			case c == 0x1b:
				t.state = stEsc
			case c == 0x18 || c == 0x1a: // CAN, SUB abort
				t.state = stGround
			case c >= 0x30 && c <= 0x3f:
				if t.n < maxParams {
					t.params[t.n] = c
				}
				t.n++
			case c >= 0x20 && c <= 0x2f:
				t.inter = c
			case c >= 0x40 && c <= 0x7e:
				t.final(c)
				t.state = stGround
			}
			// C0 controls inside a CSI are executed, not part of it.
		}
	}
}

func (t *ModeTracker) final(c byte) {
	if c == 'p' && t.inter == '!' && t.n == 0 { // DECSTR soft reset
		t.appCursor = false
		return
	}
	if (c != 'h' && c != 'l') || t.inter != 0 || t.n == 0 || t.n > maxParams || t.params[0] != '?' {
		return
	}
	on := c == 'h'
	v, have := 0, false
	apply := func() {
		if !have {
			return
		}
		switch v {
		case 1:
			t.appCursor = on
		case 2004:
			t.bracketed = on
		case 47, 1047, 1049:
			t.alt = on
		}
	}
	for _, b := range t.params[1:t.n] {
		switch {
		case b >= '0' && b <= '9':
			if v < 100000 {
				v = v*10 + int(b-'0')
			}
			have = true
		case b == ';':
			apply()
			v, have = 0, false
		default:
			return // not a plain mode list
		}
	}
	apply()
}

// Modes reports application cursor keys and bracketed paste.
func (t *ModeTracker) Modes() (appCursor, bracketedPaste bool) {
	return t.appCursor, t.bracketed
}

// AltScreen reports whether the alternate screen is on.
func (t *ModeTracker) AltScreen() bool { return t.alt }

// Reset forgets all modes (a new command, or the terminal was reset).
func (t *ModeTracker) Reset() { *t = ModeTracker{} }
