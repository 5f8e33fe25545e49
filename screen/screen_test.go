package screen

import (
	"bytes"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

func text(s *Screen) []string { return s.Snapshot(SnapshotOptions{}).Lines }

func TestQueriesAnsweredAtOnce(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"cursor position", "abc\r\n12\x1b[6n", "\x1b[2;3R"},
		{"status", "\x1b[5n", "\x1b[0n"},
		{"primary DA", "\x1b[c", "\x1b[?1;2c"},
		{"secondary DA", "\x1b[>c", "\x1b[>84;0;0c"},
		{"background colour", "\x1b]11;?\x07", "\x1b]11;rgb:0000/0000/0000\x1b\\"},
		{"split across writes", "\x1b[", "6n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got []byte
			s := New(Options{Reply: func(p []byte) { mu.Lock(); got = append(got, p...); mu.Unlock() }})
			if c.name == "split across writes" {
				_, _ = s.Write([]byte(c.in))
				_, _ = s.Write([]byte(c.want))
				c.want = "\x1b[1;1R"
			} else {
				_, _ = s.Write([]byte(c.in))
			}
			// No read of the screen: the answer must already be out.
			mu.Lock()
			defer mu.Unlock()
			if string(got) != c.want {
				t.Errorf("reply %q, want %q", got, c.want)
			}
		})
	}
}

func TestWriteIsLazy(t *testing.T) {
	s := New(Options{})
	_, _ = s.Write([]byte("hello"))
	s.pmu.Lock()
	parsed := s.st != nil
	s.pmu.Unlock()
	if parsed {
		t.Fatal("Write parsed at once without a query")
	}
	if got := text(s)[0]; got != "hello" {
		t.Fatalf("row 0 %q", got)
	}
}

func TestPendingLimitBounds(t *testing.T) {
	s := New(Options{PendingLimit: 1024})
	chunk := bytes.Repeat([]byte("x"), 100)
	for range 1000 {
		_, _ = s.Write(chunk)
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		if n > 2*1024 {
			t.Fatalf("pending grew to %d past 2x the 1024 limit", n)
		}
	}
	if s.Dropped() == 0 {
		t.Fatal("nothing dropped from 100 KB written with a 1 KiB limit")
	}
	// Whatever was dropped, the screen is whole and ends with the last
	// bytes written.
	lines := text(s)
	if len(lines) != 24 || lines[0] != strings.Repeat("x", 80) {
		t.Fatalf("screen after a flood: %q", lines)
	}
}

func TestSettleParsesInTheBackground(t *testing.T) {
	s := New(Options{})
	_, _ = s.Write([]byte("done\r\n"))
	s.Settle()
	s.Close()
	s.mu.Lock()
	n := len(s.pending)
	s.mu.Unlock()
	if n != 0 {
		t.Fatalf("%d bytes still pending after Settle", n)
	}
	if got := text(s)[0]; got != "done" {
		t.Fatalf("row 0 %q", got)
	}
}

func TestCursorLine(t *testing.T) {
	s := New(Options{})
	_, _ = s.Write([]byte("line one\r\n\x1b[31mContinue? [Y/n] \x1b[0m"))
	if got := s.CursorLine(); got != "Continue? [Y/n] " {
		t.Fatalf("CursorLine %q", got)
	}
	_, _ = s.Write([]byte("\r\n>>> 1+1\x1b[3D"))
	if got := s.CursorLine(); got != ">>> " {
		t.Fatalf("CursorLine after a move left %q", got)
	}
}

func TestLeaveAltScreen(t *testing.T) {
	s := New(Options{Rows: 5, Cols: 20})
	_, _ = s.Write([]byte("$ vi\r\n\x1b[?1049h\x1b[H\x1b[2Jfull screen\x1b[5;1r\x1b[?25l"))
	if !s.AltScreen() {
		t.Fatal("not in the alternate screen")
	}
	s.LeaveAltScreen()
	snap := s.Snapshot(SnapshotOptions{})
	if snap.AltScreen || snap.Lines[0] != "$ vi" || snap.Cursor.Row != 1 || !snap.Cursor.Visible {
		t.Fatalf("after LeaveAltScreen: %+v", snap)
	}
	_, _ = s.Write([]byte("next\r\n"))
	if got := text(s)[1]; got != "next" {
		t.Fatalf("row 1 %q", got)
	}
}

