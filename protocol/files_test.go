package protocol_test

import (
	"bytes"
	"encoding/json"
	"strings"
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

func FuzzFSReadResultEncoding(f *testing.F) {
	f.Add("/tmp/f", "text\n", "0644", 3)
	f.Add("\xff\xfe\xc3", "\u2028\u2029\x00\x1f", "\"\\", 0)
	f.Fuzz(func(t *testing.T, path, data, mode string, lines int) {
		r := protocol.FSReadResult{Path: path, Data: strings.Repeat(data, 9000/(len(data)+1)+1), Mode: mode,
			Encoding: "utf-8", Lines: lines, LineOffset: lines / 2, Size: int64(len(data)) << 20}
		m, err := protocol.Result(&protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`1`)}, r)
		if err != nil {
			t.Fatal(err)
		}
		var w bytes.Buffer
		if _, err := m.WriteTo(&w); err != nil {
			t.Fatal(err)
		}
		want := `{"id":1,"ok":true,"data":` + string(reflected(t, r)) + "}\n"
		if w.String() != want || string(m.Bytes()) != want {
			t.Fatalf("encoding differs from encoding/json for %q %q %q %d", path, data, mode, lines)
		}
	})
}
