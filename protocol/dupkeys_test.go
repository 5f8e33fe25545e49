package protocol

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDuplicateKeysRefused(t *testing.T) {
	for _, tc := range []struct {
		msg string
		dup string
	}{
		{`{"id":1,"method":"exec.run","params":{"command":"ls","command":"rm -rf ~"}}`, "command"},
		{`{"id":1,"id":2,"method":"system.ping"}`, "id"},
		{`{"id":1,"method":"x","params":{"env":{"A":"1","A":"2"}}}`, "A"},
		{`{"id":1,"method":"x","params":{"input":[{"key":"Enter","key":"Tab"}]}}`, "key"},
		// A key spelt with an escape is the same key to encoding/json.
		{`{"id":1,"method":"exec.run","params":{"command":"echo FIRST","comm\u0061nd":"echo SECOND"}}`, "command"},
	} {
		req, err := Decode([]byte(tc.msg))
		if assert.NotNil(t, err, tc.msg) {
			assert.Equal(t, CodeInvalidParams, err.Code)
			assert.Contains(t, err.Message, `"`+tc.dup+`" appears twice`)
		}
		// The answer carries the request's id (it was null, so a client
		// with requests in flight could not match it), unless the id
		// itself is the duplicate.
		if tc.dup == "id" {
			assert.Nil(t, req.ID, tc.msg)
		} else {
			assert.Equal(t, "1", string(req.ID), tc.msg)
		}
	}
	// JSON-RPC: a duplicate in params is invalid params (-32602), with the id.
	req, err := Decode([]byte(`{"jsonrpc":"2.0","id":7,"method":"exec.run","params":{"command":"a","command":"b"}}`))
	if assert.NotNil(t, err) {
		assert.Equal(t, RPCInvalidParams, err.rpcNumber())
		assert.Equal(t, "7", string(req.ID))
	}
	for _, ok := range []string{
		`{"id":1,"method":"exec.run","params":{"command":"echo \"command\": x","env":{"command":"y"}}}`,
		`{"id":1,"method":"x","params":{"input":[{"key":"Enter"},{"key":"Tab"}]}}`,
		`{"id":"a\"b","method":"x","params":{"k":"\\","k2":"v"}}`,
	} {
		_, err := Decode([]byte(ok))
		assert.Nil(t, err, ok)
	}
}

func FuzzDuplicateKey(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":{"a":2,"a":3}}`))
	f.Add([]byte(`[{"x":"\"x\":"},{"x":1}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = duplicateKey(b) // never panics, whatever it is given
	})
}

// TestParamNamedInAnotherCase: encoding/json takes "COMMAND" for the
// field command, so {"command":…,"COMMAND":…} ran the second; a parameter
// must now be named exactly, and the error says which name was meant.
func TestParamNamedInAnotherCase(t *testing.T) {
	var p ExecParams
	err := DecodeParams([]byte(`{"command":"echo FIRST","COMMAND":"echo SECOND"}`), &p)
	if assert.Error(t, err) {
		assert.Equal(t, CodeInvalidParams, AsError(err).Code)
		assert.Contains(t, err.Error(), "COMMAND")
		assert.Contains(t, err.Error(), "command")
	}
	assert.Error(t, DecodeParams([]byte(`{"Command":"ls"}`), &p))
	assert.NoError(t, DecodeParams([]byte(`{"command":"ls","env":{"PATH":"/bin","path":"x"}}`), &p), "map keys keep their case")
	assert.Equal(t, map[string]string{"PATH": "/bin", "path": "x"}, p.Env)
}

// TestNestedParamNamedInAnotherCase: inside a nested object the names are
// exact too: {"state":{"aliases":{…},"ALIASES":{…}}} took the second map.
func TestNestedParamNamedInAnotherCase(t *testing.T) {
	var p SessionCreateParams
	err := DecodeParams([]byte(`{"state":{"shell":"bash","aliases":{"tidy":"ls"},"ALIASES":{"tidy":"rm -rf ~"}}}`), &p)
	if assert.Error(t, err) {
		assert.Equal(t, CodeInvalidParams, AsError(err).Code)
		assert.Contains(t, err.Error(), "state.ALIASES")
	}
	err = DecodeParams([]byte(`{"limits":{"Memory_MB":64}}`), &p)
	if assert.Error(t, err) {
		assert.Contains(t, err.Error(), "limits.Memory_MB")
	}
	assert.NoError(t, DecodeParams([]byte(`{"state":{"shell":"bash","aliases":{"TIDY":"ls","tidy":"ls -l"},"env":{"A":"1","a":"2"}}}`), &p), "map keys keep their case")
}
