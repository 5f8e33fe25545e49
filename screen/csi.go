package screen

import (
	"strconv"

	"github.com/charmbracelet/x/ansi"
)

func (st *state) csi(cmd ansi.Cmd, ps ansi.Params) {
	c := &st.cur
	arg := func(i, def int) int {
		v, _, _ := ps.Param(i, def)
		if v == 0 && def > 0 {
			return def
		}
		return v
	}
	n := arg(0, 1)
	switch cmd.Prefix() {
	case '?':
		st.privateCSI(cmd.Final(), ps)
		return
	case '>':
		if cmd.Final() == 'c' { // secondary device attributes
			st.reply([]byte("\x1b[>84;0;0c")...)
		}
		return
	case 0:
	default:
		return
	}
	if cmd.Intermediate() != 0 {
		if cmd.Intermediate() == '!' && cmd.Final() == 'p' { // DECSTR
			st.resetModes()
			st.setTop()
		}
		return
	}
	switch cmd.Final() {
	case '@':
		st.insertCells(n)
	case 'A':
		st.moveTo(c.x, max(c.y-n, st.minY()))
	case 'B', 'e':
		st.moveTo(c.x, min(c.y+n, st.maxY()))
	case 'C', 'a':
		st.moveTo(min(c.x+n, st.cols-1), c.y)
	case 'D':
		st.moveTo(max(c.x-n, 0), c.y)
	case 'E':
		st.moveTo(0, min(c.y+n, st.maxY()))
	case 'F':
		st.moveTo(0, max(c.y-n, st.minY()))
	case 'G', '`':
		st.moveTo(min(n-1, st.cols-1), c.y)
	case 'H', 'f':
		st.cup(arg(0, 1)-1, arg(1, 1)-1)
	case 'I':
		c.pending = false
		st.tab(n)
	case 'J':
		st.eraseDisplay(arg(0, 0))
	case 'K':
		st.eraseLine(arg(0, 0))
	case 'L':
		st.insertLines(n)
	case 'M':
		st.deleteLines(n)
	case 'P':
		st.deleteCells(n)
	case 'S':
		st.scrollUp(st.top, st.bot, n)
	case 'T':
		st.scrollDown(st.top, st.bot, n)
	case 'X':
		c.pending = false
		st.row(c.y).clear(c.x, min(c.x+n, st.cols), c.pen)
	case 'Z':
		st.backTab(n)
	case 'b':
		if st.lastR != 0 {
			for range min(n, st.cols*st.rows) {
				st.print(st.lastR)
			}
		}
	case 'c':
		if arg(0, 0) == 0 {
			st.reply([]byte("\x1b[?1;2c")...)
		}
	case 'd':
		y := n - 1
		if c.origin {
			y += st.top
		}
		st.moveTo(c.x, min(y, st.rows-1))
	case 'g':
		switch arg(0, 0) {
		case 0:
			st.setTab(c.x, false)
		case 3:
			st.tabs = make([]bool, st.cols)
		}
	case 'h', 'l':
		if arg(0, 0) == 4 {
			st.insert = cmd.Final() == 'h'
		}
	case 'm':
		st.sgr(ps)
	case 'n':
		switch arg(0, 0) {
		case 5:
			st.reply([]byte("\x1b[0n")...)
		case 6:
			y := c.y
			if c.origin {
				y -= st.top
			}
			b := append([]byte("\x1b["), strconv.Itoa(y+1)...)
			b = append(append(b, ';'), strconv.Itoa(c.x+1)...)
			st.reply(append(b, 'R')...)
		}
	case 'r':
		top, bot := arg(0, 1)-1, arg(1, st.rows)-1
		bot = min(bot, st.rows-1)
		if top < bot {
			st.top, st.bot = top, bot
			st.setTop()
		}
	case 's':
		st.saved[b2i(st.alt)] = *c
	case 'u':
		st.restoreCursor()
	}
}

