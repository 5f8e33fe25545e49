package protocol_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

var testIDs = []json.RawMessage{
	nil,
	json.RawMessage(`"req-001"`),
	json.RawMessage(`""`),
	json.RawMessage(`1`),
	json.RawMessage(`0`),
	json.RawMessage(`-3`),
	json.RawMessage(`12345678901234567890`),
	json.RawMessage(`1.5e3`),
	json.RawMessage(`"<a&b>\u00e9\n"`),
	json.RawMessage(`null`),
}

func requestsFor(id json.RawMessage) []*protocol.Request {
	return []*protocol.Request{
		{Dialect: protocol.TRL, ID: id, Method: "exec.run"},
		{Dialect: protocol.JSONRPC, ID: id, Method: "exec.run"},
	}
}

func dialectName(d protocol.Dialect) string {
	if d == protocol.JSONRPC {
		return "jsonrpc"
	}
	return "trl"
}

func TestEncodeResult(t *testing.T) {
	data := map[string]any{
		"stdout": "a<b>&c\nline2\t\"q\"",
		"n":      42,
		"nested": map[string]any{"list": []int{1, 2}},
	}
	for _, id := range testIDs {
		for _, req := range requestsFor(id) {
			t.Run(dialectName(req.Dialect)+"/"+string(id), func(t *testing.T) {
				line, err := protocol.EncodeResult(req, data)
				require.NoError(t, err)
				m := requireLine(t, line)
				require.Equal(t, idOrNull(req), string(m["id"]), "id echoed exactly")
				require.Contains(t, string(line), `"id":`+idOrNull(req)+`,`, "id bytes unchanged")
				require.Contains(t, string(line), `a<b>&c`, "HTML characters are not escaped")
				require.NotContains(t, string(line), `\u003c`)
				require.NotContains(t, string(line), `\u0026`)

				var body json.RawMessage
				if req.Dialect == protocol.JSONRPC {
					require.ElementsMatch(t, []string{"jsonrpc", "id", "result"}, keys(m))
					require.Equal(t, `"2.0"`, string(m["jsonrpc"]))
					body = m["result"]
				} else {
					require.ElementsMatch(t, []string{"id", "ok", "data"}, keys(m))
					require.Equal(t, `true`, string(m["ok"]))
					body = m["data"]
				}
				var got map[string]any
				require.NoError(t, json.Unmarshal(body, &got))
				require.Equal(t, "a<b>&c\nline2\t\"q\"", got["stdout"])
				require.EqualValues(t, 42, got["n"])
			})
		}
	}
}

func TestEncodeResultExactBytes(t *testing.T) {
	id := json.RawMessage(`12345678901234567890`)
	line, err := protocol.EncodeResult(&protocol.Request{Dialect: protocol.TRL, ID: id}, map[string]string{"x": "<&>"})
	require.NoError(t, err)
	require.Equal(t, `{"id":12345678901234567890,"ok":true,"data":{"x":"<&>"}}`+"\n", string(line))

	line, err = protocol.EncodeResult(&protocol.Request{Dialect: protocol.JSONRPC, ID: json.RawMessage(`1.5e3`)}, nil)
	require.NoError(t, err)
	require.Equal(t, `{"jsonrpc":"2.0","id":1.5e3,"result":null}`+"\n", string(line))

	line, err = protocol.EncodeResult(&protocol.Request{Dialect: protocol.TRL}, []string{})
	require.NoError(t, err)
	require.Equal(t, `{"id":null,"ok":true,"data":[]}`+"\n", string(line))
}

func TestEncodeResultInvalidUTF8(t *testing.T) {
	for _, req := range requestsFor(json.RawMessage(`1`)) {
		line, err := protocol.EncodeResult(req, map[string]string{"stdout": "ok\xff\xfe\xc3end"})
		require.NoError(t, err)
		requireLine(t, line)
		// Invalid bytes become U+FFFD (the encoder writes it as \ufffd).
		require.Contains(t, string(line), `ok\ufffd\ufffd\ufffdend`, "invalid bytes become U+FFFD")
	}
}

