package bench

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDecodeOutput(t *testing.T) {
	tests := []struct {
		name string
		line string
		ok   bool
	}{
		{"plain", `{"method":"exec.output","params":{"stream_id":"st-1","seq":3,"stream":"stdout","data":"hi","offset":10}}`, true},
		{"escapes", `{"method":"exec.output","params":{"stream_id":"st-1","seq":0,"stream":"stdout","data":"a\nb\t\"q\"\\\/\u00e9\ud83d\ude00\ud800x\u0001","offset":0}}` + "\n", true},
		{"jsonrpc", `{"jsonrpc":"2.0","method":"exec.output","params":{"stream_id":"st-1","seq":1,"stream":"stderr","data":"e","offset":5,"lost_bytes":7}}`, true},
		{"exit is not output", `{"method":"exec.exit","params":{"stream_id":"st-1","exit_code":0}}`, false},
		{"response", `{"id":1,"ok":true,"data":{}}`, false},
		{"whitespace", `{ "method":"exec.output","params":{}}`, false},
		{"unknown field", `{"method":"exec.output","params":{"stream_id":"st-1","extra":1}}`, false},
		{"truncated", `{"method":"exec.output","params":{"data":"abc`, false},
		{"bad escape", `{"method":"exec.output","params":{"data":"\x"}}`, false},
		{"trailing junk", `{"method":"exec.output","params":{}}x`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := decodeOutput([]byte(tt.line))
			require.Equal(t, tt.ok, ok)
			if !ok {
				return
			}
			var m message
			require.NoError(t, json.Unmarshal([]byte(tt.line), &m))
			m.Params.Method = m.Method
			assert.Equal(t, m.Params, n)
		})
	}
}

// FuzzDecodeOutput checks the fast decoder against encoding/json: on
// notifications the daemon could write, and on any line it accepts.
func FuzzDecodeOutput(f *testing.F) {
	f.Add("hi\n", `{"method":"exec.output","params":{"data":"x"}}`)
	f.Add("\u00e9\U0001F600\x01\"\\", `{"method":"exec.output","params":{"data":"\ud800\udc00\ud800"}}`)
	f.Fuzz(func(t *testing.T, data, line string) {
		b, err := json.Marshal(map[string]any{"method": "exec.output", "params": map[string]any{
			"stream_id": "st-1", "seq": 1, "stream": "stdout", "data": data, "offset": 2}})
		require.NoError(t, err)
		n, ok := decodeOutput(b)
		require.True(t, ok, "%s", b)
		want := strings.ToValidUTF8(data, "\uFFFD")
		if utf8.ValidString(data) {
			assert.Equal(t, want, n.Data)
		}

		// Any line the fast path accepts decodes as encoding/json would
		// (for valid UTF-8 without raw control bytes, which the daemon
		// never writes and encoding/json rejects or replaces).
		if n, ok := decodeOutput([]byte(line)); ok && utf8.ValidString(line) && !strings.ContainsFunc(line, func(r rune) bool { return r < 0x20 }) {
			var m message
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("fast path accepted %q, encoding/json: %v", line, err)
			}
			if m.Params == nil {
				m.Params = &Note{}
			}
			m.Params.Method = m.Method
			assert.Equal(t, m.Params, n, "%q", line)
		}
	})
}
