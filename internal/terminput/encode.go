package terminput

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// ItemKind says what an Item holds.
type ItemKind int

const (
	Text  ItemKind = iota // Value is typed as is
	Key                   // Value is a key name: Enter, Up, C-c, M-x…
	Paste                 // Value is pasted (bracketed when the program asked)
	EOF                   // the terminal's end-of-file character; Value unused
)

// Item is one thing to type.
type Item struct {
	Kind  ItemKind
	Value string
}

// Modes are the terminal facts that change the bytes.
type Modes struct {
	AppCursor      bool // DECCKM: cursor keys send ESC O x
	BracketedPaste bool // the program asked for ESC[200~ … ESC[201~
	Erase          byte // VERASE (0 → DEL, 0x7f)
	EOF            byte // VEOF (0 → C-d, 0x04)
}

// ErrUnknownKey is the sentinel of UnknownKeyError.
var ErrUnknownKey = errors.New("unknown key")

// UnknownKeyError names a key Encode does not know.
type UnknownKeyError struct{ Key string }

func (e *UnknownKeyError) Error() string {
	return fmt.Sprintf("unknown key %q; valid keys: %s", e.Key, validKeys)
}

func (e *UnknownKeyError) Unwrap() error { return ErrUnknownKey }

// fixed are the keys whose bytes do not depend on the modes.
var fixed = map[string]string{
	"Enter":    "\r",
	"Tab":      "\t",
	"Escape":   "\x1b",
	"Delete":   "\x1b[3~",
	"Insert":   "\x1b[2~",
	"PageUp":   "\x1b[5~",
	"PageDown": "\x1b[6~",
	"F1":       "\x1bOP",
	"F2":       "\x1bOQ",
	"F3":       "\x1bOR",
	"F4":       "\x1bOS",
	"F5":       "\x1b[15~",
	"F6":       "\x1b[17~",
	"F7":       "\x1b[18~",
	"F8":       "\x1b[19~",
	"F9":       "\x1b[20~",
	"F10":      "\x1b[21~",
	"F11":      "\x1b[23~",
	"F12":      "\x1b[24~",
}

// cursor are the keys that send CSI x normally and SS3 x in application
// cursor mode.
var cursor = map[string]byte{
	"Up": 'A', "Down": 'B', "Right": 'C', "Left": 'D', "Home": 'H', "End": 'F',
}

// lower maps a lower-cased name to its canonical spelling.
var lower = func() map[string]string {
	m := map[string]string{"backspace": "Backspace", "esc": "Escape", "return": "Enter"}
	for k := range fixed {
		m[strings.ToLower(k)] = k
	}
	for k := range cursor {
		m[strings.ToLower(k)] = k
	}
	return m
}()

var validKeys = func() string {
	names := []string{"Backspace"}
	for k := range fixed {
		names = append(names, k)
	}
	for k := range cursor {
		names = append(names, k)
	}
	sort.Strings(names)
	return strings.Join(names, ", ") + ", C-a…C-z, M-<char>"
}()

// Encode appends the bytes of items, in order, to dst.
func Encode(dst []byte, items []Item, m Modes) ([]byte, error) {
	for _, it := range items {
		switch it.Kind {
		case Text:
			dst = append(dst, it.Value...)
		case Key:
			var err error
			if dst, err = appendKey(dst, it.Value, m); err != nil {
				return dst, err
			}
		case Paste:
			dst = appendPaste(dst, it.Value, m.BracketedPaste)
		case EOF:
			eof := m.EOF
			if eof == 0 {
				eof = 0x04
			}
			dst = append(dst, eof)
		default:
			return dst, fmt.Errorf("terminput: unknown item kind %d", it.Kind)
		}
	}
	return dst, nil
}

func appendKey(dst []byte, name string, m Modes) ([]byte, error) {
	canon, ok := lower[strings.ToLower(name)]
	if !ok {
		canon = name
	}
	if s, ok := fixed[canon]; ok {
		return append(dst, s...), nil
	}
	if c, ok := cursor[canon]; ok {
		if m.AppCursor {
			return append(dst, 0x1b, 'O', c), nil
		}
		return append(dst, 0x1b, '[', c), nil
	}
	if canon == "Backspace" {
		erase := m.Erase
		if erase == 0 {
			erase = 0x7f
		}
		return append(dst, erase), nil
	}
	if len(name) == 3 && (name[0] == 'C' || name[0] == 'c') && name[1] == '-' {
		c := name[2] | 0x20 // lower case
		if c >= 'a' && c <= 'z' {
			return append(dst, c-'a'+1), nil
		}
	}
	if len(name) > 2 && (name[0] == 'M' || name[0] == 'm') && name[1] == '-' {
		rest := name[2:]
		if r, size := utf8.DecodeRuneInString(rest); r != utf8.RuneError && size == len(rest) {
			return append(append(dst, 0x1b), rest...), nil
		}
	}
	return dst, &UnknownKeyError{Key: name}
}

const (
	pasteStart = "\x1b[200~"
	pasteEnd   = "\x1b[201~"
)

// appendPaste pastes s as a terminal does: line ends become "\r"; when
// bracketed, an end marker inside the text is dropped so the text cannot
// end the paste early and be taken for typed keys.
func appendPaste(dst []byte, s string, bracketed bool) []byte {
	if bracketed {
		dst = append(dst, pasteStart...)
		s = strings.ReplaceAll(s, pasteEnd, "")
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\r':
			dst = append(dst, '\r')
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case '\n':
			dst = append(dst, '\r')
		default:
			dst = append(dst, c)
		}
	}
	if bracketed {
		dst = append(dst, pasteEnd...)
	}
	return dst
}