func TestScrollbackBounded(t *testing.T) {
	s := New(Options{Rows: 3, Cols: 10, Scrollback: 5})
	for i := range 50 {
		_, _ = s.Write([]byte(strings.Repeat(string(rune('a'+i%26)), 3) + "\r\n"))
	}
	snap := s.Snapshot(SnapshotOptions{ScrollbackLines: 100})
	if len(snap.Lines) > 5+3 || len(snap.Lines) < 3+1 {
		t.Fatalf("%d lines with 5 of scrollback", len(snap.Lines))
	}
	if got := snap.Lines[len(snap.Lines)-2]; got != "xxx" {
		t.Fatalf("last line %q", got)
	}
}

func TestResizeKeepsCursorRow(t *testing.T) {
	s := New(Options{Rows: 10, Cols: 20})
	for i := range 9 {
		_, _ = s.Write([]byte{byte('0' + i), '\r', '\n'})
	}
	_, _ = s.Write([]byte("$ "))
	s.Resize(5, 10)
	snap := s.Snapshot(SnapshotOptions{})
	if snap.Rows != 5 || snap.Cols != 10 || snap.Lines[4] != "$" || snap.Cursor != (Cursor{Row: 4, Col: 2, Visible: true}) {
		t.Fatalf("after shrinking: %+v", snap)
	}
	s.Resize(10, 20)
	snap = s.Snapshot(SnapshotOptions{})
	if snap.Lines[0] != "0" || snap.Lines[9] != "$" {
		t.Fatalf("rows not brought back from the scrollback: %q", snap.Lines)
	}
}

func TestAnsiFormat(t *testing.T) {
	s := New(Options{Rows: 2, Cols: 20})
	_, _ = s.Write([]byte("\x1b[1;31mred\x1b[0m plain \x1b[38;5;200mx"))
	got := s.Snapshot(SnapshotOptions{Format: "ansi"}).Lines[0]
	want := "\x1b[0;1;31mred\x1b[0m plain \x1b[0;38;5;200mx\x1b[0m"
	if got != want {
		t.Fatalf("ansi line %q, want %q", got, want)
	}
}

func TestTitle(t *testing.T) {
	s := New(Options{})
	_, _ = s.Write([]byte("\x1b]2;my title\x07"))
	if got := s.Snapshot(SnapshotOptions{}).Title; got != "my title" {
		t.Fatalf("title %q", got)
	}
}

// FuzzWrite: no byte sequence panics, and the snapshot always has the
// screen's shape.
func FuzzWrite(f *testing.F) {
	for _, seed := range []string{"\x1b[6n", "日本\x1b[1;80H語", "\x1b[?1049h\x1b[5;3r\x1b[M\x1b[2L", "\xf8\xc3a\x9b1m", "\x1b[99999;99999H\x1b[99999@x"} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		s := New(Options{Rows: 4, Cols: 7, Scrollback: 3, Reply: func([]byte) {}})
		_, _ = s.Write(p)
		s.Resize(3, 5)
		_, _ = s.Write(p)
		snap := s.Snapshot(SnapshotOptions{ScrollbackLines: 10, Format: "ansi"})
		if snap.Rows != 3 || len(snap.Lines) < 3 || snap.Cursor.Row >= 3 || snap.Cursor.Col > 5 {
			t.Fatalf("bad shape %+v", snap)
		}
		_ = s.CursorLine()
	})
}