func TestEncodeResultUnencodable(t *testing.T) {
	for _, req := range requestsFor(json.RawMessage(`1`)) {
		_, err := protocol.EncodeResult(req, map[string]any{"c": make(chan int)})
		require.Error(t, err)
	}
}

func TestEncodeErrorTRL(t *testing.T) {
	exit := 3
	cases := []struct {
		name string
		err  *protocol.Error
		data string // "" = no data member
	}{
		{"no data", protocol.Errorf(protocol.CodeSessionNotFound, "No session with id %q", "s-xyz"), ""},
		{"object data", &protocol.Error{Code: protocol.CodeCommandFailed, Message: "exit 3",
			Data: protocol.ExecResult{Stdout: "<out>", ExitCode: exit}}, "object"},
		{"string data", &protocol.Error{Code: protocol.CodeInternal, Message: "m", Data: "x<y"}, `"x<y"`},
		{"parse error", protocol.ParseError("bad %s", "json"), ""},
		{"invalid request", protocol.InvalidRequest("bad"), ""},
	}
	for _, id := range testIDs {
		for _, tc := range cases {
			t.Run(tc.name+"/"+string(id), func(t *testing.T) {
				req := &protocol.Request{Dialect: protocol.TRL, ID: id}
				line := protocol.EncodeError(req, tc.err)
				m := requireLine(t, line)
				require.ElementsMatch(t, []string{"id", "ok", "error"}, keys(m))
				require.Equal(t, idOrNull(req), string(m["id"]))
				require.Equal(t, `false`, string(m["ok"]))

				var e map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(m["error"], &e), "error must be an object")
				require.Equal(t, strconv.Quote(string(tc.err.Code)), string(e["code"]), "TRL code is the string code")
				var msg string
				require.NoError(t, json.Unmarshal(e["message"], &msg))
				require.Equal(t, tc.err.Message, msg)
				switch tc.data {
				case "":
					require.ElementsMatch(t, []string{"code", "message"}, keys(e))
				case "object":
					require.ElementsMatch(t, []string{"code", "message", "data"}, keys(e))
					require.Contains(t, string(e["data"]), `"stdout":"<out>"`)
					require.Contains(t, string(e["data"]), `"exit_code":3`)
				default:
					require.Equal(t, tc.data, string(e["data"]))
				}
			})
		}
	}
}

func TestEncodeErrorExactBytes(t *testing.T) {
	req := &protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`"req-001"`)}
	require.Equal(t,
		`{"id":"req-001","ok":false,"error":{"code":"SESSION_NOT_FOUND","message":"No session with id 's-xyz'"}}`+"\n",
		string(protocol.EncodeError(req, protocol.Errorf(protocol.CodeSessionNotFound, "No session with id 's-xyz'"))))

	req = &protocol.Request{Dialect: protocol.JSONRPC, ID: json.RawMessage(`12345678901234567890`)}
	require.Equal(t,
		`{"jsonrpc":"2.0","id":12345678901234567890,"error":{"code":-32001,"message":"No session <s>","data":{"code":"SESSION_NOT_FOUND"}}}`+"\n",
		string(protocol.EncodeError(req, protocol.Errorf(protocol.CodeSessionNotFound, "No session <s>"))))

	require.Equal(t,
		`{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x","data":{"code":"INVALID_PARAMS"}}}`+"\n",
		string(protocol.EncodeError(&protocol.Request{Dialect: protocol.JSONRPC}, protocol.ParseError("x"))))
}

