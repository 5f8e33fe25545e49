package screen

import (
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/ansi/parser"
)

// cursor is the writing position and pen. x may equal cols after the last
// column was written (the pending wrap of xterm's autowrap).
type cursor struct {
	x, y    int
	pen     attr
	g       [2]bool // G0, G1 designated as DEC special graphics
	gl      int     // the charset shifted in (SI: 0, SO: 1)
	origin  bool
	pending bool
}

// state is the parsed screen. It is built on the first byte parsed.
type state struct {
	rows, cols int
	hist       history // scrollback of the main screen
	main, altg grid
	alt        bool
	cur        cursor
	saved      [2]cursor // DECSC per buffer (main, alternate)
	saved1049  cursor
	top, bot   int // scroll region, inclusive
	tabs       []bool
	title      string

	autowrap, insert, hidden, appCursor bool
	newlineCR                           bool
	bracketedPaste, appKeypad           bool

	p       *ansi.Parser
	replies *[]byte
	lastR   rune // the last character printed, for REP
}

func newState(rows, cols, hist int, replies *[]byte) *state {
	st := &state{rows: rows, cols: cols, hist: history{max: hist}, replies: replies}
	st.main = newGrid(rows)
	st.reset()
	st.p = newParser(ansi.Handler{
		Print:     st.print,
		Execute:   st.execute,
		HandleCsi: st.csi,
		HandleEsc: st.esc,
		HandleOsc: st.osc,
	})
	return st
}

// reset is RIS, minus the scrollback and the size.
func (st *state) reset() {
	st.alt = false
	st.altg = grid{}
	st.main = newGrid(st.rows)
	st.cur = cursor{}
	st.saved = [2]cursor{}
	st.top, st.bot = 0, st.rows-1
	st.tabs = nil
	st.title = ""
	st.autowrap, st.insert, st.hidden, st.appCursor = true, false, false, false
	st.bracketedPaste, st.appKeypad = false, false
}

// resetModes undoes what a program killed mid-run may leave behind that
// would garble the next one's output in the model: a scroll region,
// origin mode, insert mode, a hidden cursor, a shifted-in line-drawing
// charset, and the pen's rendition.
func (st *state) resetModes() {
	st.top, st.bot = 0, st.rows-1
	st.cur.origin = false
	st.cur.pen = attr{}
	st.cur.g = [2]bool{}
	st.cur.gl = 0
	st.insert = false
	st.autowrap = true
	st.hidden = false
}

func (st *state) feed(p []byte) {
	for _, b := range p {
		// Printable ASCII outside a sequence, most of any output, skips
		// the parser's dispatch.
		if b >= 0x20 && b < 0x7f && st.p.State() == parser.GroundState {
			st.print(rune(b))
			continue
		}
		st.p.Advance(b)
	}
}

func (st *state) g() *grid {
	if st.alt {
		return &st.altg
	}
	return &st.main
}

func (st *state) row(y int) *line { return &st.g().lines[y] }

// reply queues an answer; a flood of queries gets at most 64 KiB of them.
func (st *state) reply(b ...byte) {
	if len(*st.replies)+len(b) <= 64<<10 {
		*st.replies = append(*st.replies, b...)
	}
}

// print writes one character at the cursor.
func (st *state) print(r rune) {
	c := &st.cur
	if r < 0x80 && st.cur.g[c.gl] {
		r = decGraphics(r)
	}
	w := runeWidth(r)
	if w == 0 {
		st.combine(r)
		return
	}
	st.lastR = r
	if c.pending || c.x+w > st.cols {
		if st.autowrap {
			st.row(c.y).wrapped = true
			c.x = 0
			st.index()
		} else {
			c.x = st.cols - w
		}
		c.pending = false
	}
	if w > st.cols {
		return
	}
	l := st.row(c.y)
	if st.insert {
		st.insertCells(w)
	}
	l.grow(c.x+w, st.cols)
	l.split(c.x)
	if w == 2 {
		l.split(c.x + 1)
	}
	l.cells[c.x] = styled(r, uint8(w), c.pen)
	if w == 2 {
		l.cells[c.x+1] = styled(contRune, 0, c.pen)
	}
	c.x += w
	if c.x >= st.cols {
		c.x = st.cols - 1
		c.pending = st.autowrap
	}
}

