package protocol

import (
	"bytes"
	"encoding/json"
)

// duplicateKey returns the first key that appears twice in one object of
// msg, escapes decoded ("comm\u0061nd" is command); msg must be valid
// JSON (json.Unmarshal accepted it). encoding/json
// keeps the last of duplicate keys, so {"command":"ls","command":"rm -rf
// ~"} would run what a reviewer of the first key did not read; trl refuses
// such a request instead. It scans without allocating for objects of up to
// 16 keys.
func duplicateKey(msg []byte) (string, bool) {
	type frame struct {
		object bool
		keys   []string
		small  [16]string
	}
	var stack []frame
	var buf [8]frame
	stack = buf[:0]
	expectKey := false
	for i := 0; i < len(msg); i++ {
		switch c := msg[i]; c {
		case '{':
			stack = append(stack, frame{object: true})
			f := &stack[len(stack)-1]
			f.keys = f.small[:0]
			expectKey = true
		case '[':
			stack = append(stack, frame{})
			expectKey = false
		case '}', ']':
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(stack) > 0 && stack[len(stack)-1].object
		case '"':
			j := stringEnd(msg, i)
			if expectKey && len(stack) > 0 {
				key := unescapedKey(msg, i, j)
				f := &stack[len(stack)-1]
				for _, k := range f.keys {
					if k == key {
						return key, true
					}
				}
				f.keys = append(f.keys, key)
				expectKey = false
			}
			i = j
		}
	}
	return "", false
}

// unescapedKey is the key quoted at msg[open:end+1] as json reads it: a
// key with an escape is decoded (it costs an allocation, only then).
func unescapedKey(msg []byte, open, end int) string {
	raw := msg[open+1 : end]
	if bytes.IndexByte(raw, '\\') < 0 || end >= len(msg) {
		return string(raw)
	}
	var k string
	if json.Unmarshal(msg[open:end+1], &k) != nil {
		return string(raw)
	}
	return k
}

// topKeys calls fn with each key of the JSON object obj (not of the
// objects inside it), escapes decoded, until fn returns false. obj must
// be valid JSON.
func topKeys(obj []byte, fn func(key string) bool) {
	depth := 0
	expectKey := false
	for i := 0; i < len(obj); i++ {
		switch obj[i] {
		case '{', '[':
			depth++
			expectKey = depth == 1 && obj[i] == '{'
		case '}', ']':
			depth--
			expectKey = false
		case ',':
			expectKey = depth == 1
		case '"':
			j := stringEnd(obj, i)
			if expectKey && !fn(unescapedKey(obj, i, j)) {
				return
			}
			expectKey = false
			i = j
		}
	}
}

// stringEnd is the index of the quote that ends the JSON string opened at
// b[open], or len(b) when it is not closed.
func stringEnd(b []byte, open int) int {
	j := open + 1
	for ; j < len(b) && b[j] != '"'; j++ {
		if b[j] == '\\' {
			j++
		}
	}
	return min(j, len(b))
}
