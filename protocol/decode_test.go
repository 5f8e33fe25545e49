package protocol_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// decodeCase is one message for Decode. For a successful decode, id and
// params are the raw bytes expected ("" meaning nil); for a failing one,
// rpc is the JSON-RPC number the error is sent with and id the id the
// partial request keeps for the error response.
type decodeCase struct {
	name    string
	in      string
	dialect protocol.Dialect
	id      string
	method  string
	params  string
	notify  bool
	rpc     int // 0: success
	// msgHas is a substring the error message must contain.
	msgHas string
}

var (
	deepArrays = strings.Repeat("[", 10000)
	hugeDigits = "1" + strings.Repeat("0", 100000)
)

var decodeCases = []decodeCase{
	// TRL dialect, ids.
	{name: "trl string id", in: `{"id":"req-001","method":"session.create","params":{"shell":"bash"}}`,
		id: `"req-001"`, method: "session.create", params: `{"shell":"bash"}`},
	{name: "trl numeric id", in: `{"id":1,"method":"system.ping"}`, id: `1`, method: "system.ping"},
	{name: "trl zero id", in: `{"id":0,"method":"system.ping"}`, id: `0`, method: "system.ping"},
	{name: "trl negative id", in: `{"id":-42,"method":"system.ping"}`, id: `-42`, method: "system.ping"},
	{name: "trl big integer id", in: `{"id":12345678901234567890,"method":"system.ping"}`,
		id: `12345678901234567890`, method: "system.ping"},
	{name: "trl float exponent id", in: `{"id":1.5e3,"method":"system.ping"}`, id: `1.5e3`, method: "system.ping"},
	{name: "trl odd float id", in: `{"id":-0.50E-02,"method":"system.ping"}`, id: `-0.50E-02`, method: "system.ping"},
	{name: "trl huge exponent id", in: `{"id":1e99999,"method":"system.ping"}`, id: `1e99999`, method: "system.ping"},
	{name: "trl huge digits id", in: `{"id":` + hugeDigits + `,"method":"system.ping"}`, id: hugeDigits, method: "system.ping"},
	{name: "trl escaped string id kept verbatim", in: `{"id":"a\u00e9\"b\\<","method":"system.ping"}`,
		id: `"a\u00e9\"b\\<"`, method: "system.ping"},
	{name: "trl empty string id", in: `{"id":"","method":"system.ping"}`, id: `""`, method: "system.ping"},
	{name: "trl missing id", in: `{"method":"system.ping"}`, method: "system.ping"},
	{name: "trl null id", in: `{"id":null,"method":"system.ping"}`, method: "system.ping"},
	{name: "trl id object", in: `{"id":{"a":1},"method":"system.ping"}`, rpc: protocol.RPCInvalidRequest, msgHas: `"id"`},
	{name: "trl id array", in: `{"id":[1],"method":"system.ping"}`, rpc: protocol.RPCInvalidRequest, msgHas: `"id"`},
	{name: "trl id true", in: `{"id":true,"method":"system.ping"}`, rpc: protocol.RPCInvalidRequest, msgHas: `"id"`},
	{name: "trl id false", in: `{"id":false,"method":"system.ping"}`, rpc: protocol.RPCInvalidRequest, msgHas: `"id"`},

	// Params.
	{name: "params absent", in: `{"id":1,"method":"session.list"}`, id: `1`, method: "session.list"},
	{name: "params null", in: `{"id":1,"method":"session.list","params":null}`, id: `1`, method: "session.list"},
	{name: "params empty object", in: `{"id":1,"method":"session.list","params":{}}`, id: `1`, method: "session.list", params: `{}`},
	{name: "params nested object", in: `{"id":1,"method":"exec.run","params":{"session_id":"s-1","command":"echo <&>","env":{"A":"1"}}}`,
		id: `1`, method: "exec.run", params: `{"session_id":"s-1","command":"echo <&>","env":{"A":"1"}}`},
	{name: "params array", in: `{"id":1,"method":"exec.run","params":["s-1","ls"]}`, id: `1`,
		rpc: protocol.RPCInvalidParams, msgHas: `"params" must be a JSON object`},
	{name: "params string", in: `{"id":"x","method":"exec.run","params":"ls"}`, id: `"x"`,
		rpc: protocol.RPCInvalidParams, msgHas: `"params" must be a JSON object`},
	{name: "params number", in: `{"id":2,"method":"exec.run","params":5}`, id: `2`, rpc: protocol.RPCInvalidParams},
	{name: "params bool", in: `{"id":2,"method":"exec.run","params":true}`, id: `2`, rpc: protocol.RPCInvalidParams},
	{name: "params huge number inside", in: `{"id":1,"method":"exec.run","params":{"timeout_s":1e999999,"n":` + hugeDigits + `}}`,
		id: `1`, method: "exec.run", params: `{"timeout_s":1e999999,"n":` + hugeDigits + `}`},
	{name: "params deeply nested arrays", in: `{"id":1,"method":"exec.run","params":{"a":` + deepArrays + `}}`,
		rpc: protocol.RPCParseError},
	{name: "params deeply nested unterminated", in: `{"id":1,"method":"exec.run","params":` + deepArrays,
		rpc: protocol.RPCParseError},
	{name: "params nested within depth limit",
		in: `{"id":1,"method":"exec.run","params":{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}}`,
		id: `1`, method: "exec.run",
		params: `{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`},

	// Method.
	{name: "method missing", in: `{"id":1}`, id: `1`, rpc: protocol.RPCInvalidRequest, msgHas: `no "method"`},
	{name: "method null", in: `{"id":1,"method":null}`, id: `1`, rpc: protocol.RPCInvalidRequest},
	{name: "method empty", in: `{"id":1,"method":""}`, id: `1`, rpc: protocol.RPCInvalidRequest, msgHas: `non-empty string`},
	{name: "method number", in: `{"id":1,"method":5}`, id: `1`, rpc: protocol.RPCInvalidRequest, msgHas: `non-empty string`},
	{name: "method object", in: `{"id":1,"method":{}}`, id: `1`, rpc: protocol.RPCInvalidRequest},
	{name: "method unknown is not a decode error", in: `{"id":1,"method":"no.such"}`, id: `1`, method: "no.such"},
	{name: "method with NUL escape", in: `{"id":"x\u0000","method":"a\u0000b"}`, id: `"x\u0000"`, method: "a\x00b"},
	{name: "method invalid UTF-8", in: "{\"id\":1,\"method\":\"a\xffb\"}", id: `1`, method: "a\uFFFDb"},

	// Invalid UTF-8 and NUL.
	{name: "id invalid UTF-8 becomes U+FFFD", in: "{\"id\":\"r\xff\xfe-1\",\"method\":\"system.ping\"}",
		id: "\"r\uFFFD-1\"", method: "system.ping"}, // a run of bad bytes is one U+FFFD
	{name: "params invalid UTF-8 kept raw", in: "{\"id\":1,\"method\":\"exec.run\",\"params\":{\"command\":\"\xc3\"}}",
		id: `1`, method: "exec.run", params: "{\"command\":\"\xc3\"}"},
	{name: "raw NUL byte in string", in: "{\"id\":1,\"method\":\"a\x00b\"}", rpc: protocol.RPCParseError},
	{name: "raw newline in string", in: "{\"id\":1,\"method\":\"a\nb\"}", rpc: protocol.RPCParseError},

	// Layout.
	{name: "pretty printed over lines", in: "\n  {\n  \"id\": 3,\n  \"method\": \"system.ping\",\n  \"params\": {\n    \"a\": 1\n  }\n}\n\n",
		id: `3`, method: "system.ping", params: "{\n    \"a\": 1\n  }"},
	{name: "crlf line", in: "{\"id\":3,\"method\":\"system.ping\"}\r\n", id: `3`, method: "system.ping"},

	// JSON-RPC 2.0.
	{name: "jsonrpc request", in: `{"jsonrpc":"2.0","id":7,"method":"session.info","params":{"session_id":"s-1"}}`,
		dialect: protocol.JSONRPC, id: `7`, method: "session.info", params: `{"session_id":"s-1"}`},
	{name: "jsonrpc string id", in: `{"jsonrpc":"2.0","id":"abc","method":"system.ping"}`,
		dialect: protocol.JSONRPC, id: `"abc"`, method: "system.ping"},
	{name: "jsonrpc float id", in: `{"jsonrpc":"2.0","id":1.5e3,"method":"system.ping"}`,
		dialect: protocol.JSONRPC, id: `1.5e3`, method: "system.ping"},
	{name: "jsonrpc member order", in: `{"method":"system.ping","params":{},"id":9,"jsonrpc":"2.0"}`,
		dialect: protocol.JSONRPC, id: `9`, method: "system.ping", params: `{}`},
	{name: "jsonrpc notification", in: `{"jsonrpc":"2.0","method":"exec.cancel","params":{"session_id":"s-1"}}`,
		dialect: protocol.JSONRPC, method: "exec.cancel", params: `{"session_id":"s-1"}`, notify: true},
	{name: "jsonrpc null id is a request, not a notification", in: `{"jsonrpc":"2.0","id":null,"method":"system.ping"}`,
		dialect: protocol.JSONRPC, id: `null`, method: "system.ping"},
	{name: "jsonrpc wrong version keeps id", in: `{"jsonrpc":"1.0","id":7,"method":"system.ping"}`,
		dialect: protocol.JSONRPC, id: `7`, rpc: protocol.RPCInvalidRequest, msgHas: `"jsonrpc" must be "2.0"`},
	{name: "jsonrpc numeric version", in: `{"jsonrpc":2.0,"id":"a","method":"system.ping"}`,
		dialect: protocol.JSONRPC, id: `"a"`, rpc: protocol.RPCInvalidRequest, msgHas: `"jsonrpc" must be "2.0"`},
	{name: "jsonrpc null version is TRL", in: `{"jsonrpc":null,"id":1,"method":"system.ping"}`, id: `1`, method: "system.ping"},
	{name: "jsonrpc id object", in: `{"jsonrpc":"2.0","id":{},"method":"system.ping"}`,
		dialect: protocol.JSONRPC, rpc: protocol.RPCInvalidRequest},
	{name: "jsonrpc id bool", in: `{"jsonrpc":"2.0","id":true,"method":"system.ping"}`,
		dialect: protocol.JSONRPC, rpc: protocol.RPCInvalidRequest},
	{name: "jsonrpc method missing", in: `{"jsonrpc":"2.0","id":4}`, dialect: protocol.JSONRPC, id: `4`, rpc: protocol.RPCInvalidRequest},
	{name: "jsonrpc params array", in: `{"jsonrpc":"2.0","id":4,"method":"exec.run","params":[1]}`,
		dialect: protocol.JSONRPC, id: `4`, rpc: protocol.RPCInvalidParams},
	{name: "jsonrpc truncated", in: `{"jsonrpc":"2.0","id":1,"method":"sys`, dialect: protocol.JSONRPC, rpc: protocol.RPCParseError},
	{name: "jsonrpc batch is not supported", in: `[{"jsonrpc":"2.0","id":1,"method":"system.ping"}]`,
		dialect: protocol.JSONRPC, rpc: protocol.RPCParseError, msgHas: "not a JSON object"},

	// Malformed.
	{name: "empty", in: ``, rpc: protocol.RPCParseError, msgHas: "not a JSON object"},
	{name: "whitespace only", in: " \t\r\n", rpc: protocol.RPCParseError},
	{name: "garbage text", in: `hello world`, rpc: protocol.RPCParseError, msgHas: "not a JSON object"},
	{name: "json scalar", in: `42`, rpc: protocol.RPCParseError},
	{name: "json null", in: `null`, rpc: protocol.RPCParseError},
	{name: "truncated object", in: `{"id":1,"method":"system.ping"`, rpc: protocol.RPCParseError, msgHas: "not valid JSON"},
	{name: "truncated after brace", in: `{`, rpc: protocol.RPCParseError},
	{name: "trailing garbage", in: `{"id":1,"method":"system.ping"} x`, rpc: protocol.RPCParseError},
	{name: "two objects", in: `{"id":1,"method":"a"}{"id":2,"method":"b"}`, rpc: protocol.RPCParseError},
	{name: "single quotes", in: `{'id':1,'method':'system.ping'}`, rpc: protocol.RPCParseError},
	{name: "trailing comma", in: `{"id":1,"method":"system.ping",}`, rpc: protocol.RPCParseError},
	{name: "byte order mark", in: "\xef\xbb\xbf{\"id\":1,\"method\":\"system.ping\"}", rpc: protocol.RPCParseError},
	{name: "binary garbage", in: "\x00\xff\xfe{", rpc: protocol.RPCParseError},
}

