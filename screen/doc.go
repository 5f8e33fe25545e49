// Package screen owns the terminal emulator behind a session's screen
// (SPEC §9): a grid of cells with scrollback, fed with the bytes a session's
// programs write to the terminal, read as text (or text with SGR
// renditions) the way a person would see it.
//
// # Why a model of our own
//
// The escape-sequence parser is a maintained library,
// github.com/charmbracelet/x/ansi; the screen model on top of it is ours.
// The choice was made by measurement: the corpus in testdata/screens holds
// real programs' PTY output (vim, less, top -b and top, a Python REPL, an
// apt-style progress log, CJK and emoji, a resize) with the screen tmux
// shows for the same bytes, and each candidate's visible text was compared
// with tmux's (testdata/screens/compare, a module of its own):
//
//	emulator                          cases equal to tmux (of 13)
//	this package (x/ansi parser)      13
//	hinshun/vt10x                     8   bash, vim, wide: wide characters; no re-wrap on resize
//	vito/midterm v0.2.4               7   the same, and top's resize
//	tonistiigi/vt100                  4   also top, top -b, vim's exit
//
// The libraries place a wide character in one cell and the next character
// right after it, so CJK and emoji lines are misdrawn and everything after
// them on the row shifts; none re-wraps wrapped lines when the width
// changes, as tmux does (reflow.go). The golden test (TestGolden) holds this package
// to exact equality with tmux on every case, including the cursor,
// alt-screen flag, title and scrollback.
//
// # Cost
//
// Write does not parse: it appends to a bounded pending buffer (a flood
// keeps its last PendingLimit bytes) and the bytes are parsed when the
// screen is read, after Settle in the background, or at once when they
// hold a query (cursor position, device attributes) that a program waits
// on, so the answer goes out through Options.Reply at once. A session's
// output path therefore pays a copy, never an emulator.
// Nothing is allocated before the first byte; an 80×24 grid takes about
// 30 KiB (16-byte cells, blank rows unallocated, scrollback rows trimmed).
package screen