// combine attaches a zero-width character to the cell before the cursor.
func (st *state) combine(r rune) {
	c := &st.cur
	x := c.x - 1
	l := st.row(c.y)
	if x >= 0 && x < len(l.cells) && l.cells[x].r == contRune {
		x--
	}
	if x < 0 || x >= len(l.cells) || l.cells[x].r == 0 {
		return
	}
	cl := &l.cells[x]
	if cl.cm == 0 {
		if len(l.comb) >= 2*len(l.cells)+8 {
			l.compactComb()
		}
		if len(l.comb) >= 0xffff {
			return
		}
		l.comb = append(l.comb, string(r))
		cl.cm = uint16(len(l.comb))
		return
	}
	if len(l.comb[cl.cm-1]) < 32 {
		l.comb[cl.cm-1] += string(r)
	}
}

// compactComb drops the combining marks of cells since overwritten, so a
// row redrawn forever does not collect them forever.
func (l *line) compactComb() {
	var keep []string
	for i := range l.cells {
		if c := &l.cells[i]; c.cm != 0 && int(c.cm) <= len(l.comb) {
			keep = append(keep, l.comb[c.cm-1])
			c.cm = uint16(len(keep))
		}
	}
	l.comb = keep
}

func (st *state) execute(b byte) {
	c := &st.cur
	switch b {
	case '\b':
		c.pending = false
		if c.x > 0 {
			c.x--
		}
	case '\t':
		st.tab(1)
	case '\n', '\v', '\f':
		st.index()
		if st.newlineCR {
			c.x = 0
		}
	case '\r':
		c.x = 0
		c.pending = false
	case 0x0e: // SO
		c.gl = 1
	case 0x0f: // SI
		c.gl = 0
	}
}

// index moves the cursor down one row, scrolling at the region's bottom.
func (st *state) index() {
	c := &st.cur
	c.pending = false
	switch {
	case c.y == st.bot:
		st.scrollUp(st.top, st.bot, 1)
	case c.y < st.rows-1:
		c.y++
	}
}

// reverseIndex moves the cursor up one row, scrolling at the region's top.
func (st *state) reverseIndex() {
	c := &st.cur
	c.pending = false
	switch {
	case c.y == st.top:
		st.scrollDown(st.top, st.bot, 1)
	case c.y > 0:
		c.y--
	}
}

// scrollUp moves rows top..bot up n rows. Rows leaving the top of the
// whole main screen go to the scrollback.
func (st *state) scrollUp(top, bot, n int) {
	g := st.g()
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	if !st.alt && top == 0 {
		for i := 0; i < n; i++ {
			st.hist.push(&g.lines[i])
		}
	}
	// The rows leaving are copied to the scrollback (or dropped): their
	// arrays are reused for the rows coming in, so scrolling output does
	// not allocate a row per line.
	var spare [4][]cell
	for i := 0; i < min(n, len(spare)); i++ {
		spare[i] = g.lines[top+i].cells
	}
	for i := top; i <= bot-n; i++ {
		g.lines[i] = g.lines[i+n]
	}
	for i := bot - n + 1; i <= bot; i++ {
		g.lines[i] = line{}
		if k := i - (bot - n + 1); k < len(spare) && cap(spare[k]) > 0 {
			c := spare[k][:cap(spare[k])]
			clear(c)
			g.lines[i].cells = c[:0]
		}
		g.lines[i].clear(0, st.cols, st.cur.pen)
	}
}

func (st *state) scrollDown(top, bot, n int) {
	g := st.g()
	n = min(n, bot-top+1)
	if n <= 0 {
		return
	}
	for i := bot; i >= top+n; i-- {
		g.lines[i] = g.lines[i-n]
	}
	for i := top; i < top+n; i++ {
		g.lines[i] = line{}
		g.lines[i].clear(0, st.cols, st.cur.pen)
	}
}

func (st *state) tab(n int) {
	c := &st.cur
	for ; n > 0 && c.x < st.cols-1; n-- {
		c.x++
		for c.x < st.cols-1 && !st.isTab(c.x) {
			c.x++
		}
	}
}

func (st *state) backTab(n int) {
	c := &st.cur
	c.pending = false
	for ; n > 0 && c.x > 0; n-- {
		c.x--
		for c.x > 0 && !st.isTab(c.x) {
			c.x--
		}
	}
}

func (st *state) isTab(x int) bool {
	if st.tabs == nil {
		return x%8 == 0
	}
	return x < len(st.tabs) && st.tabs[x]
}

func (st *state) setTab(x int, on bool) {
	if st.tabs == nil {
		st.tabs = make([]bool, st.cols)
		for i := range st.tabs {
			st.tabs[i] = i%8 == 0
		}
	}
	if x >= 0 && x < len(st.tabs) {
		st.tabs[x] = on
	}
}

