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
	// PendingLimit bounds the bytes kept unparsed: past twice as many,
	// the oldest are dropped down to PendingLimit. 0 means 256 KiB.
	PendingLimit int
	// NewlineCR makes a line feed also return the carriage, as the
	// terminal's ONLCR would have: trl's sessions turn ONLCR off so that
	// commands' output carries bare "\n", and a person looking at such a
	// terminal through trl should still see lines, not a staircase.
	NewlineCR bool
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
	// MainScreen asks for the main screen (its rows, and the cursor it
	// had when the alternate screen went on) even while the alternate
	// screen is on: what a viewer joining during vi must hold underneath
	// it, so that quitting vi shows what was there before.
	MainScreen bool
}

// Screen is a terminal emulator. Its methods are safe for concurrent use.
//
// Write never parses (unless the bytes hold a query a program waits on,
// answered at once): it appends to a pending buffer, so the output path of
// a session pays a copy, not an emulator. The bytes are parsed when the
// screen is read (Snapshot, CursorLine), or by a short-lived goroutine of
// the screen's own after Settle (a command ended). A flood is bounded: past
// 2×PendingLimit unparsed bytes the oldest are dropped, keeping the last
// PendingLimit (Dropped counts them). The rows a flood leaves on the screen
// are its last lines, so what is lost is scrollback older than that tail
// and, rarely, a mode set early in the flood.
type Screen struct {
	// pmu guards the parsed state; mu the pending bytes. pmu is taken
	// first.
	pmu     sync.Mutex
	st      *state // nil until the first byte is parsed
	replies []byte // answers produced while parsing, sent after unlock

	mu      sync.Mutex
	opts    Options
	pending []byte
	tail    [8]byte // the last bytes written, to find a query split across writes
	ntail   int
	busy    bool // the background parser runs
	dropped int64
	wg      sync.WaitGroup
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
	n := len(p)
	if n == 0 {
		return 0, nil
	}
	s.mu.Lock()
	q := s.opts.Reply != nil && hasQuery(s.tail[:s.ntail], p)
	s.keepTail(p)
	lim := s.opts.PendingLimit
	if len(s.pending)+len(p) > 2*lim {
		// Keep the last lim bytes of pending+p.
		if len(p) >= lim {
			s.dropped += int64(len(s.pending) + len(p) - lim)
			s.pending = append(s.pending[:0], p[len(p)-lim:]...)
			p = nil
		} else {
			keep := lim - len(p)
			drop := len(s.pending) - keep
			s.dropped += int64(drop)
			s.pending = s.pending[:copy(s.pending, s.pending[drop:])]
		}
	}
	s.pending = append(s.pending, p...)
	s.mu.Unlock()
	if q {
		s.pmu.Lock()
		s.parse()
		out := s.takeReplies()
		s.pmu.Unlock()
		s.send(out)
	}
	return n, nil
}

// Settle parses what is pending in the background, so an idle screen
// holds a grid rather than a buffer of bytes. A session calls it when a
// command ends.
func (s *Screen) Settle() {
	s.mu.Lock()
	start := len(s.pending) > 0 && !s.busy
	if start {
		s.busy = true
		s.wg.Add(1)
	}
	s.mu.Unlock()
	if start {
		go s.background()
	}
}

// background parses until nothing is pending.
func (s *Screen) background() {
	defer s.wg.Done()
	for {
		s.pmu.Lock()
		s.parse()
		out := s.takeReplies()
		s.pmu.Unlock()
		s.send(out)
		s.mu.Lock()
		if len(s.pending) == 0 {
			s.busy = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
	}
}

// Close waits for the background parser, if one runs. The screen stays
// usable.
func (s *Screen) Close() { s.wg.Wait() }

// Dropped is how many bytes were dropped unparsed because the screen fell
// behind a flood.
func (s *Screen) Dropped() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dropped
}

func (s *Screen) send(out []byte) {
	if len(out) > 0 && s.opts.Reply != nil {
		s.opts.Reply(out)
	}
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
// after unlocking. Callers hold pmu.
func (s *Screen) takeReplies() []byte {
	if len(s.replies) == 0 {
		return nil
	}
	out := append([]byte(nil), s.replies...)
	s.replies = s.replies[:0]
	return out
}

// parse parses what is pending and returns the state. Callers hold pmu,
// not mu; Write goes on appending to a new buffer meanwhile.
func (s *Screen) parse() *state {
	s.mu.Lock()
	take := s.pending
	s.pending = nil
	rows, cols, hist := s.opts.Rows, s.opts.Cols, s.opts.Scrollback
	s.mu.Unlock()
	if s.st == nil {
		if len(take) == 0 {
			return newState(rows, cols, hist, &s.replies)
		}
		s.st = newState(rows, cols, hist, &s.replies)
		s.st.newlineCR = s.opts.NewlineCR
	}
	s.st.feed(take)
	return s.st
}

// idle reports whether no bytes wait to be parsed.
func (s *Screen) idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending) == 0
}

// Snapshot parses what is pending and returns the screen.
func (s *Screen) Snapshot(o SnapshotOptions) Snapshot {
	s.pmu.Lock()
	snap := s.parse().snapshot(o)
	out := s.takeReplies()
	s.pmu.Unlock()
	s.send(out)
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
	s.pmu.Lock()
	defer s.pmu.Unlock()
	st := s.parse()
	s.mu.Lock()
	s.opts.Rows, s.opts.Cols = rows, cols
	s.mu.Unlock()
	if st == s.st && st != nil {
		st.resize(rows, cols)
	}
}

// CursorLine returns the text of the cursor's row up to the cursor: the
// prompt a program waiting for input has printed.
func (s *Screen) CursorLine() string {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	return s.parse().cursorLine()
}

// Modes are the input modes a program set, which decide how keys sent to
// it are encoded: application cursor keys (DECCKM, "ESC O A" for Up
// rather than "ESC [ A"), application keypad, bracketed paste.
type Modes struct {
	AppCursor, AppKeypad, BracketedPaste bool
}

// Modes returns the input modes in force.
func (s *Screen) Modes() Modes {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.st == nil && s.idle() {
		return Modes{}
	}
	st := s.parse()
	return Modes{AppCursor: st.appCursor, AppKeypad: st.appKeypad, BracketedPaste: st.bracketedPaste}
}

// AltScreen reports whether the alternate screen is on.
func (s *Screen) AltScreen() bool {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	return s.parse().alt
}

// LeaveAltScreen returns to the main screen if a program left the
// alternate one on (a TUI killed before it could restore the terminal),
// restoring the cursor it saved, as xterm does for mode 1049, and resets
// the modes such a program may leave behind (scroll region, hidden
// cursor, insert mode, line-drawing charset, colours). It reports
// whether the alternate screen was on: a copy of the terminal elsewhere
// (a browser's) is still on it and must be redrawn.
func (s *Screen) LeaveAltScreen() (left bool) {
	s.pmu.Lock()
	defer s.pmu.Unlock()
	if s.st == nil && s.idle() {
		return false // nothing was ever written: nothing to build
	}
	st := s.parse()
	left = st.alt
	if st.alt {
		st.setAlt(false, true)
		st.cur = st.saved1049
		st.cur.x = min(st.cur.x, st.cols-1)
		st.cur.y = min(st.cur.y, st.rows-1)
	}
	st.resetModes()
	return left
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
