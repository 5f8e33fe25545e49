package protocol_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

func requireInvalidParams(t *testing.T, err error, contains ...string) {
	t.Helper()
	require.Error(t, err)
	var pe *protocol.Error
	require.True(t, errors.As(err, &pe), "want a *protocol.Error, got %T", err)
	require.Equal(t, protocol.CodeInvalidParams, pe.Code)
	require.Equal(t, protocol.RPCInvalidParams, rpcNumber(t, &protocol.Request{}, pe))
	for _, s := range contains {
		require.Contains(t, pe.Message, s)
	}
}

func TestDecodeParamsOK(t *testing.T) {
	var p protocol.ExecParams
	require.NoError(t, protocol.DecodeParams(json.RawMessage(
		`{"session_id":"s-1","command":"echo <&>","timeout_s":2.5,"stdin":"","env":{"A":"1"},"max_output_bytes":1024,"check":true}`), &p))
	require.Equal(t, "s-1", p.SessionID)
	require.Equal(t, "echo <&>", *p.Command)
	require.Equal(t, 2.5, *p.TimeoutS)
	require.Equal(t, "", *p.Stdin)
	require.Equal(t, map[string]string{"A": "1"}, p.Env)
	require.Equal(t, int64(1024), *p.MaxOutputBytes)
	require.True(t, p.Check)

	// Surrounding whitespace is fine.
	p = protocol.ExecParams{}
	require.NoError(t, protocol.DecodeParams(json.RawMessage(" \n{\"session_id\":\"s\"}\n "), &p))
	require.Equal(t, "s", p.SessionID)

	// null leaves optional fields unset.
	p = protocol.ExecParams{}
	require.NoError(t, protocol.DecodeParams(json.RawMessage(`{"command":null,"env":null}`), &p))
	require.Nil(t, p.Command)
	require.Nil(t, p.Env)

	// Signals may be names or numbers.
	var c protocol.ExecCancelParams
	require.NoError(t, protocol.DecodeParams(json.RawMessage(`{"session_id":"s","signal":9}`), &c))
	require.Equal(t, `9`, string(c.Signal))
	require.NoError(t, protocol.DecodeParams(json.RawMessage(`{"session_id":"s","signal":"SIGINT"}`), &c))
	require.Equal(t, `SIGINT`, string(c.Signal))

	// NUL and invalid UTF-8 decode (the latter as U+FFFD).
	p = protocol.ExecParams{}
	require.NoError(t, protocol.DecodeParams(json.RawMessage("{\"command\":\"a\\u0000b\xffc\"}"), &p))
	require.Equal(t, "a\x00b\uFFFDc", *p.Command)
}

func TestDecodeParamsAbsent(t *testing.T) {
	for _, raw := range []json.RawMessage{nil, {}, json.RawMessage(`null`), json.RawMessage(`{}`)} {
		p := protocol.ExecParams{SessionID: "keep"}
		require.NoError(t, protocol.DecodeParams(raw, &p), "params %q", raw)
		require.Equal(t, "keep", p.SessionID, "absent params leave dst as it was")
	}

	// The whole path: a request without params decodes its params fine.
	req, perr := protocol.Decode([]byte(`{"id":1,"method":"session.list"}`))
	require.Nil(t, perr)
	var s protocol.SessionCreateParams
	require.NoError(t, protocol.DecodeParams(req.Params, &s))
}

