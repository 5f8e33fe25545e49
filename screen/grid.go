package screen

// cell is one column of one row. A wide character occupies its own cell
// (w == 2) and the next one, a continuation cell (r == contRune). A cell
// never written, or erased, has r == 0 and reads as a blank.
// Its fields are laid out to take 16 bytes: a grid is most of a screen's
// memory.
type cell struct {
	r      rune
	fg, bg uint32
	fl     uint8
	w      uint8
	cm     uint16 // 1+index into line.comb of combining marks, 0 if none
}

// attr returns the cell's rendition.
func (c *cell) attr() attr { return attr{fg: c.fg, bg: c.bg, fl: c.fl} }

// styled returns a cell holding r with the rendition a.
func styled(r rune, w uint8, a attr) cell {
	return cell{r: r, w: w, fg: a.fg, bg: a.bg, fl: a.fl}
}

// attr is a cell's rendition. Colours are 0 for the default, 1<<24|n for
// palette colour n, 2<<24|rgb for a direct colour.
type attr struct {
	fg, bg uint32
	fl     uint8
}

const (
	flBold uint8 = 1 << iota
	flDim
	flItalic
	flUnderline
	flBlink
	flReverse
	flHidden
	flStrike
)

// line is one row. cells is nil for a row never written (all blank), and
// may be shorter than the screen is wide: missing cells are blanks.
// wrapped says the row continues on the next one (autowrap happened).
type line struct {
	cells   []cell
	comb    []string
	wrapped bool
	// plain holds a scrollback row that is plain text (no renditions,
	// combining marks or wide characters) as UTF-8 instead of cells: a
	// sixteenth of the memory for most of what scrolls by.
	plain string
}

// grow makes the row at least n cells long. A new array gets room for
// width cells, so a row written a character at a time is allocated once.
func (l *line) grow(n, width int) {
	if len(l.cells) >= n {
		return
	}
	if cap(l.cells) >= n {
		l.cells = l.cells[:n]
		return
	}
	c := make([]cell, n, max(n, width))
	copy(c, l.cells)
	l.cells = c
}

// blank is what an erase leaves: a space with the pen's background (the
// rest of the pen is not kept, as in xterm and tmux).
func blank(a attr) cell {
	return cell{bg: a.bg}
}

// contRune marks the second cell of a wide character.
const contRune rune = -1

// split blanks what is left of a wide character when the cell at column
// i is about to change: its head if i is the continuation, its
// continuation if i is the head.
func (l *line) split(i int) {
	if i < 0 || i >= len(l.cells) {
		return
	}
	switch {
	case l.cells[i].r == contRune && i > 0:
		l.cells[i-1] = cell{bg: l.cells[i-1].bg}
	case l.cells[i].w == 2 && i+1 < len(l.cells):
		l.cells[i+1] = cell{bg: l.cells[i+1].bg}
	}
}

// clear erases columns [from, to) with the pen's background.
func (l *line) clear(from, to int, a attr) {
	from = max(from, 0)
	if from >= to {
		return
	}
	l.split(from)
	l.split(to - 1)
	b := blank(a)
	if b == (cell{}) {
		if from >= len(l.cells) {
			return
		}
		if to >= len(l.cells) {
			l.cells = l.cells[:from]
			return
		}
	}
	l.grow(to, to)
	for i := from; i < to; i++ {
		l.cells[i] = b
	}
}

// trimmed returns the row's cells without trailing default blanks.
func (l *line) trimmed() []cell {
	n := len(l.cells)
	for n > 0 && l.cells[n-1] == (cell{}) {
		n--
	}
	return l.cells[:n]
}

// grid is one screen buffer (the main or the alternate one).
type grid struct {
	lines []line // rows, top first
}

func newGrid(rows int) grid {
	return grid{lines: make([]line, rows)}
}
