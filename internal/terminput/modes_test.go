package terminput

import "testing"

type modeState struct{ app, paste, alt bool }

func state(t *ModeTracker) modeState {
	a, p := t.Modes()
	return modeState{a, p, t.AltScreen()}
}

func TestModeTracker(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want modeState
	}{
		{"nothing", "hello\r\n", modeState{}},
		{"app cursor on", "\x1b[?1h", modeState{app: true}},
		{"app cursor off", "\x1b[?1h\x1b[?1l", modeState{}},
		{"bracketed paste", "\x1b[?2004h", modeState{paste: true}},
		{"alt 1049", "\x1b[?1049h", modeState{alt: true}},
		{"alt 47 and back", "\x1b[?47h\x1b[?47l", modeState{}},
		{"alt 1047", "\x1b[?1047h", modeState{alt: true}},
		{"several in one", "\x1b[?1049;1;2004h", modeState{true, true, true}},
		{"vim start", "\x1b[?1049h\x1b[22;0;0t\x1b[>4;2m\x1b[?1h\x1b=\x1b[?2004h", modeState{true, true, true}},
		{"not private", "\x1b[1h\x1b[4h", modeState{}},
		{"other final", "\x1b[?1049$p", modeState{}},
		{"RIS resets", "\x1b[?1049;1;2004h\x1bc", modeState{}},
		{"DECSTR resets cursor keys", "\x1b[?1h\x1b[!p", modeState{}},
		{"CAN aborts", "\x1b[?10\x1849h", modeState{}},
		{"ESC restarts", "\x1b[?1\x1b[?2004h", modeState{paste: true}},
		{"overlong params ignored", "\x1b[?1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1049h", modeState{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Whole, and split at every byte boundary.
			for cut := 0; cut <= len(tc.out); cut++ {
				var m ModeTracker
				m.Feed([]byte(tc.out[:cut]))
				m.Feed([]byte(tc.out[cut:]))
				if got := state(&m); got != tc.want {
					t.Fatalf("cut %d: got %+v, want %+v", cut, got, tc.want)
				}
			}
			var m ModeTracker
			for i := 0; i < len(tc.out); i++ {
				m.Feed([]byte{tc.out[i]})
			}
			if got := state(&m); got != tc.want {
				t.Fatalf("byte by byte: got %+v, want %+v", got, tc.want)
			}
			m.Reset()
			if got := state(&m); got != (modeState{}) {
				t.Fatalf("after Reset: %+v", got)
			}
		})
	}
}

// FuzzModeTracker checks that chunking never changes the result and that
// no input panics.
func FuzzModeTracker(f *testing.F) {
	f.Add([]byte("\x1b[?1049;1h\x1b[?2004h"), 3)
	f.Add([]byte("\x1b[?47h\x1bc"), 1)
	f.Fuzz(func(t *testing.T, out []byte, cut int) {
		var whole, split ModeTracker
		whole.Feed(out)
		if cut < 0 {
			cut = -cut
		}
		if len(out) > 0 {
			cut %= len(out) + 1
		} else {
			cut = 0
		}
		split.Feed(out[:cut])
		split.Feed(out[cut:])
		if state(&whole) != state(&split) {
			t.Fatalf("split at %d changes the modes", cut)
		}
	})
}
