package screen

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

func (st *state) snapshot(o SnapshotOptions) Snapshot {
	ansiFmt := o.Format == "ansi"
	snap := Snapshot{
		Rows:      st.rows,
		Cols:      st.cols,
		Cursor:    Cursor{Row: st.cur.y, Col: st.cur.x, Visible: !st.hidden},
		AltScreen: st.alt,
		Title:     st.title,
	}
	if st.cur.pending {
		// As tmux reports it: the last column is written and the next
		// character goes to the next row.
		snap.Cursor.Col = st.cols
	}
	g := st.g()
	if o.MainScreen && st.alt {
		g = &st.main
		c := st.saved[0]
		snap.AltScreen = false
		snap.Cursor = Cursor{Row: min(c.y, st.rows-1), Col: min(c.x, st.cols-1), Visible: true}
	}
	nh := 0
	if !snap.AltScreen && o.ScrollbackLines > 0 {
		nh = min(o.ScrollbackLines, st.hist.len())
	}
	// Every row rendered from cells is written to one buffer and cut
	// out of it afterwards: one allocation for the screen instead of a
	// few growing ones per row. Scrollback rows kept as text are used as
	// they are.
	n := nh + len(g.lines)
	snap.Lines = make([]string, n)
	spans := make([]int32, 2*n) // where each rendered row is in the buffer
	var sb strings.Builder
	sb.Grow(len(g.lines) * (st.cols + 1))
	render := func(i int, l *line) {
		if text, ok := l.text(ansiFmt); ok {
			snap.Lines[i] = text
			spans[2*i] = -1
			return
		}
		spans[2*i] = int32(sb.Len())
		appendCells(&sb, l, l.trimmed(), ansiFmt, !ansiFmt)
		spans[2*i+1] = int32(sb.Len())
	}
	for i := range nh {
		render(i, st.hist.at(st.hist.len()-nh+i))
	}
	for i := range g.lines {
		render(nh+i, &g.lines[i])
	}
	all := sb.String()
	for i := range n {
		if spans[2*i] >= 0 {
			snap.Lines[i] = all[spans[2*i]:spans[2*i+1]]
		}
	}
	return snap
}

// text is a scrollback row kept as text, as a snapshot shows it (trailing
// blanks trimmed unless ansiFmt), and false for a row of cells.
func (l *line) text(ansiFmt bool) (string, bool) {
	if l.plain == "" {
		return "", false
	}
	if ansiFmt {
		return l.plain, true
	}
	return strings.TrimRight(l.plain, " "), true
}

// appendCells writes cells of row l to sb.
func appendCells(sb *strings.Builder, l *line, cells []cell, ansiFmt, trim bool) {
	if trim {
		// Trailing spaces written by the program are trimmed too, as tmux
		// does.
		for len(cells) > 0 && (cells[len(cells)-1].r == 0 || cells[len(cells)-1].r == ' ') && cells[len(cells)-1].cm == 0 {
			cells = cells[:len(cells)-1]
		}
	}
	var pen attr
	for i := range cells {
		c := &cells[i]
		if c.r == contRune {
			continue
		}
		if a := c.attr(); ansiFmt && a != pen {
			writeSGR(sb, a)
			pen = a
		}
		switch {
		case c.r == 0:
			sb.WriteByte(' ')
		case c.r < utf8.RuneSelf:
			sb.WriteByte(byte(c.r))
		default:
			sb.WriteRune(c.r)
		}
		if c.cm != 0 && int(c.cm) <= len(l.comb) {
			sb.WriteString(l.comb[c.cm-1])
		}
	}
	if ansiFmt && pen != (attr{}) {
		sb.WriteString("\x1b[0m")
	}
}

func writeSGR(sb *strings.Builder, a attr) {
	sb.WriteString("\x1b[0")
	names := [...]string{"1", "2", "3", "4", "5", "7", "8", "9"}
	for i, n := range names {
		if a.fl&(1<<i) != 0 {
			sb.WriteByte(';')
			sb.WriteString(n)
		}
	}
	writeColor(sb, a.fg, 30)
	writeColor(sb, a.bg, 40)
	sb.WriteByte('m')
}

func writeColor(sb *strings.Builder, c uint32, base int) {
	switch c >> 24 {
	case 1:
		n := int(c & 0xff)
		switch {
		case n < 8:
			sb.WriteString(";" + strconv.Itoa(base+n))
		case n < 16:
			sb.WriteString(";" + strconv.Itoa(base+60+n-8))
		default:
			sb.WriteString(";" + strconv.Itoa(base+8) + ";5;" + strconv.Itoa(n))
		}
	case 2:
		sb.WriteString(";" + strconv.Itoa(base+8) + ";2;" +
			strconv.Itoa(int(c>>16&0xff)) + ";" + strconv.Itoa(int(c>>8&0xff)) + ";" + strconv.Itoa(int(c&0xff)))
	}
}

// cursorLine is the cursor's row up to the cursor, as text. Blanks before
// the cursor are kept: a prompt's trailing space is part of it.
func (st *state) cursorLine() string {
	l := st.row(st.cur.y)
	x := st.cur.x
	if st.cur.pending {
		x = st.cols
	}
	cells := l.cells
	if len(cells) > x {
		cells = cells[:x]
	}
	var sb strings.Builder
	appendCells(&sb, l, cells, false, false)
	s := sb.String()
	if pad := x - len(cells); pad > 0 {
		s += strings.Repeat(" ", pad)
	}
	return s
}
