package console

// Why the console adds carriage returns: trl turns the terminal's ONLCR
// off (commands' output carries bare "\n", as it would through a pipe),
// and the session's screen model is built with screen.Options.NewlineCR,
// so a line feed there also returns the carriage. A browser's xterm.js,
// or `asciinema play` on a real terminal, fed the same bytes would draw a
// staircase. So every byte stream the console hands out (a live viewer's
// frames, a recording's "o" events) goes through onlcr first, and what a
// person sees row for row is what session.screen reports.
//
// It is done to the bytes, not by xterm.js's convertEol, so that the
// recording is right for any player: an asciicast holds what a terminal
// with ONLCR would have received. Like the kernel's ONLCR it knows nothing
// of escape sequences; a CR before a line feed inside a CSI sequence is
// executed there as the line feed is, and inside an OSC or DCS string a
// terminal ignores both, so the translation is exact for what is drawn.
// Raw-mode programs (vi, top) position the cursor themselves and mostly
// write CR LF already: "\r\r\n" draws as "\r\n".
//
// VT and FF are line feeds to the screen model (and to xterm.js) too, so
// they get the same carriage return.

// onlcr appends p to dst with "\r" before each "\n", "\v" and "\f".
func onlcr(dst, p []byte) []byte {
	for {
		i := indexLF(p)
		if i < 0 {
			return append(dst, p...)
		}
		dst = append(dst, p[:i]...)
		dst = append(dst, '\r', p[i])
		p = p[i+1:]
	}
}

// indexLF is the index of the first "\n", "\v" or "\f" in p, or -1.
func indexLF(p []byte) int {
	for i, b := range p {
		if b == '\n' || b == '\v' || b == '\f' {
			return i
		}
	}
	return -1
}