func TestDecode(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			req, perr := protocol.Decode([]byte(tc.in))
			require.NotNil(t, req, "Decode always returns a (possibly partial) request")
			require.Equal(t, tc.dialect, req.Dialect, "dialect")
			if tc.id == "" {
				require.Nil(t, req.ID, "id")
			} else {
				require.Equal(t, tc.id, string(req.ID), "id must be echoed byte for byte")
			}

			if tc.rpc != 0 {
				require.NotNil(t, perr, "want an error")
				require.Equal(t, protocol.CodeInvalidParams, perr.Code, "framing errors carry INVALID_PARAMS as their string code")
				require.Equal(t, tc.rpc, rpcNumber(t, req, perr), "JSON-RPC number")
				require.NotEmpty(t, perr.Message)
				if tc.msgHas != "" {
					require.Contains(t, perr.Message, tc.msgHas)
				}
				// The error response is one line in the request's dialect,
				// echoing the id that could be read (null otherwise).
				line := protocol.EncodeError(req, perr)
				m := requireLine(t, line)
				require.Equal(t, idOrNull(req), string(m["id"]))
				if tc.dialect == protocol.JSONRPC {
					require.Equal(t, `"2.0"`, string(m["jsonrpc"]))
				} else {
					require.Equal(t, `false`, string(m["ok"]))
				}
				return
			}

			require.Nil(t, perr, "unexpected error: %v", perr)
			require.Equal(t, tc.method, req.Method)
			if tc.params == "" {
				require.Nil(t, req.Params, "params")
			} else {
				require.Equal(t, tc.params, string(req.Params), "params raw")
			}
			require.Equal(t, tc.notify, req.IsNotification(), "IsNotification")

			line, err := protocol.EncodeResult(req, map[string]any{"pong": true})
			require.NoError(t, err)
			m := requireLine(t, line)
			require.Equal(t, idOrNull(req), string(m["id"]))
		})
	}
}

