package session

import (
	"fmt"
	"strings"
)

// shellLines splits text a shell printed in its own quoting (dash's
// `set`, `export -p`, `readonly -p`, `alias`) into lines of words. A line
// ends at a newline outside quotes; words are separated by blanks outside
// quotes. Single quotes keep everything up to the next one; double quotes
// keep everything but a backslash before $ ` " \ or newline; outside
// quotes a backslash keeps the next byte. No expansion is done: a shell's
// listing holds none unquoted.
func shellLines(text string) ([][]string, error) {
	var lines [][]string
	var words []string
	var w strings.Builder
	inWord := false
	end := func() {
		if inWord {
			words = append(words, w.String())
			w.Reset()
			inWord = false
		}
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch c {
		case '\n':
			end()
			if len(words) > 0 {
				lines = append(lines, words)
			}
			words = nil
		case ' ', '\t':
			end()
		case '\'':
			j := strings.IndexByte(text[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote")
			}
			w.WriteString(text[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case '"':
			inWord = true
			i++
			for ; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' && i+1 < len(text) && strings.IndexByte("$`\"\\\n", text[i+1]) >= 0 {
					i++
				}
				w.WriteByte(text[i])
			}
			if i >= len(text) {
				return nil, fmt.Errorf("unterminated double quote")
			}
		case '\\':
			inWord = true
			if i+1 < len(text) {
				i++
				w.WriteByte(text[i])
			}
		default:
			inWord = true
			w.WriteByte(c)
		}
	}
	end()
	if len(words) > 0 {
		lines = append(lines, words)
	}
	return lines, nil
}

// declared is one line of bash's `declare -p`.
type declared struct {
	flags, name string
	set         bool // it has a value (`declare -- x` has none)
	value       string
	compound    bool // an array: keys and values
	keys, vals  []string
}

// parseDeclare parses bash's `declare -p` listing. Values are in double
// quotes (\ escapes " \ $ `), in $'...' (ANSI-C escapes) when they hold
// control characters, single-quoted or bare; arrays are ([key]=value ...).
// Older bash prints a newline inside double quotes as it is: a line ends
// only outside quotes.
func parseDeclare(text string) ([]declared, error) {
	p := &wordParser{s: text}
	out := make([]declared, 0, strings.Count(text, "\ndeclare -")+1)
	for {
		p.skip(" \t\n")
		if p.i >= len(p.s) {
			return out, nil
		}
		if strings.HasPrefix(p.s[p.i:], "local -\n") {
			// The shell options a function saved with `local -`.
			p.i += len("local -\n")
			continue
		}
		if !strings.HasPrefix(p.s[p.i:], "declare -") {
			return nil, fmt.Errorf("declare -p: unexpected %q", clipText(p.s[p.i:], 40))
		}
		p.i += len("declare ")
		var d declared
		d.flags = strings.TrimPrefix(p.until(" "), "-")
		p.skip(" ")
		d.name = p.until("=\n")

		if p.i < len(p.s) && p.s[p.i] == '=' {
			p.i++
			d.set = true
			if p.i < len(p.s) && p.s[p.i] == '(' {
				p.i++
				d.compound = true
				for {
					p.skip(" ")
					if p.i >= len(p.s) {
						return nil, fmt.Errorf("declare -p: unterminated array %s", d.name)
					}
					if p.s[p.i] == ')' {
						p.i++
						break
					}
					if p.s[p.i] != '[' {
						return nil, fmt.Errorf("declare -p: array %s: unexpected %q", d.name, clipText(p.s[p.i:], 20))
					}
					p.i++
					k, err := p.word("]")
					if err != nil {
						return nil, err
					}
					if !strings.HasPrefix(p.s[p.i:], "]=") {
						return nil, fmt.Errorf("declare -p: array %s: no ]= after a key", d.name)
					}
					p.i += 2
					v, err := p.word(" )")
					if err != nil {
						return nil, err
					}
					d.keys, d.vals = append(d.keys, k), append(d.vals, v)
				}
			} else {
				v, err := p.word("\n")
				if err != nil {
					return nil, err
				}
				d.value = v
			}
		}
		out = append(out, d)
	}
}

type wordParser struct {
	s string
	i int
}

func (p *wordParser) skip(set string) {
	for p.i < len(p.s) && strings.IndexByte(set, p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *wordParser) until(stop string) string {
	j := p.i
	k := strings.IndexAny(p.s[j:], stop)
	if k < 0 {
		k = len(p.s) - j
	}
	p.i = j + k
	return p.s[j:p.i]
}

// word reads one shell word up to an unquoted byte of stop.
func (p *wordParser) word(stop string) (string, error) {
	// Most values are one double-quoted string without a backslash: that
	// is a piece of the text as it is, no copy needed.
	if p.i < len(p.s) && p.s[p.i] == '"' {
		if j := strings.IndexAny(p.s[p.i+1:], "\"\\"); j >= 0 && p.s[p.i+1+j] == '"' {
			end := p.i + 1 + j + 1
			if end == len(p.s) || strings.IndexByte(stop, p.s[end]) >= 0 {
				v := p.s[p.i+1 : end-1]
				p.i = end
				return v, nil
			}
		}
	}
	var b strings.Builder
	for p.i < len(p.s) && strings.IndexByte(stop, p.s[p.i]) < 0 {
		switch c := p.s[p.i]; {
		case c == '"':
			p.i++
			for {
				j := strings.IndexAny(p.s[p.i:], "\"\\")
				if j < 0 {
					return "", fmt.Errorf("unterminated double quote")
				}
				b.WriteString(p.s[p.i : p.i+j])
				p.i += j
				if p.s[p.i] == '"' {
					p.i++
					break
				}
				// A backslash: it escapes only " \ $ and `.
				if p.i+1 < len(p.s) && strings.IndexByte("\"\\$`", p.s[p.i+1]) >= 0 {
					p.i++
				}
				b.WriteByte(p.s[p.i])
				p.i++
			}
		case c == '\'':
			j := strings.IndexByte(p.s[p.i+1:], '\'')
			if j < 0 {
				return "", fmt.Errorf("unterminated single quote")
			}
			b.WriteString(p.s[p.i+1 : p.i+1+j])
			p.i += j + 2
		case c == '$' && p.i+1 < len(p.s) && p.s[p.i+1] == '\'':
			p.i += 2
			if err := p.ansiC(&b); err != nil {
				return "", err
			}
		case c == '\\' && p.i+1 < len(p.s):
			b.WriteByte(p.s[p.i+1])
			p.i += 2
		default:
			b.WriteByte(c)
			p.i++
		}
	}
	return b.String(), nil
}

// ansiC decodes the body of $'...' up to its closing quote, as bash does.
func (p *wordParser) ansiC(b *strings.Builder) error {
	for p.i < len(p.s) {
		j := strings.IndexAny(p.s[p.i:], "'\\")
		if j < 0 {
			break
		}
		b.WriteString(p.s[p.i : p.i+j])
		p.i += j
		if p.s[p.i] == '\'' {
			p.i++
			return nil
		}
		if p.i+1 >= len(p.s) {
			break
		}
		p.i++
		e := p.s[p.i]
		p.i++
		switch e {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(e)
		case 'c':
			if p.i < len(p.s) {
				b.WriteByte(p.s[p.i] & 0x1f)
				p.i++
			}
		case '0', '1', '2', '3', '4', '5', '6', '7':
			n := int(e - '0')
			for k := 0; k < 2 && p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '7'; k++ {
				n = n*8 + int(p.s[p.i]-'0')
				p.i++
			}
			b.WriteByte(byte(n))
		case 'x', 'u', 'U':
			max := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			n, k := 0, 0
			for ; k < max && p.i < len(p.s) && isHex(p.s[p.i]); k++ {
				n = n*16 + hexVal(p.s[p.i])
				p.i++
			}
			switch {
			case k == 0:
				b.WriteByte('\\')
				b.WriteByte(e)
			case e == 'x':
				b.WriteByte(byte(n))
			default:
				b.WriteRune(rune(n))
			}
		default:
			b.WriteByte('\\')
			b.WriteByte(e)
		}
	}
	return fmt.Errorf("unterminated $'")
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func hexVal(c byte) int {
	switch {
	case c >= 'a':
		return int(c-'a') + 10
	case c >= 'A':
		return int(c-'A') + 10
	}
	return int(c - '0')
}