func TestDecodeParamsUnknownField(t *testing.T) {
	var p protocol.ExecParams
	err := protocol.DecodeParams(json.RawMessage(`{"session_id":"s","comand":"ls"}`), &p)
	requireInvalidParams(t, err, `"comand"`, "unknown parameter")
	// The closest name is suggested, and every name listed.
	for bad, want := range map[string]string{"comand": "command", "cmd": "command", "session": "session_id", "timeout": "timeout_s"} {
		err = protocol.DecodeParams(json.RawMessage(`{"`+bad+`":"x"}`), &p)
		requireInvalidParams(t, err, `unknown parameter "`+bad+`" (did you mean "`+want+`"?); the parameters are session_id, command, timeout_s,`)
	}
	err = protocol.DecodeParams(json.RawMessage(`{"zzz":1}`), &p)
	requireInvalidParams(t, err, `unknown parameter "zzz"; the parameters are`)
	var sc protocol.SessionCreateParams
	err = protocol.DecodeParams(json.RawMessage(`{"limits":{"memroy_mib":5}}`), &sc)
	requireInvalidParams(t, err, `unknown parameter "memroy_mib"`)
	require.NotContains(t, err.Error(), "did you mean", "a nested name is not matched against the method's")
	err = protocol.DecodeParams(json.RawMessage(`{"ex\"ec":1}`), &p)
	requireInvalidParams(t, err, `unknown parameter "ex\"ec"; the parameters are`)
	var ping protocol.PingParams
	err = protocol.DecodeParams(json.RawMessage(`{"x":1}`), &ping)
	requireInvalidParams(t, err, `unknown parameter "x": this method takes no parameters`)

	var s protocol.SessionCreateParams
	err = protocol.DecodeParams(json.RawMessage(`{"shell":"bash","cwd":"/tmp"}`), &s)
	requireInvalidParams(t, err, `"cwd"`)
}

func TestDecodeParamsWrongType(t *testing.T) {
	cases := []struct {
		raw      string
		contains []string
	}{
		{`{"command":1}`, []string{"params.command", "a string", "got number"}},
		{`{"session_id":true}`, []string{"params.session_id", "a string", "got bool"}},
		{`{"timeout_s":"10"}`, []string{"params.timeout_s", "a number", "got string"}},
		{`{"max_output_bytes":"1k"}`, []string{"params.max_output_bytes", "an integer", "got string"}},
		{`{"max_output_bytes":1.5}`, []string{"params.max_output_bytes", "an integer", "1.5"}},
		{`{"max_output_bytes":1e30}`, []string{"params.max_output_bytes", "an integer", "out of range", "1e30"}},
		{`{"max_output_bytes":99999999999999999999}`, []string{"params.max_output_bytes", "out of range"}},
		{`{"yield_ms":1e15}`, []string{"params.yield_ms", "an integer", "in digits", "1000000000000000", "1e15"}},
		{`{"yield_ms":2.0}`, []string{"params.yield_ms", "in digits", "2"}},
		{`{"check":"yes"}`, []string{"params.check", "true or false", "got string"}},
		{`{"check":1}`, []string{"params.check", "true or false", "got number"}},
		{`{"env":[]}`, []string{"params.env", "an object", "got array"}},
		{`{"env":"A=1"}`, []string{"params.env", "an object", "got string"}},
		{`{"env":{"A":1}}`, []string{"params.env", "got number"}}, // a map value: the message names the map
		{`{"stdin":{}}`, []string{"params.stdin", "a string", "got object"}},
	}
	for _, tc := range cases {
		t.Run(tc.raw, func(t *testing.T) {
			var p protocol.ExecParams
			requireInvalidParams(t, protocol.DecodeParams(json.RawMessage(tc.raw), &p), tc.contains...)
		})
	}

	var s protocol.SessionCreateParams
	requireInvalidParams(t, protocol.DecodeParams(json.RawMessage(`{"rows":"24"}`), &s), "params.rows", "an integer")
	requireInvalidParams(t, protocol.DecodeParams(json.RawMessage(`{"rows":-1.5}`), &s), "params.rows", "an integer")
}

func TestDecodeParamsNotAnObject(t *testing.T) {
	for _, raw := range []string{`[]`, `[1]`, `"x"`, `5`, `true`} {
		var p protocol.ExecParams
		requireInvalidParams(t, protocol.DecodeParams(json.RawMessage(raw), &p), "params must be an object")
	}
}

func TestDecodeParamsTrailingData(t *testing.T) {
	for _, raw := range []string{`{} {}`, `{"session_id":"s"} x`, `{}]`, `{}1`, `{},`} {
		var p protocol.ExecParams
		requireInvalidParams(t, protocol.DecodeParams(json.RawMessage(raw), &p), "after the object")
	}
}

func TestDecodeParamsMalformed(t *testing.T) {
	for _, raw := range []string{`{`, `{"session_id":`, `{"a" 1}`, "\x00", `{'a':1}`} {
		var p protocol.ExecParams
		requireInvalidParams(t, protocol.DecodeParams(json.RawMessage(raw), &p), "params")
	}
}
