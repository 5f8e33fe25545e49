package screen

import "unicode/utf8"

// history is the scrollback: a ring of rows, oldest first, that reuses
// the evicted row's cells so a scrolling stream allocates nothing once it
// is full.
type history struct {
	buf      []line
	start, n int
	max      int
}

func (h *history) len() int { return h.n }

// at returns row i, 0 being the oldest.
func (h *history) at(i int) *line { return &h.buf[(h.start+i)%len(h.buf)] }

// push copies l into the ring (trimmed of trailing blanks).
func (h *history) push(l *line) {
	if h.max <= 0 {
		return
	}
	var slot *line
	if h.n < h.max {
		if h.n == len(h.buf) {
			// Grow the ring: unrolled into order, then doubled.
			nb := make([]line, min(max(2*len(h.buf), 16), h.max))
			for i := range h.n {
				nb[i] = *h.at(i)
			}
			h.buf, h.start = nb, 0
		}
		slot = h.at(h.n)
		h.n++
	} else {
		slot = h.at(0)
		h.start = (h.start + 1) % len(h.buf)
	}
	c := l.trimmed()
	slot.plain = ""
	if p, ok := plainText(c, l); ok {
		slot.cells, slot.comb, slot.wrapped, slot.plain = nil, nil, l.wrapped, p
		return
	}
	if cap(slot.cells) >= len(c) && cap(slot.cells) <= 2*len(c)+8 {
		slot.cells = append(slot.cells[:0], c...)
	} else if len(c) > 0 {
		slot.cells = append([]cell(nil), c...)
	} else {
		slot.cells = nil
	}
	slot.comb = slot.comb[:0]
	if len(l.comb) > 0 {
		slot.comb = append(slot.comb, l.comb...)
	}
	slot.wrapped = l.wrapped
}

// pop removes and returns the newest row, as cells.
func (h *history) pop() line {
	h.n--
	l := *h.at(h.n)
	*h.at(h.n) = line{}
	if l.plain != "" {
		for _, r := range l.plain {
			l.cells = append(l.cells, cell{r: r, w: 1})
		}
		l.plain = ""
	}
	return l
}

// plainText returns the row as a string if every cell is a default-styled
// narrow character or a blank.
func plainText(c []cell, l *line) (string, bool) {
	if len(l.comb) > 0 || len(c) == 0 {
		return "", false
	}
	b := make([]byte, 0, len(c))
	for i := range c {
		x := &c[i]
		if x.fg != 0 || x.bg != 0 || x.fl != 0 || x.cm != 0 || x.r < 0 || (x.r != 0 && x.w != 1) {
			return "", false
		}
		if x.r == 0 {
			b = append(b, ' ')
		} else {
			b = utf8.AppendRune(b, x.r)
		}
	}
	return string(b), true
}

func (h *history) reset() {
	clear(h.buf)
	h.buf, h.start, h.n = nil, 0, 0
}
