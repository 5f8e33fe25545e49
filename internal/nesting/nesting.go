// Package nesting bounds what trl hands to the shell parser
// (mvdan.cc/sh): the parser recurses once per level of nested
// parentheses, so a line of a million nested `$(` overflowed the
// daemon's stack and crashed it, and fifty thousand took gigabytes. No
// line a person writes nests this deep; a line that does is not parsed.
package nesting

// Max is the deepest a line's parentheses may nest to be parsed.
const Max = 200

// Depth is the deepest that src's parentheses nest, quotes ignored (a
// line with more in its strings is counted as nested all the same).
func Depth(src string) int {
	depth, deepest := 0, 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '(':
			if depth++; depth > deepest {
				deepest = depth
			}
		case ')':
			depth = max(depth-1, 0)
		}
	}
	return deepest
}
