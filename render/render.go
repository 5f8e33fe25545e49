// Package render turns terminal output into the text a reader of a log
// sees, for models that should not be fed escape sequences: escape
// sequences are removed, a line redrawn with carriage returns (a progress
// bar, a spinner) keeps only its last state, backspaces take back what
// they erased, rows redrawn after moving the cursor up (docker's and
// npm's multi-line progress, cargo's status rows) keep only their last
// state, and what a program draws between saving and restoring the
// cursor (apt's bottom-row progress bar) is dropped.
//
// It is a screen model of bounded height: the last windowRows rows stay
// editable (cursor up and down, erase below), older ones are final and
// leave as text. Absolute cursor positions and scroll regions are not
// followed (the screen's size is not known here), so a full-screen
// program's output is better read from package screen; a plain log costs
// one parser step per byte and no emulator.
package render

import (
	"unicode/utf8"
	"unsafe"

	"github.com/charmbracelet/x/ansi"
)

// maxLine bounds the line being built; a longer line is cut into pieces.
const maxLine = 16 << 10

// windowRows is how many of the last rows a cursor move may go back to:
// more than a terminal's height, so any redraw a person could see is
// followed.
const windowRows = 128

// Renderer renders a stream: Write as bytes arrive, Take the finished
// lines, Flush at the end for the rows still open. The zero value is not
// usable; call New. A Renderer is not safe for concurrent use.
type Renderer struct {
	p *ansi.Parser
	// rows is a ring of the open rows: row i is rows[(first+i)%windowRows],
	// n of them, the cursor on row cur. line is the cursor's row, kept
	// out of the ring while the cursor is on it (the per-byte path then
	// touches one slice, as a line renderer does).
	rows  [windowRows][]rune
	first int
	n     int
	cur   int
	line  []rune
	col   int
	saved *savedLine
	out   []byte
}

type savedLine struct {
	line []rune
	row  int
	col  int
}

// New returns a renderer.
func New() *Renderer {
	r := &Renderer{n: 1}
	p := new(ansi.Parser)
	p.SetParamsSize(16)
	p.SetDataSize(256) // OSC/DCS payloads are dropped anyway
	p.SetHandler(ansi.Handler{
		Print:     r.print,
		Execute:   r.execute,
		HandleCsi: r.csi,
		HandleEsc: r.esc,
	})
	r.p = p
	return r
}

