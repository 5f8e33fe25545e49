package runtime

import (
	"maps"
	"slices"
)

// Methods returns the name of every method the table answers, sorted. The
// documentation's tests check each appears in the README and the protocol
// reference, so that the two cannot drift from the table.
func Methods() []string { return slices.Sorted(maps.Keys(methods)) }
