package protocol_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// requireLine checks that b is exactly one line of UTF-8 JSON: it ends in
// "\n", holds no other newline, and parses as one JSON object. It returns
// the object's members as raw messages so callers can compare bytes.
func requireLine(t testing.TB, b []byte) map[string]json.RawMessage {
	t.Helper()
	require.NotEmpty(t, b)
	require.Equal(t, byte('\n'), b[len(b)-1], "line must end in a newline: %q", b)
	require.Equal(t, 1, bytes.Count(b, []byte("\n")), "exactly one newline: %q", b)
	require.NotContains(t, string(b), "\r", "no carriage return: %q", b)
	require.True(t, utf8.Valid(b), "output must be UTF-8: %q", b)
	require.True(t, json.Valid(b), "output must be valid JSON: %q", b)
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &m), "output must be a JSON object: %q", b)
	return m
}

// lineValid is requireLine as a predicate, for the fuzzers, which must not
// depend on require inside property checks.
func lineValid(b []byte) bool {
	if len(b) == 0 || b[len(b)-1] != '\n' || bytes.Count(b, []byte("\n")) != 1 {
		return false
	}
	if !utf8.Valid(b) || !json.Valid(b) {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal(b, &m) == nil
}

// keys returns the member names of m.
func keys(m map[string]json.RawMessage) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// rpcNumber encodes e as a JSON-RPC error and returns error.code, whatever
// dialect req came in.
func rpcNumber(t testing.TB, req *protocol.Request, e *protocol.Error) int {
	t.Helper()
	r := *req
	r.Dialect = protocol.JSONRPC
	m := requireLine(t, protocol.EncodeError(&r, e))
	var body struct {
		Error struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	line, err := json.Marshal(m)
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(line, &body))
	return body.Error.Code
}

// idOrNull is the id as it must appear in a response to req.
func idOrNull(req *protocol.Request) string {
	if req.ID == nil {
		return "null"
	}
	return string(req.ID)
}
