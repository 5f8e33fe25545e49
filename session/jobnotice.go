package session

import "bytes"

// splitNotices takes bash's job notices out of a command's stderr bytes:
// "[1]+  Done                    sleep 1" is bash telling that a
// background job ended, printed whenever bash reaps it — often in the
// middle of a later command, on that command's stderr, since bash's own
// stderr is the command's while it runs. A notice is the shell's, not the
// command's: it goes to the session's idle output (session.output), where
// a background job's own output goes, and stays on the screen, where a
// person sees it. A notice is one write of bash's, so one read of the pipe
// holds it whole.
//
// open says a notice's text went on past the last bytes split (a quote
// open at their end: bash writes a notice's lines apart); it is
// returned for the next bytes.
func splitNotices(p []byte, open bool) (rest, notices []byte, stillOpen bool) {
	if !open && bytes.IndexByte(p, '[') < 0 {
		return p, nil, false
	}
	out := p[:0:0]
	for line := p; len(line) > 0; {
		end := bytes.IndexByte(line, '\n')
		if end < 0 {
			end = len(line) - 1
		}
		l := line[:end+1]
		line = line[end+1:]
		switch {
		case open:
			// A command text with a newline in quotes (sh -c "a
			// b" &) is printed as it is, over several lines.
			notices = append(notices, l...)
			open = quoteOpen(l, true)
		case isNotice(l):
			notices = append(notices, l...)
			open = quoteOpen(l, false)
		default:
			out = append(out, l...)
		}
	}
	if notices == nil {
		return p, nil, false
	}
	return out, notices, open
}

// isNotice matches bash's job line: "[N]", then '+', '-' or ' ', two
// spaces, the status padded to 22 columns ("Done", "Exit 1",
// "Terminated"), two spaces, and the command, ending in a newline. A
// status longer than its column is not matched (nor taken from a
// command's own output).
func isNotice(l []byte) bool {
	if len(l) < 7 || l[0] != '[' || l[len(l)-1] != '\n' {
		return false
	}
	i := 1
	for i < len(l) && l[i] >= '0' && l[i] <= '9' {
		i++
	}
	if i == 1 || i+2 >= len(l) || l[i] != ']' {
		return false
	}
	switch l[i+1] {
	case '+', '-', ' ':
	default:
		return false
	}
	const statusWidth = 22
	st := i + 4 // the status's first column
	if st+statusWidth+3 > len(l) || string(l[i+2:st]) != "  " || l[st] == ' ' {
		return false
	}
	status := bytes.TrimRight(l[st:st+statusWidth], " ")
	return bytes.IndexByte(status, '\n') < 0 && l[st+statusWidth] == ' ' && l[st+statusWidth+1] == ' ' && l[st+statusWidth+2] != ' '
}

// quoteOpen reports whether a quote is still open at the end of line l of
// a notice's command text (bash prints a job's text with its quotes):
// cont says l continues a quote opened on the notice's line before. The
// quote's kind is not carried over: a continued line is read as inside
// the quote that closes first, which is right for the text bash prints
// (one quote open across a line).
func quoteOpen(l []byte, cont bool) bool {
	var q byte
	if cont {
		// Inside the open quote: it closes at its first unescaped ' or ".
		for i := 0; i < len(l); i++ {
			if l[i] == '\\' {
				i++
				continue
			}
			if l[i] == '"' || l[i] == '\'' {
				return quoteOpen(l[i+1:], false)
			}
		}
		return true
	}
	for i := 0; i < len(l); i++ {
		c := l[i]
		switch {
		case q == 0 && c == '\\':
			i++
		case q == 0 && (c == '"' || c == '\''):
			q = c
		case q == '"' && c == '\\':
			i++
		case q != 0 && c == q:
			q = 0
		}
	}
	return q != 0
}