func TestEncodeErrorJSONRPC(t *testing.T) {
	cases := []struct {
		err *protocol.Error
		rpc int
	}{
		{protocol.ParseError("p"), -32700},
		{protocol.InvalidRequest("r"), -32600},
		{protocol.Errorf(protocol.CodeMethodNotFound, "m"), -32601},
		{protocol.Errorf(protocol.CodeInvalidParams, "m"), -32602},
		{protocol.Errorf(protocol.CodeInternal, "m"), -32603},
		{protocol.Errorf(protocol.CodeSessionNotFound, "m"), -32001},
		{protocol.Errorf(protocol.CodeSessionBusy, "m"), -32002},
		{protocol.Errorf(protocol.CodeCommandTimeout, "m"), -32003},
		{protocol.Errorf(protocol.CodeCommandFailed, "m"), -32004},
		{protocol.Errorf(protocol.CodeAuthFailed, "m"), -32005},
		{protocol.Errorf(protocol.CodeSessionExited, "m"), -32006},
		{protocol.Errorf(protocol.CodeLimitExceeded, "m"), -32007},
		{protocol.Errorf(protocol.CodeStreamNotFound, "m"), -32008},
		{protocol.Errorf(protocol.CodeShuttingDown, "m"), -32009},
		{protocol.Errorf("SOMETHING_NEW", "m"), -32603},
	}
	for _, id := range testIDs {
		for _, tc := range cases {
			t.Run(fmt.Sprintf("%d/%s", tc.rpc, id), func(t *testing.T) {
				req := &protocol.Request{Dialect: protocol.JSONRPC, ID: id}
				m := requireLine(t, protocol.EncodeError(req, tc.err))
				require.ElementsMatch(t, []string{"jsonrpc", "id", "error"}, keys(m))
				require.Equal(t, `"2.0"`, string(m["jsonrpc"]))
				require.Equal(t, idOrNull(req), string(m["id"]))
				var e struct {
					Code    json.RawMessage `json:"code"`
					Message string          `json:"message"`
					Data    map[string]any  `json:"data"`
				}
				require.NoError(t, json.Unmarshal(m["error"], &e))
				require.Equal(t, strconv.Itoa(tc.rpc), string(e.Code), "numeric JSON-RPC code")
				require.Equal(t, tc.err.Message, e.Message)
				require.Equal(t, map[string]any{"code": string(tc.err.Code)}, e.Data, "data.code carries the string code")
			})
		}
	}
}

func TestEncodeErrorJSONRPCData(t *testing.T) {
	req := &protocol.Request{Dialect: protocol.JSONRPC, ID: json.RawMessage(`5`)}
	decode := func(e *protocol.Error) map[string]any {
		t.Helper()
		m := requireLine(t, protocol.EncodeError(req, e))
		var body struct {
			Error struct {
				Data map[string]any `json:"data"`
			} `json:"error"`
		}
		require.NoError(t, json.Unmarshal(m["error"], &body.Error))
		return body.Error.Data
	}

	// Object data: fields merged next to code.
	got := decode(&protocol.Error{Code: protocol.CodeCommandFailed, Message: "exit 1",
		Data: protocol.ExecResult{Stdout: "<o>&", ExitCode: 1, Cwd: "/tmp"}})
	require.Equal(t, "COMMAND_FAILED", got["code"])
	require.Equal(t, "<o>&", got["stdout"])
	require.EqualValues(t, 1, got["exit_code"])
	require.Equal(t, "/tmp", got["cwd"])

	got = decode(&protocol.Error{Code: protocol.CodeLimitExceeded, Message: "m", Data: map[string]any{"limit": 8, "what": "sessions"}})
	require.Equal(t, map[string]any{"code": "LIMIT_EXCEEDED", "limit": float64(8), "what": "sessions"}, got)

	// An empty object merges to nothing.
	got = decode(&protocol.Error{Code: protocol.CodeLimitExceeded, Message: "m", Data: map[string]any{}})
	require.Equal(t, map[string]any{"code": "LIMIT_EXCEEDED"}, got)

	// Non-object data goes under "detail".
	got = decode(&protocol.Error{Code: protocol.CodeInternal, Message: "m", Data: []int{1, 2}})
	require.Equal(t, map[string]any{"code": "INTERNAL_ERROR", "detail": []any{float64(1), float64(2)}}, got)
	got = decode(&protocol.Error{Code: protocol.CodeInternal, Message: "m", Data: "x\xffy"})
	require.Equal(t, map[string]any{"code": "INTERNAL_ERROR", "detail": "x\uFFFDy"}, got)
	got = decode(&protocol.Error{Code: protocol.CodeInternal, Message: "m", Data: 7})
	require.Equal(t, map[string]any{"code": "INTERNAL_ERROR", "detail": float64(7)}, got)
}

