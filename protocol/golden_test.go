package protocol_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

var update = flag.Bool("update", false, "rewrite testdata/golden/*.out from the current behaviour")

// goldenOutput is what a golden .in file decodes to: the exact error
// response line for a failing decode, or one line rendering the decoded
// request (with "notification", which tells a JSON-RPC notification from a
// request whose id is null).
func goldenOutput(t *testing.T, in []byte) []byte {
	t.Helper()
	req, perr := protocol.Decode(in)
	if perr != nil {
		return protocol.EncodeError(req, perr)
	}
	rendered := struct {
		Dialect string          `json:"dialect"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Notify  bool            `json:"notification"`
	}{dialectName(req.Dialect), req.ID, req.Method, req.Params, req.IsNotification()}
	if rendered.ID == nil {
		rendered.ID = json.RawMessage(`null`)
	}
	if rendered.Params == nil {
		rendered.Params = json.RawMessage(`null`)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(rendered))
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	ins, err := filepath.Glob(filepath.Join("testdata", "golden", "*.in"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(ins), 12, "golden cases")
	for _, inPath := range ins {
		name := strings.TrimSuffix(filepath.Base(inPath), ".in")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(inPath)
			require.NoError(t, err)
			got := goldenOutput(t, in)
			requireLine(t, got)

			outPath := strings.TrimSuffix(inPath, ".in") + ".out"
			if *update {
				require.NoError(t, os.WriteFile(outPath, got, 0o644))
				return
			}
			want, err := os.ReadFile(outPath)
			require.NoError(t, err, "missing %s; run go test ./protocol -run TestGolden -update", outPath)
			require.Equal(t, string(want), string(got))
		})
	}

	// Every .out has its .in.
	outs, err := filepath.Glob(filepath.Join("testdata", "golden", "*.out"))
	require.NoError(t, err)
	for _, o := range outs {
		_, err := os.Stat(strings.TrimSuffix(o, ".out") + ".in")
		require.NoError(t, err, "%s has no .in", o)
	}
}
