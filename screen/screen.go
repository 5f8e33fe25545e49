package screen

import (
	"sync"

	"github.com/charmbracelet/x/ansi"
)

// Options configure a Screen. The zero value is an 80×24 screen with 1,000
// lines of scrollback, no replies and a 256 KiB pending buffer.
type Options struct {
	Rows, Cols int
	// Scrollback is how many lines scrolled off the top are kept. 0 means
	// 1,000; negative means none.
	Scrollback int
	// Reply receives the answers to terminal queries (cursor position,
	// device attributes, status). It is called from Write, outside the
	// screen's lock, and must not block for long. Nil drops the answers.
	Reply func([]byte)
	// PendingLimit bounds the bytes written but not yet parsed; past it
	// Write parses them at once. 0 means 256 KiB.
	PendingLimit int
}

// Cursor is where the next character goes (0-based, Row counted from the
// screen's top row, not the scrollback) and whether the program shows it.
// Col equals the width when the last column was just written and the next
// character will wrap, as tmux reports it.
type Cursor struct {
	Row     int  `json:"row"`
	Col     int  `json:"col"`
	Visible bool `json:"visible"`
}

// Snapshot is the screen as a person sees it. Lines holds the scrollback
// asked for, oldest first, then exactly Rows rows.
type Snapshot struct {
	Rows      int      `json:"rows"`
	Cols      int      `json:"cols"`
	Lines     []string `json:"lines"`
	Cursor    Cursor   `json:"cursor"`
	AltScreen bool     `json:"alt_screen"`
	Title     string   `json:"title"`
}

// SnapshotOptions choose what a Snapshot holds. ScrollbackLines (0: none)
// lines of history come before the screen's rows (never in the alternate
// screen, which has no history). Format is "text" (the default: trailing
// blanks trimmed) or "ansi" (each line carries its SGR renditions).
type SnapshotOptions struct {
	ScrollbackLines int
	Format          string
}

// Screen is a terminal emulator. Its methods are safe for concurrent use.
// Write only appends to a bounded pending buffer; the bytes are parsed when
// the screen is read (Snapshot, CursorLine), when the buffer is full, or at
// once when they hold a query a program waits for an answer to.
type Screen struct {
	mu      sync.Mutex
	opts    Options
	pending []byte
	tail    [8]byte // the last bytes written, to find a query split across writes
	ntail   int
	st      *state // nil until the first byte is parsed
	replies []byte // answers produced while parsing, sent after unlock
}

// New returns a screen. Nothing but the options is allocated until the
// first byte arrives, so an idle session's screen costs next to nothing.
func New(o Options) *Screen {
	if o.Rows <= 0 {
		o.Rows = 24
	}
	if o.Cols <= 0 {
		o.Cols = 80
	}
	if o.Scrollback == 0 {
		o.Scrollback = 1000
	} else if o.Scrollback < 0 {
		o.Scrollback = 0
	}
	if o.PendingLimit <= 0 {
		o.PendingLimit = 256 << 10
	}
	return &Screen{opts: o}
}

// Write feeds terminal output to the screen. It never fails.
func (s *Screen) Write(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	s.mu.Lock()
	q := s.opts.Reply != nil && hasQuery(s.tail[:s.ntail], p)
	s.keepTail(p)
	s.pending = append(s.pending, p...)
	var out []byte
	if q || len(s.pending) >= s.opts.PendingLimit {
		s.flush()
		out = s.takeReplies()
	}
	s.mu.Unlock()
	if len(out) > 0 {
		s.opts.Reply(out)
	}
	return len(p), nil
}

func (s *Screen) keepTail(p []byte) {
	if len(p) >= len(s.tail) {
		s.ntail = copy(s.tail[:], p[len(p)-len(s.tail):])
		return
	}
	keep := min(s.ntail, len(s.tail)-len(p))
	copy(s.tail[:], s.tail[s.ntail-keep:s.ntail])
	s.ntail = keep + copy(s.tail[keep:], p)
}

// takeReplies hands the queued answers to the caller, who sends them
// after unlocking.
func (s *Screen) takeReplies() []byte {
	if len(s.replies) == 0 || s.opts.Reply == nil {
		s.replies = s.replies[:0]
		return nil
	}
	out := append([]byte(nil), s.replies...)
	s.replies = s.replies[:0]
	return out
}

// flush parses the pending bytes. Callers hold mu.
func (s *Screen) flush() {
	if len(s.pending) == 0 {
		return
	}
	if s.st == nil {
		s.st = newState(s.opts.Rows, s.opts.Cols, s.opts.Scrollback, &s.replies)
	}
	s.st.feed(s.pending)
	if cap(s.pending) > 4<<10 {
		s.pending = nil // do not keep a burst's buffer while idle
	} else {
		s.pending = s.pending[:0]
	}
}

// sync parses what is pending and sends the answers it produced.
func (s *Screen) sync() *state {
	s.flush()
	if s.st == nil {
		s.st = newState(s.opts.Rows, s.opts.Cols, s.opts.Scrollback, &s.replies)
	}
	return s.st
}

// Snapshot parses what is pending and returns the screen.
func (s *Screen) Snapshot(o SnapshotOptions) Snapshot {
	s.mu.Lock()
	st := s.sync()
	snap := st.snapshot(o)
	out := s.takeReplies()
	s.mu.Unlock()
	if len(out) > 0 {
		s.opts.Reply(out)
	}
	return snap
}

// Size returns the screen's rows and columns.
func (s *Screen) Size() (rows, cols int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opts.Rows, s.opts.Cols
}

// Resize changes the screen's size. Rows that no longer fit go to the
// scrollback (those below the cursor are dropped first); columns that no
// longer fit are cut. Bytes written before the call are parsed at the old
// size.
func (s *Screen) Resize(rows, cols int) {
	if rows <= 0 || cols <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.opts.Rows, s.opts.Cols = rows, cols
	if len(s.pending) > 0 {
		s.flush()
	}
	if s.st != nil {
		s.st.resize(rows, cols)
	}
}

// CursorLine returns the text of the cursor's row up to the cursor: the
// prompt a program waiting for input has printed.
func (s *Screen) CursorLine() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 && s.st == nil {
		return ""
	}
	return s.sync().cursorLine()
}

// AltScreen reports whether the alternate screen is on.
func (s *Screen) AltScreen() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 && s.st == nil {
		return false
	}
	return s.sync().alt
}

// LeaveAltScreen returns to the main screen if a program left the
// alternate one on (a TUI killed before it could restore the terminal),
// restoring the cursor it saved, as xterm does for mode 1049.
func (s *Screen) LeaveAltScreen() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) == 0 && s.st == nil {
		return
	}
	st := s.sync()
	if st.alt {
		st.setAlt(false, true)
	}
	st.resetModes()
}

// parser returns a parser with small buffers: the library's default keeps
// 64 KiB for OSC/DCS data, more than a whole idle session may use.
func newParser(h ansi.Handler) *ansi.Parser {
	p := new(ansi.Parser)
	p.SetParamsSize(32)
	p.SetDataSize(1024)
	p.SetHandler(h)
	return p
}