func (st *state) privateCSI(final byte, ps ansi.Params) {
	switch final {
	case 'h', 'l':
	case 'n':
		if v, _, _ := ps.Param(0, 0); v == 6 { // DECXCPR
			c := st.cur
			st.reply([]byte("\x1b[?" + strconv.Itoa(c.y+1) + ";" + strconv.Itoa(c.x+1) + "R")...)
		}
		return
	default:
		return
	}
	on := final == 'h'
	for i := range ps {
		switch ps[i].Param(0) {
		case 1:
			st.appCursor = on
		case 6:
			st.cur.origin = on
			st.setTop()
		case 7:
			st.autowrap = on
		case 25:
			st.hidden = !on
		case 2004:
			st.bracketedPaste = on
		case 47, 1047:
			if !on && st.alt && ps[i].Param(0) == 1047 {
				st.altg = newGrid(st.rows)
			}
			st.setAlt(on, false)
		case 1049:
			if on {
				st.saved1049 = st.cur
				st.setAlt(true, true)
			} else if st.alt {
				st.setAlt(false, true)
				st.cur = st.saved1049
				st.cur.x = min(st.cur.x, st.cols-1)
				st.cur.y = min(st.cur.y, st.rows-1)
			}
		}
	}
}

// setTop puts the cursor home: the region's top in origin mode.
func (st *state) setTop() {
	st.cur.pending = false
	st.cur.x = 0
	st.cur.y = 0
	if st.cur.origin {
		st.cur.y = st.top
	}
}

func (st *state) minY() int {
	if st.cur.y >= st.top {
		return st.top
	}
	return 0
}

func (st *state) maxY() int {
	if st.cur.y <= st.bot {
		return st.bot
	}
	return st.rows - 1
}

func (st *state) moveTo(x, y int) {
	st.cur.x = max(0, min(x, st.cols-1))
	st.cur.y = max(0, min(y, st.rows-1))
	st.cur.pending = false
}

func (st *state) cup(y, x int) {
	if st.cur.origin {
		y = min(y+st.top, st.bot)
	}
	st.moveTo(x, y)
}

func (st *state) restoreCursor() {
	st.cur = st.saved[b2i(st.alt)]
	st.cur.x = min(st.cur.x, st.cols-1)
	st.cur.y = min(st.cur.y, st.rows-1)
}

func (st *state) eraseDisplay(mode int) {
	c := &st.cur
	g := st.g()
	switch mode {
	case 0:
		st.row(c.y).clear(st.effX(), st.cols, c.pen)
		for y := c.y + 1; y < st.rows; y++ {
			g.lines[y] = line{}
			g.lines[y].clear(0, st.cols, c.pen)
		}
	case 1:
		for y := 0; y < c.y; y++ {
			g.lines[y] = line{}
			g.lines[y].clear(0, st.cols, c.pen)
		}
		st.row(c.y).clear(0, st.effX()+1, c.pen)
	case 2:
		// As tmux does (scroll-on-clear), clearing the whole main screen
		// first moves its written rows into the scrollback.
		if !st.alt {
			last := -1
			for y := range g.lines {
				if len(g.lines[y].trimmed()) > 0 {
					last = y
				}
			}
			for y := 0; y <= last; y++ {
				st.hist.push(&g.lines[y])
			}
		}
		for y := range g.lines {
			g.lines[y] = line{}
			g.lines[y].clear(0, st.cols, c.pen)
		}
	case 3:
		st.hist.reset()
	}
}

func (st *state) eraseLine(mode int) {
	c := &st.cur
	l := st.row(c.y)
	switch mode {
	case 0:
		l.clear(st.effX(), st.cols, c.pen)
		l.wrapped = false
	case 1:
		l.clear(0, st.effX()+1, c.pen)
	case 2:
		l.clear(0, st.cols, c.pen)
		l.wrapped = false
	}
}

// effX is the column an erase starts from: past the last one while a wrap
// is pending (tmux keeps the cursor there, so "CSI K" after a full row
// erases nothing).
func (st *state) effX() int {
	if st.cur.pending {
		return st.cols
	}
	return st.cur.x
}

func (st *state) insertLines(n int) {
	c := &st.cur
	if c.y < st.top || c.y > st.bot {
		return
	}
	st.scrollDown(c.y, st.bot, n)
	c.x, c.pending = 0, false
}

func (st *state) deleteLines(n int) {
	c := &st.cur
	if c.y < st.top || c.y > st.bot {
		return
	}
	g := st.g()
	n = min(n, st.bot-c.y+1)
	for i := c.y; i <= st.bot-n; i++ {
		g.lines[i] = g.lines[i+n]
	}
	for i := st.bot - n + 1; i <= st.bot; i++ {
		g.lines[i] = line{}
		g.lines[i].clear(0, st.cols, c.pen)
	}
	c.x, c.pending = 0, false
}