// insertCells shifts the cursor's row right by n from the cursor (ICH).
func (st *state) insertCells(n int) {
	c := &st.cur
	x := c.x
	l := st.row(c.y)
	if x >= len(l.cells) && blank(c.pen) == (cell{}) {
		return
	}
	n = min(n, st.cols-x)
	l.grow(st.cols, st.cols)
	l.split(x)
	copy(l.cells[x+n:], l.cells[x:st.cols-n])
	for i := x; i < x+n; i++ {
		l.cells[i] = blank(c.pen)
	}
	l.split(st.cols - 1)
	if l.cells[st.cols-1].w == 2 {
		l.cells[st.cols-1] = cell{bg: l.cells[st.cols-1].bg}
	}
}

// deleteCells removes n cells at the cursor, shifting the rest left (DCH).
func (st *state) deleteCells(n int) {
	c := &st.cur
	x := c.x
	l := st.row(c.y)
	if x >= len(l.cells) {
		return
	}
	n = min(n, st.cols-x)
	l.grow(st.cols, st.cols)
	l.split(x)
	l.split(x + n - 1)
	copy(l.cells[x:], l.cells[x+n:])
	for i := st.cols - n; i < st.cols; i++ {
		l.cells[i] = blank(c.pen)
	}
}

// setAlt switches between the main and alternate screens.
func (st *state) setAlt(on, clearAlt bool) {
	if on == st.alt {
		return
	}
	st.saved[b2i(st.alt)] = st.cur
	if on {
		if clearAlt || st.altg.lines == nil {
			st.altg = newGrid(st.rows)
		}
	}
	st.alt = on
	st.cur = st.saved[b2i(on)]
	st.cur.x = min(st.cur.x, st.cols-1)
	st.cur.y = min(st.cur.y, st.rows-1)
	st.cur.pending = false
	if !on {
		// The alternate grid is not kept: it is rebuilt next time.
		st.altg = grid{}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// resize changes the size: rows beyond the new height leave from the
// bottom while they are blank and below the cursor, then from the top into
// the scrollback; rows added come back from the scrollback first.
func (st *state) resize(rows, cols int) {
	if rows == st.rows && cols == st.cols {
		return
	}
	if cols != st.cols && !st.alt {
		st.reflow(cols)
	}
	st.resizeGrid(&st.main, rows, cols, !st.alt)
	if st.alt {
		st.resizeGrid(&st.altg, rows, cols, true)
	} else {
		st.saved[1].y = min(st.saved[1].y, rows-1)
	}
	st.rows, st.cols = rows, cols
	st.top, st.bot = 0, rows-1
	if st.tabs != nil {
		old := st.tabs
		st.tabs = make([]bool, cols)
		for i := range st.tabs {
			if i < len(old) {
				st.tabs[i] = old[i]
			} else {
				st.tabs[i] = i%8 == 0
			}
		}
	}
	for i := range st.saved {
		st.saved[i].x = min(st.saved[i].x, cols-1)
		st.saved[i].y = min(st.saved[i].y, rows-1)
	}
	st.cur.x = min(st.cur.x, cols-1)
	st.cur.pending = false
}

// resizeGrid resizes one buffer; active says the cursor is on it.
func (st *state) resizeGrid(g *grid, rows, cols int, active bool) {
	cy := st.cur.y
	if !active {
		cy = st.saved[0].y
	}
	isMain := g == &st.main
	for len(g.lines) > rows {
		last := len(g.lines) - 1
		if last > cy && len(g.lines[last].trimmed()) == 0 {
			g.lines = g.lines[:last]
			continue
		}
		if isMain {
			st.hist.push(&g.lines[0])
		}
		g.lines = g.lines[1:]
		cy--
	}
	for len(g.lines) < rows {
		if isMain && st.hist.len() > 0 && len(g.lines) > 0 {
			g.lines = append([]line{st.hist.pop()}, g.lines...)
			cy++
			continue
		}
		g.lines = append(g.lines, line{})
	}
	g.lines = append([]line(nil), g.lines...)
	for i := range g.lines {
		l := &g.lines[i]
		if len(l.cells) > cols {
			l.cells = l.cells[:cols]
			if l.cells[cols-1].w == 2 {
				l.cells[cols-1] = cell{bg: l.cells[cols-1].bg}
			}
		}
	}
	cy = max(0, min(cy, rows-1))
	if active {
		st.cur.y = cy
	} else {
		st.saved[0].y = cy
	}
}

// decGraphics maps the DEC special graphics set (ESC ( 0) to Unicode.
func decGraphics(r rune) rune {
	const tbl = "◆▒␉␌␍␊°±␤␋┘┐┌└┼⎺⎻─⎼⎽├┤┴┬│≤≥π≠£·"
	if r < 0x60 || r > 0x7e {
		return r
	}
	i := int(r - 0x60)
	for j, c := range tbl {
		_ = j
		if i == 0 {
			return c
		}
		i--
	}
	return r
}
