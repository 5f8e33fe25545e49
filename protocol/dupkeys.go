package protocol

// duplicateKey returns the first key that appears twice in one object of
// msg, which must be valid JSON (json.Unmarshal accepted it). encoding/json
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
			j := i + 1
			for ; j < len(msg) && msg[j] != '"'; j++ {
				if msg[j] == '\\' {
					j++
				}
			}
			j = min(j, len(msg))
			if expectKey && len(stack) > 0 {
				key := string(msg[i+1 : j]) // escaped form: a key spelt two ways is left to json
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
