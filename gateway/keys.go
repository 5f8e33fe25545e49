package gateway

import (
	"strconv"
	"strings"
)

// joinKey joins ids into one key that no other list of ids gives: each
// is prefixed with its length. Joining with a separator byte was
// ambiguous once an id could hold that byte (issue 23 §4: tenant "q\x00r"
// with call "c" was tenant "q" with call "r\x00c", and the same held for
// the session and isolation keys, so a tenant could name its way into
// another's session, uid or answers).
func joinKey(ids ...string) string {
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(strconv.Itoa(len(id)))
		b.WriteByte(':')
		b.WriteString(id)
	}
	return b.String()
}