func (st *state) sgr(ps ansi.Params) {
	p := &st.cur.pen
	if len(ps) == 0 {
		*p = attr{}
		return
	}
	for i := 0; i < len(ps); i++ {
		v := ps[i].Param(0)
		switch {
		case v == 0:
			*p = attr{}
		case v == 1:
			p.fl |= flBold
		case v == 2:
			p.fl |= flDim
		case v == 3:
			p.fl |= flItalic
		case v == 4:
			p.fl |= flUnderline
		case v == 5 || v == 6:
			p.fl |= flBlink
		case v == 7:
			p.fl |= flReverse
		case v == 8:
			p.fl |= flHidden
		case v == 9:
			p.fl |= flStrike
		case v == 21 || v == 22:
			p.fl &^= flBold | flDim
		case v == 23:
			p.fl &^= flItalic
		case v == 24:
			p.fl &^= flUnderline
		case v == 25:
			p.fl &^= flBlink
		case v == 27:
			p.fl &^= flReverse
		case v == 28:
			p.fl &^= flHidden
		case v == 29:
			p.fl &^= flStrike
		case v >= 30 && v <= 37:
			p.fg = 1<<24 | uint32(v-30)
		case v == 39:
			p.fg = 0
		case v >= 40 && v <= 47:
			p.bg = 1<<24 | uint32(v-40)
		case v == 49:
			p.bg = 0
		case v >= 90 && v <= 97:
			p.fg = 1<<24 | uint32(v-90+8)
		case v >= 100 && v <= 107:
			p.bg = 1<<24 | uint32(v-100+8)
		case v == 38 || v == 48:
			col, used := extColor(ps[i+1:])
			i += used
			if v == 38 {
				p.fg = col
			} else {
				p.bg = col
			}
		}
	}
}

// extColor reads the rest of a 38/48 colour: 5;n or 2;r;g;b, with ';' or ':'.
func extColor(ps ansi.Params) (uint32, int) {
	if len(ps) == 0 {
		return 0, 0
	}
	switch ps[0].Param(0) {
	case 5:
		if len(ps) < 2 {
			return 0, len(ps)
		}
		return 1<<24 | uint32(ps[1].Param(0)&0xff), 2
	case 2:
		if len(ps) < 4 {
			return 0, len(ps)
		}
		// "2:cs:r:g:b" carries a colour space id first.
		if len(ps) >= 5 && ps[0].HasMore() && ps[3].HasMore() {
			ps = ps[1:]
			r, g, b := ps[1].Param(0)&0xff, ps[2].Param(0)&0xff, ps[3].Param(0)&0xff
			return 2<<24 | uint32(r<<16|g<<8|b), 5
		}
		r, g, b := ps[1].Param(0)&0xff, ps[2].Param(0)&0xff, ps[3].Param(0)&0xff
		return 2<<24 | uint32(r<<16|g<<8|b), 4
	}
	return 0, 1
}

func (st *state) esc(cmd ansi.Cmd) {
	c := &st.cur
	switch inter := cmd.Intermediate(); inter {
	case '(', ')':
		c.g[b2i(inter == ')')] = cmd.Final() == '0'
		return
	case 0:
	default:
		return
	}
	switch cmd.Final() {
	case '7':
		st.saved[b2i(st.alt)] = *c
	case '8':
		st.restoreCursor()
	case 'D':
		st.index()
	case 'E':
		st.index()
		c.x = 0
	case 'M':
		st.reverseIndex()
	case 'H':
		st.setTab(c.x, true)
	case 'c':
		st.reset()
	case '=':
		st.appKeypad = true
	case '>':
		st.appKeypad = false
	}
}

func (st *state) osc(cmd int, data []byte) {
	switch cmd {
	case 10, 11:
		// Colour queries (programs pick a light or dark theme from the
		// answer, some waiting for it): a light grey on black terminal.
		if string(data) == "10;?" {
			st.reply([]byte("\x1b]10;rgb:c0c0/c0c0/c0c0\x1b\\")...)
		} else if string(data) == "11;?" {
			st.reply([]byte("\x1b]11;rgb:0000/0000/0000\x1b\\")...)
		}
	case 0, 2:
		// data is "N;title".
		for i, b := range data {
			if b == ';' {
				t := data[i+1:]
				if len(t) > 256 {
					t = t[:256]
				}
				st.title = string(t)
				return
			}
		}
	}
}