// Text renders a whole output at once. Rendered text is rarely longer
// than its input, so the result is allocated once at the input's size, and
// handed back as the string without a copy (nothing else holds it): a
// 16 MiB log rendered in an exec.run peaked 129 MB above the idle daemon,
// 63 MB now.
func Text(p []byte) string {
	r := New()
	r.out = make([]byte, 0, len(p))
	r.Write(p)
	b := r.Flush()
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// Write feeds output. It never fails.
func (r *Renderer) Write(p []byte) (int, error) {
	for _, b := range p {
		r.p.Advance(b)
	}
	return len(p), nil
}

// Take returns the lines finished so far (each ending in "\n") and
// forgets them.
func (r *Renderer) Take() []byte {
	out := r.out
	r.out = nil
	return out
}

// Flush returns the finished lines and the rows still open (the last
// without a newline), and starts afresh.
func (r *Renderer) Flush() []byte {
	r.park()
	for i := 0; i < r.n; i++ {
		row := r.row(i)
		r.out = appendRunes(r.out, *row)
		if i < r.n-1 {
			r.out = append(r.out, '\n')
		}
		*row = (*row)[:0]
	}
	out := r.Take()
	r.first, r.n, r.cur, r.col, r.saved = 0, 1, 0, 0, nil
	r.line, r.rows[0] = r.rows[0], nil
	r.p.Reset()
	return out
}

// row is the i-th open row.
func (r *Renderer) row(i int) *[]rune { return &r.rows[(r.first+i)%windowRows] }

// park puts the cursor's row back in the ring.
func (r *Renderer) park() { *r.row(r.cur), r.line = r.line, nil }

// moveTo puts the cursor on open row i (clamped), at column col.
func (r *Renderer) moveTo(i, col int) {
	r.park()
	r.cur = min(max(i, 0), r.n-1)
	slot := r.row(r.cur)
	r.line, *slot = *slot, nil
	r.col = col
}

func appendRunes(b []byte, rs []rune) []byte {
	for _, c := range rs {
		if c == 0 {
			c = ' '
		}
		b = utf8.AppendRune(b, c)
	}
	return b
}

func (r *Renderer) print(c rune) {
	if r.col >= maxLine {
		r.newline()
	}
	for len(r.line) < r.col {
		r.line = append(r.line, ' ')
	}
	if r.col < len(r.line) {
		r.line[r.col] = c
	} else {
		r.line = append(r.line, c)
	}
	r.col++
}

// newline moves to the start of the next row: down, or, on the last open
// row, onto a new one, the oldest row leaving as text when the window is
// full.
func (r *Renderer) newline() {
	r.saved = nil
	if r.cur < r.n-1 {
		r.moveTo(r.cur+1, 0)
		return
	}
	r.park()
	if r.n == windowRows {
		top := r.row(0)
		r.out = appendRunes(r.out, *top)
		r.out = append(r.out, '\n')
		*top = (*top)[:0]
		r.first = (r.first + 1) % windowRows
	} else {
		r.n++
	}
	r.cur = r.n - 1
	slot := r.row(r.cur)
	r.line, *slot = (*slot)[:0], nil
	r.col = 0
}

func (r *Renderer) execute(b byte) {
	switch b {
	case '\n', '\v', '\f':
		r.newline()
	case '\r':
		r.col = 0
	case '\b':
		if r.col > 0 {
			r.col--
		}
	case '\t':
		r.print('\t')
	}
}

func (r *Renderer) csi(cmd ansi.Cmd, ps ansi.Params) {
	if cmd.Prefix() != 0 || cmd.Intermediate() != 0 {
		return
	}
	n, _, _ := ps.Param(0, 1)
	n = max(n, 1)
	line := r.line
	switch cmd.Final() {
	case 'K':
		// Erase in line: to the end (0), to the start (1), all (2).
		switch m, _, _ := ps.Param(0, 0); m {
		case 0:
			r.line = line[:min(r.col, len(line))]
		case 1:
			for i := 0; i <= r.col && i < len(line); i++ {
				line[i] = ' '
			}
		case 2:
			r.line = line[:0]
		}
	case 'J':
		// Erase below (0): the rest of this row and the rows under it,
		// which a redraw is about to replace.
		if m, _, _ := ps.Param(0, 0); m == 0 {
			r.line = line[:min(r.col, len(line))]
			for i := r.cur + 1; i < r.n; i++ {
				*r.row(i) = (*r.row(i))[:0]
			}
			r.n = r.cur + 1
		}
	case 'A':
		r.moveTo(r.cur-n, r.col)
	case 'B':
		r.moveTo(r.cur+n, r.col)
	case 'F':
		r.moveTo(r.cur-n, 0)
	case 'E':
		r.moveTo(r.cur+n, 0)
	case 'G', '`':
		r.col = min(n-1, maxLine-1)
	case 'C':
		r.col = min(r.col+n, maxLine-1)
	case 'D':
		r.col = max(r.col-n, 0)
	case 'P':
		// Delete characters (readline's backspace at a line's middle).
		if r.col < len(line) {
			n = min(n, len(line)-r.col)
			r.line = append(line[:r.col], line[r.col+n:]...)
		}
	case 's':
		r.save()
	case 'u':
		r.restore()
	}
}

func (r *Renderer) esc(cmd ansi.Cmd) {
	if cmd.Intermediate() != 0 {
		return
	}
	switch cmd.Final() {
	case '7':
		r.save()
	case '8':
		r.restore()
	case 'M':
		// Reverse index: up a row (at the top it would scroll; here the
		// window's first row is as high as it goes).
		r.moveTo(r.cur-1, r.col)
	}
}

// save and restore bracket a status line drawn elsewhere on the screen:
// what was drawn in between is not part of the log.
func (r *Renderer) save() {
	r.saved = &savedLine{line: append([]rune(nil), r.line...), row: r.cur, col: r.col}
}

func (r *Renderer) restore() {
	if r.saved == nil {
		return
	}
	r.moveTo(r.saved.row, r.saved.col)
	r.line = append(r.line[:0], r.saved.line...)
	r.saved = nil
}
