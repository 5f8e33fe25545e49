package screen

// reflow re-wraps the main screen and its scrollback at a new width, as
// tmux does: rows that autowrap joined are one line again, split at the
// new width, and the screen (still of the old height, blank rows
// included) shows the last rows of the result; the rest is scrollback.
// The caller then changes the height.
func (st *state) reflow(cols int) {
	g := &st.main
	rows := st.rows
	nh := st.hist.len()
	phys := make([]line, 0, nh+len(g.lines))
	for i := range nh {
		phys = append(phys, asCells(st.hist.at(i)))
	}
	phys = append(phys, g.lines...)
	curIdx, curX := nh+st.cur.y, st.cur.x
	if st.cur.pending {
		curX = st.cols
	}

	var out []line
	ci, cx := -1, 0
	for i := 0; i < len(phys); {
		// One logical line: phys[i..j], joined while rows wrapped.
		j := i
		for j < len(phys)-1 && phys[j].wrapped {
			j++
		}
		var cells []cell
		var comb []string
		off := -1
		for k := i; k <= j; k++ {
			l := &phys[k]
			if k == curIdx {
				off = len(cells) + curX
			}
			base := uint16(len(comb))
			comb = append(comb, l.comb...)
			start := len(cells)
			cells = append(cells, l.cells...)
			for x := start; x < len(cells); x++ {
				if cells[x].cm != 0 {
					cells[x].cm += base
				}
			}
			if k < j {
				// A wrapped row is full width, blanks included.
				for len(cells)-start < st.cols {
					cells = append(cells, cell{})
				}
			}
		}
		cells = trimCells(cells)
		first := len(out)
		out = append(out, split(cells, comb, cols)...)
		if off >= 0 {
			ci, cx = first, off
			for ci < len(out)-1 && cx >= len(out[ci].cells) && out[ci].wrapped {
				cx -= len(out[ci].cells)
				ci++
			}
		}
		i = j + 1
	}
	if ci < 0 {
		ci, cx = len(out)-1, 0
	}
	end := len(out)
	top := max(0, end-rows)
	if ci < top {
		// The cursor is above rows written later (it was moved up): keep
		// it on the screen; what does not fit below is cut.
		top = ci
		end = min(end, top+rows)
	}
	st.hist.reset()
	for k := 0; k < top; k++ {
		st.hist.push(&out[k])
	}
	lines := make([]line, rows)
	copy(lines, out[top:end])
	g.lines = lines
	st.cur.y = ci - top
	st.cur.x = min(cx, cols-1)
	st.cur.pending = cx >= cols
}

// asCells returns a scrollback row as cells.
func asCells(l *line) line {
	if l.plain == "" {
		return *l
	}
	out := line{wrapped: l.wrapped}
	for _, r := range l.plain {
		out.cells = append(out.cells, cell{r: r, w: 1})
	}
	return out
}

func trimCells(c []cell) []cell {
	n := len(c)
	for n > 0 && c[n-1] == (cell{}) {
		n--
	}
	return c[:n]
}

// split cuts a logical line into rows of at most cols cells; a wide
// character that does not fit goes to the next row.
func split(cells []cell, comb []string, cols int) []line {
	if len(cells) == 0 {
		return []line{{}}
	}
	var out []line
	for len(cells) > 0 {
		n := min(cols, len(cells))
		if n < len(cells) && n > 0 && cells[n-1].w == 2 {
			n-- // the head of a wide character cut by the edge
		}
		if n == 0 {
			n = 1
		}
		row := line{cells: append(make([]cell, 0, cols), cells[:n]...), wrapped: n < len(cells)}
		for x := range row.cells {
			if cm := row.cells[x].cm; cm != 0 && int(cm) <= len(comb) {
				row.comb = append(row.comb, comb[cm-1])
				row.cells[x].cm = uint16(len(row.comb))
			}
		}
		out = append(out, row)
		cells = cells[n:]
	}
	return out
}
