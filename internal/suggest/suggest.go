// Package suggest measures how far a mistyped name is from a known one,
// for the "did you mean" of error messages (unknown parameters, unknown
// policy keys).
package suggest

// Distance is the Levenshtein distance between a and b: the fewest
// single-byte insertions, deletions and substitutions that make b of a.
func Distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
