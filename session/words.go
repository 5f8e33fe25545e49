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