// TestIdleMemory: a session that never wrote a byte costs next to
// nothing; one that drew a full 80×24 screen stays within 64 KiB.
func TestIdleMemory(t *testing.T) {
	measure := func(fill bool) float64 {
		const n = 200
		keep := make([]*Screen, n)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = New(Options{Rows: 24, Cols: 80})
			if fill {
				for range 30 {
					_, _ = keep[i].Write([]byte("\x1b[32m" + strings.Repeat("0123456789", 8) + "\x1b[0m\r\n"))
				}
				_ = keep[i].Snapshot(SnapshotOptions{})
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		runtime.KeepAlive(keep)
		return (float64(after.HeapAlloc) - float64(before.HeapAlloc)) / n
	}
	if idle := measure(false); idle > 1024 {
		t.Errorf("an unused screen holds %.0f bytes", idle)
	}
	if full := measure(true); full > 64<<10 {
		t.Errorf("a full 80x24 screen holds %.0f bytes, over 64 KiB", full)
	} else {
		t.Logf("full 80x24 screen with 6 lines of scrollback: %.0f bytes", full)
	}
}

// TestSnapshotLatency: the p50 of an 80×24 snapshot of a busy screen is
// within 200 µs (generous for a shared machine; typical is far less).
func TestSnapshotLatency(t *testing.T) {
	data, w := loadCase(t, "top")
	s := replay(data, w.Meta, 1<<20)
	var ds []time.Duration
	for range 200 {
		_, _ = s.Write([]byte("\x1b[H\x1b[7mtick\x1b[0m"))
		t0 := time.Now()
		_ = s.Snapshot(SnapshotOptions{})
		ds = append(ds, time.Since(t0))
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	limit := 200 * time.Microsecond
	if raceOn {
		limit *= 10
	}
	if p50 := ds[len(ds)/2]; p50 > limit {
		t.Errorf("snapshot p50 %v > 200µs", p50)
	} else {
		t.Logf("snapshot p50 %v", p50)
	}
}

func BenchmarkSnapshot80x24(b *testing.B) {
	data, w := loadCase(b, "top")
	s := replay(data, w.Meta, 1<<20)
	for b.Loop() {
		_, _ = s.Write([]byte("\x1b[H\x1b[7mtick\x1b[0m"))
		_ = s.Snapshot(SnapshotOptions{})
	}
}

func BenchmarkParse(b *testing.B) {
	data, _ := loadCase(b, "top-batch")
	s := New(Options{})
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		_, _ = s.Write(data)
		s.pmu.Lock()
		s.parse()
		s.pmu.Unlock()
	}
}

// TestPlainScrollbackIsCompact: plain text that scrolls by is kept as
// text, not cells, so a full scrollback of it costs about its length.
func TestPlainScrollbackIsCompact(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := New(Options{Rows: 24, Cols: 80, Scrollback: 1000})
	for i := range 1100 {
		_, _ = s.Write([]byte(strings.Repeat(string(rune('a'+i%26)), 60) + "\r\n"))
	}
	snap := s.Snapshot(SnapshotOptions{ScrollbackLines: 1000})
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(s)
	if got := float64(after.HeapAlloc) - float64(before.HeapAlloc); got > 200<<10 {
		t.Errorf("1,000 lines of 60 characters of scrollback hold %.0f bytes", got)
	}
	if len(snap.Lines) != 1024 || snap.Lines[0] != strings.Repeat(string(rune('a'+77%26)), 60) {
		t.Fatalf("%d lines, first %q", len(snap.Lines), snap.Lines[0])
	}
	// Rows brought back from the scrollback by a resize are cells again.
	s.Resize(30, 80)
	_, _ = s.Write([]byte("\x1b[1;3Hxy"))
	// Six rows come back: the first is line 1071.
	f := string(rune('a' + 1071%26))
	if got := s.Snapshot(SnapshotOptions{}).Lines[0]; got != f+f+"xy"+strings.Repeat(f, 56) {
		t.Fatalf("row 0 after a resize and an edit: %q", got)
	}
}

// TestCombiningMarksBounded: a row redrawn over and over with combining
// marks keeps only the marks still on screen.
func TestCombiningMarksBounded(t *testing.T) {
	s := New(Options{Rows: 2, Cols: 10})
	for range 10000 {
		_, _ = s.Write([]byte("\re\u0301a\u0300"))
	}
	if got := text(s)[0]; got != "e\u0301a\u0300" {
		t.Fatalf("row 0 %q", got)
	}
	s.pmu.Lock()
	n := len(s.st.main.lines[0].comb)
	s.pmu.Unlock()
	if n > 2*10+8 {
		t.Fatalf("%d combining entries kept for a 10-column row", n)
	}
}

func TestModes(t *testing.T) {
	s := New(Options{})
	if s.Modes() != (Modes{}) {
		t.Fatalf("modes of a fresh screen: %+v", s.Modes())
	}
	_, _ = s.Write([]byte("\x1b[?1h\x1b=\x1b[?2004h"))
	if got := s.Modes(); got != (Modes{AppCursor: true, AppKeypad: true, BracketedPaste: true}) {
		t.Fatalf("modes %+v", got)
	}
	_, _ = s.Write([]byte("\x1b[?1l\x1b>\x1b[?2004l"))
	if got := s.Modes(); got != (Modes{}) {
		t.Fatalf("modes after reset %+v", got)
	}
}
