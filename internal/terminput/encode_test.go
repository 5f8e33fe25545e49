package terminput

import (
	"errors"
	"strings"
	"testing"
)

func TestEncode(t *testing.T) {
	app := Modes{AppCursor: true}
	tests := []struct {
		name  string
		items []Item
		m     Modes
		want  string
	}{
		{"text as is", []Item{{Text, "print(1+1)\n"}}, Modes{}, "print(1+1)\n"},
		{"enter is CR", []Item{{Text, "y"}, {Key, "Enter"}}, Modes{}, "y\r"},
		{"named keys", []Item{{Key, "Tab"}, {Key, "Escape"}, {Key, "Delete"}, {Key, "PageUp"}, {Key, "PageDown"}}, Modes{}, "\t\x1b\x1b[3~\x1b[5~\x1b[6~"},
		{"cursor normal", []Item{{Key, "Up"}, {Key, "Down"}, {Key, "Right"}, {Key, "Left"}, {Key, "Home"}, {Key, "End"}}, Modes{}, "\x1b[A\x1b[B\x1b[C\x1b[D\x1b[H\x1b[F"},
		{"cursor application", []Item{{Key, "Up"}, {Key, "Down"}, {Key, "Right"}, {Key, "Left"}, {Key, "Home"}, {Key, "End"}}, app, "\x1bOA\x1bOB\x1bOC\x1bOD\x1bOH\x1bOF"},
		{"function keys", []Item{{Key, "F1"}, {Key, "F4"}, {Key, "F5"}, {Key, "F12"}}, Modes{}, "\x1bOP\x1bOS\x1b[15~\x1b[24~"},
		{"control", []Item{{Key, "C-a"}, {Key, "C-c"}, {Key, "C-z"}, {Key, "C-D"}}, Modes{}, "\x01\x03\x1a\x04"},
		{"meta", []Item{{Key, "M-x"}, {Key, "M-é"}}, Modes{}, "\x1bx\x1bé"},
		{"backspace default", []Item{{Key, "Backspace"}}, Modes{}, "\x7f"},
		{"backspace erase", []Item{{Key, "Backspace"}}, Modes{Erase: 0x08}, "\x08"},
		{"case-insensitive name", []Item{{Key, "enter"}, {Key, "pageup"}}, Modes{}, "\r\x1b[5~"},
		{"eof default", []Item{{EOF, ""}}, Modes{}, "\x04"},
		{"eof from termios", []Item{{EOF, ""}}, Modes{EOF: 0x1a}, "\x1a"},
		{"paste plain", []Item{{Paste, "a\nb\r\nc"}}, Modes{}, "a\rb\rc"},
		{"paste bracketed", []Item{{Paste, "x\ny"}}, Modes{BracketedPaste: true}, "\x1b[200~x\ry\x1b[201~"},
		{"paste cannot end early", []Item{{Paste, "a\x1b[201~rm -rf /\n"}}, Modes{BracketedPaste: true}, "\x1b[200~arm -rf /\r\x1b[201~"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Encode([]byte("<"), tc.items, tc.m)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "<"+tc.want {
				t.Fatalf("got %q, want %q", got, "<"+tc.want)
			}
		})
	}
}

func TestEncodeUnknownKey(t *testing.T) {
	for _, k := range []string{"Foo", "C-1", "C-", "M-", "M-ab", "F13", ""} {
		_, err := Encode(nil, []Item{{Key, k}}, Modes{})
		var uk *UnknownKeyError
		if !errors.As(err, &uk) || uk.Key != k || !errors.Is(err, ErrUnknownKey) {
			t.Fatalf("key %q: err = %v, want UnknownKeyError", k, err)
		}
		if !strings.Contains(err.Error(), "PageDown") || !strings.Contains(err.Error(), "C-a") {
			t.Fatalf("message does not list valid keys: %v", err)
		}
	}
}
