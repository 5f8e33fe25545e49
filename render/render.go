// Package render turns terminal output into the text a reader of a log
// sees, for models that should not be fed escape sequences: escape
// sequences are removed, a line redrawn with carriage returns (a progress
// bar, a spinner) keeps only its last state, backspaces take back what
// they erased, and what a program draws between saving and restoring the
// cursor (apt's bottom-row progress bar) is dropped.
//
// It is a line model, not a screen: cursor moves between rows are ignored,
// so a full-screen program's output is better read from package screen.
package render

import (
	"unicode/utf8"
	"unsafe"

	"github.com/charmbracelet/x/ansi"
)

// maxLine bounds the line being built; a longer line is cut into pieces.
const maxLine = 16 << 10

// Renderer renders a stream: Write as bytes arrive, Take the finished
// lines, Flush at the end for the last, unfinished one. The zero value is
// not usable; call New. A Renderer is not safe for concurrent use.
type Renderer struct {
	p     *ansi.Parser
	line  []rune
	col   int
	saved *savedLine
	out   []byte
}

type savedLine struct {
	line []rune
	col  int
}

// New returns a renderer.
func New() *Renderer {
	r := &Renderer{}
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

// Flush returns the finished lines and the line being built, and starts
// afresh.
func (r *Renderer) Flush() []byte {
	out := r.Take()
	if len(r.line) > 0 {
		out = appendRunes(out, r.line)
	}
	r.line, r.col, r.saved = r.line[:0], 0, nil
	r.p.Reset()
	return out
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

func (r *Renderer) newline() {
	r.out = appendRunes(r.out, r.line)
	r.out = append(r.out, '\n')
	r.line, r.col = r.line[:0], 0
	r.saved = nil
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
	switch cmd.Final() {
	case 'K':
		// Erase in line: to the end (0), to the start (1), all (2).
		switch m, _, _ := ps.Param(0, 0); m {
		case 0:
			r.line = r.line[:min(r.col, len(r.line))]
		case 1:
			for i := 0; i <= r.col && i < len(r.line); i++ {
				r.line[i] = ' '
			}
		case 2:
			r.line = r.line[:0]
		}
	case 'G', '`':
		r.col = min(n-1, maxLine-1)
	case 'C':
		r.col = min(r.col+n, maxLine-1)
	case 'D':
		r.col = max(r.col-n, 0)
	case 'P':
		// Delete characters (readline's backspace at a line's middle).
		if r.col < len(r.line) {
			n = min(n, len(r.line)-r.col)
			r.line = append(r.line[:r.col], r.line[r.col+n:]...)
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
	}
}

// save and restore bracket a status line drawn elsewhere on the screen:
// what was drawn in between is not part of the log.
func (r *Renderer) save() {
	r.saved = &savedLine{line: append([]rune(nil), r.line...), col: r.col}
}

func (r *Renderer) restore() {
	if r.saved == nil {
		return
	}
	r.line, r.col = append(r.line[:0], r.saved.line...), r.saved.col
	r.saved = nil
}