func TestEncodeErrorInvalidUTF8AndHTML(t *testing.T) {
	e := &protocol.Error{Code: protocol.CodeCommandFailed, Message: "bad <\xff> & more",
		Data: map[string]string{"stdout": "a\xc3\x28b<&>", "stderr": "\x00\x1b[31m"}}
	for _, req := range requestsFor(json.RawMessage(`"r"`)) {
		line := protocol.EncodeError(req, e)
		requireLine(t, line)
		s := string(line)
		require.Contains(t, s, `bad <\ufffd> & more`)
		require.Contains(t, s, `a\ufffd(b<&>`)
		require.Contains(t, s, `\u0000\u001b[31m`, "control characters are escaped")
		require.NotContains(t, s, `\u003c`)
		require.NotContains(t, s, `\u0026`)
	}
}

// Data that cannot be encoded must not break either envelope's shape.
func TestEncodeErrorUnencodableData(t *testing.T) {
	e := &protocol.Error{Code: protocol.CodeInternal, Message: "boom", Data: map[string]any{"c": make(chan int)}}

	m := requireLine(t, protocol.EncodeError(&protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`1`)}, e))
	var te map[string]any
	require.NoError(t, json.Unmarshal(m["error"], &te), "TRL error must stay an object")
	require.Equal(t, "INTERNAL_ERROR", te["code"])
	require.Equal(t, "boom", te["message"])

	m = requireLine(t, protocol.EncodeError(&protocol.Request{Dialect: protocol.JSONRPC, ID: json.RawMessage(`1`)}, e))
	var re struct {
		Code int            `json:"code"`
		Data map[string]any `json:"data"`
	}
	require.NoError(t, json.Unmarshal(m["error"], &re))
	require.Equal(t, -32603, re.Code)
	require.Equal(t, "INTERNAL_ERROR", re.Data["code"])
}

func TestEncodeNotification(t *testing.T) {
	params := map[string]any{"stream_id": "st-1", "data": "<b>&\xff\n", "offset": 12}
	for _, d := range []protocol.Dialect{protocol.TRL, protocol.JSONRPC} {
		t.Run(dialectName(d), func(t *testing.T) {
			line, err := protocol.EncodeNotification(d, protocol.NotifyExecOutput, params)
			require.NoError(t, err)
			m := requireLine(t, line)
			if d == protocol.JSONRPC {
				require.ElementsMatch(t, []string{"jsonrpc", "method", "params"}, keys(m))
				require.Equal(t, `"2.0"`, string(m["jsonrpc"]))
			} else {
				require.ElementsMatch(t, []string{"method", "params"}, keys(m))
			}
			require.Equal(t, `"exec.output"`, string(m["method"]))
			require.NotContains(t, m, "id", "notifications have no id")
			require.Contains(t, string(line), `<b>&\ufffd\n`)

			var p map[string]any
			require.NoError(t, json.Unmarshal(m["params"], &p))
			require.Equal(t, "st-1", p["stream_id"])
		})
	}

	line, err := protocol.EncodeNotification(protocol.TRL, protocol.NotifyExecExit, map[string]int{"exit_code": 0})
	require.NoError(t, err)
	require.Equal(t, `{"method":"exec.exit","params":{"exit_code":0}}`+"\n", string(line))
	line, err = protocol.EncodeNotification(protocol.JSONRPC, protocol.NotifyExecExit, nil)
	require.NoError(t, err)
	require.Equal(t, `{"jsonrpc":"2.0","method":"exec.exit","params":null}`+"\n", string(line))

	// A method name with odd bytes is still one valid line.
	line, err = protocol.EncodeNotification(protocol.JSONRPC, "a\n\"<b>\xff", struct{}{})
	require.NoError(t, err)
	requireLine(t, line)

	_, err = protocol.EncodeNotification(protocol.TRL, "x", func() {})
	require.Error(t, err)
}

