package protocol_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/protocol"
)

// fs.read's chunk is encoded by hand: it equals encoding/json, whole and
// in pieces, with and without the line fields.
func TestFSReadResultEncodesAsReflection(t *testing.T) {
	for i, st := range statuses() {
		for _, r := range []protocol.FSReadResult{
			{Path: "/tmp/\"odd\"\u2028name", Size: 1 << 40, Offset: 3, Length: int64(len(st.Stdout)), Data: st.Stdout,
				Encoding: "utf-8", Complete: true, Mode: "0644", MTime: "2026-11-24T20:00:00Z"},
			{Path: "/x", Data: st.Stderr, Encoding: "base64", LineOffset: 7, Lines: 2},
		} {
			want := `{"id":7,"ok":true,"data":` + string(reflected(t, r)) + "}\n"
			for _, data := range []any{r, &r} {
				m, err := protocol.Result(&protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`7`)}, data)
				require.NoError(t, err)
				var w chunkedWriter
				_, err = m.WriteTo(&w)
				require.NoError(t, err)
				require.Equal(t, want, w.String(), "chunk %d", i)
				require.Equal(t, want, string(m.Bytes()), "chunk %d", i)
			}
		}
	}
}