// Decode must not keep references into the caller's buffer: transports
// reuse their read buffers.
func TestDecodeCopiesInput(t *testing.T) {
	buf := []byte(`{"id":"abc","method":"exec.run","params":{"command":"ls"}}`)
	req, perr := protocol.Decode(buf)
	require.Nil(t, perr)
	for i := range buf {
		buf[i] = 'X'
	}
	require.Equal(t, `"abc"`, string(req.ID))
	require.Equal(t, "exec.run", req.Method)
	require.Equal(t, `{"command":"ls"}`, string(req.Params))
}

func TestIsNotification(t *testing.T) {
	require.False(t, (&protocol.Request{Dialect: protocol.TRL}).IsNotification(), "TRL requests are always answered")
	require.False(t, (&protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`1`)}).IsNotification())
	require.True(t, (&protocol.Request{Dialect: protocol.JSONRPC}).IsNotification())
	require.False(t, (&protocol.Request{Dialect: protocol.JSONRPC, ID: json.RawMessage(`1`)}).IsNotification())
	require.False(t, (&protocol.Request{Dialect: protocol.JSONRPC, ID: json.RawMessage(`null`)}).IsNotification())
}

// A long invalid value is clipped in the message rather than echoed whole.
func TestDecodeClipsLongValues(t *testing.T) {
	long := strings.Repeat("x", 10000)
	req, perr := protocol.Decode([]byte(`{"id":1,"method":"exec.run","params":"` + long + `"}`))
	require.NotNil(t, perr)
	require.Less(t, len(perr.Message), 200, "message must not quote the whole value")
	requireLine(t, protocol.EncodeError(req, perr))

	// Clipping may cut a multi-byte character; the line must stay UTF-8.
	req, perr = protocol.Decode([]byte(`{"id":1,"method":"exec.run","params":"` + strings.Repeat("é", 100) + `"}`))
	require.NotNil(t, perr)
	requireLine(t, protocol.EncodeError(req, perr))
}
