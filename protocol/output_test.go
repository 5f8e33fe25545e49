package protocol

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The fast exec.output encoder must mean exactly what the general one
// means.
func FuzzOutputEncoding(f *testing.F) {
	for _, s := range []string{"", "plain ascii text", "a\"b\\c\nd\re\tf\x00\x1f\x7f", "中文字 ünï",
		"\xff\xfe invalid", "\u2028\u2029", strings.Repeat("x", 100) + "\x01" + strings.Repeat("y", 9), "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		n := OutputNotification{StreamID: "st-1", Seq: 3, Stream: "stdout", Data: data, Offset: 42, LostBytes: int64(len(data) % 2)}
		for _, d := range []Dialect{TRL, JSONRPC} {
			fast := encodeOutput(nil, d, &n)
			body, err := marshal(n)
			require.NoError(t, err)
			var got, want map[string]any
			require.NoError(t, json.Unmarshal(fast, &got), "%q", fast)
			require.Equal(t, byte('\n'), fast[len(fast)-1])
			require.Equal(t, 1, strings.Count(string(fast), "\n"))
			require.NoError(t, json.Unmarshal(body, &want))
			require.Equal(t, want, got["params"])
			require.Equal(t, "exec.output", got["method"])
		}
	})
}