func TestErrorHelpers(t *testing.T) {
	e := protocol.Errorf(protocol.CodeSessionBusy, "session %s is busy", "s-1")
	require.Equal(t, "SESSION_BUSY: session s-1 is busy", e.Error())

	require.Same(t, e, protocol.AsError(e))
	require.Same(t, e, protocol.AsError(fmt.Errorf("wrapped: %w", e)))

	plain := protocol.AsError(errors.New("disk on fire"))
	require.Equal(t, protocol.CodeInternal, plain.Code)
	require.Contains(t, plain.Message, "disk on fire")
	require.Equal(t, -32603, rpcNumber(t, &protocol.Request{}, plain))

	require.Equal(t, protocol.CodeInvalidParams, protocol.ParseError("x").Code)
	require.Equal(t, protocol.CodeInvalidParams, protocol.InvalidRequest("x").Code)
	require.Equal(t, "x 1 y", protocol.ParseError("x %d %s", 1, "y").Message)
}

// codeConstants finds every constant of type Code declared in the package
// source, so a code added later without a JSON-RPC number fails the test.
func codeConstants(t *testing.T) map[string]protocol.Code {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	out := map[string]protocol.Code{}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		require.NoError(t, err)
		{
			for _, decl := range f.Decls {
				gd, ok := decl.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
						continue
					}
					for i, name := range vs.Names {
						lit, ok := vs.Values[i].(*ast.BasicLit)
						require.True(t, ok, "%s must be a string literal", name.Name)
						v, err := strconv.Unquote(lit.Value)
						require.NoError(t, err)
						out[name.Name] = protocol.Code(v)
					}
				}
			}
		}
	}
	return out
}

func TestRPCCodes(t *testing.T) {
	codes := codeConstants(t)
	require.GreaterOrEqual(t, len(codes), 12, "found the Code constants")

	standard := map[protocol.Code]int{
		protocol.CodeInvalidParams:  protocol.RPCInvalidParams,
		protocol.CodeMethodNotFound: protocol.RPCMethodNotFound,
		protocol.CodeInternal:       protocol.RPCInternalError,
	}
	reserved := map[int]bool{protocol.RPCParseError: true, protocol.RPCInvalidRequest: true}

	seenNum := map[int]string{}
	seenStr := map[protocol.Code]string{}
	names := make([]string, 0, len(codes))
	for name := range codes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		c := codes[name]
		require.Equal(t, strings.ToUpper(string(c)), string(c), "%s: codes are UPPER_SNAKE", name)
		if prev, dup := seenStr[c]; dup {
			t.Fatalf("%s and %s share the string code %q", prev, name, c)
		}
		seenStr[c] = name

		n := protocol.RPCCode(c)
		if prev, dup := seenNum[n]; dup {
			t.Fatalf("%s and %s share the JSON-RPC number %d", prev, name, n)
		}
		seenNum[n] = name
		require.False(t, reserved[n], "%s must not use the framing number %d", name, n)

		if want, ok := standard[c]; ok {
			require.Equal(t, want, n, "%s uses the standard JSON-RPC number", name)
			continue
		}
		require.True(t, n >= -32099 && n <= -32000, "%s: application code %d must be in -32099…-32000", name, n)
	}
	require.Equal(t, protocol.RPCInternalError, protocol.RPCCode("NOT_A_CODE"), "unknown codes map to internal error")

	require.Equal(t, -32700, protocol.RPCParseError)
	require.Equal(t, -32600, protocol.RPCInvalidRequest)
	require.Equal(t, -32601, protocol.RPCMethodNotFound)
	require.Equal(t, -32602, protocol.RPCInvalidParams)
	require.Equal(t, -32603, protocol.RPCInternalError)
}
