package session

import (
	"bytes"
	"strings"
)

// sourceName takes trl's command file out of what bash says about a
// command. bash runs each command by sourcing a file (see dialect.source),
// so its messages name it: "bash: /tmp/trl-d…/command: line 1: syntax
// error near unexpected token `)'", then the line again. A person who
// typed the line sees "bash: syntax error near unexpected token `)'"; a
// command of several lines keeps the line number ("bash: line 3: …"), as
// `bash -c` shows it. Each message is one write of bash's, so one read of
// the stderr pipe holds it whole; a message split across reads is left as
// it is.
type sourceName struct {
	prefix []byte // "<command file>: line "
	quote  []byte // "`<command>'\n", bash's repeat of a one-line command
	single bool
}

func newSourceName(cmdFile, text string) *sourceName {
	single := !strings.Contains(strings.TrimRight(text, "\n"), "\n")
	sn := &sourceName{prefix: []byte(cmdFile + ": line "), single: single}
	if single {
		sn.quote = []byte("`" + strings.TrimRight(text, "\n") + "'\n")
	}
	return sn
}

// scrub returns p without the command file's name; p itself when it does
// not hold it (the common case costs one search).
func (sn *sourceName) scrub(p []byte) []byte {
	i := bytes.Index(p, sn.prefix)
	if i < 0 {
		return p
	}
	out := make([]byte, 0, len(p))
	for i >= 0 {
		j := i + len(sn.prefix)
		k := j
		for k < len(p) && p[k] >= '0' && p[k] <= '9' {
			k++
		}
		if k == j || k+2 > len(p) || p[k] != ':' || p[k+1] != ' ' {
			// Not bash's "line N: ": keep it.
			out = append(out, p[:j]...)
			p = p[j:]
			i = bytes.Index(p, sn.prefix)
			continue
		}
		rest := p[k+2:]
		if sn.single {
			if bytes.HasPrefix(rest, sn.quote) {
				// The repeat of the line a person just typed: bash says
				// nothing of the kind at its prompt. Drop the whole
				// message, its "bash: " included.
				start := bytes.LastIndexByte(p[:i], '\n') + 1
				out = append(out, p[:start]...)
				p = rest[len(sn.quote):]
			} else {
				out = append(out, p[:i]...)
				p = rest
			}
		} else {
			out = append(out, p[:i]...)
			p = p[j-len("line "):] // keep "line N: "
		}
		i = bytes.Index(p, sn.prefix)
	}
	return append(out, p...)
}
