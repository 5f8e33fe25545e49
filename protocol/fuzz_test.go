package protocol_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// addDecodeSeeds adds every table and golden input that is small enough to
// mutate usefully.
func addDecodeSeeds(f *testing.F) {
	for _, tc := range decodeCases {
		if len(tc.in) <= 20000 {
			f.Add([]byte(tc.in))
		}
	}
	ins, _ := filepath.Glob(filepath.Join("testdata", "golden", "*.in"))
	for _, p := range ins {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
}

func FuzzDecode(f *testing.F) {
	addDecodeSeeds(f)
	f.Fuzz(func(t *testing.T, msg []byte) {
		req, perr := protocol.Decode(msg)
		if req == nil {
			t.Fatalf("Decode(%q) returned a nil request", msg)
		}
		if perr != nil {
			if perr.Message == "" {
				t.Fatalf("Decode(%q): error without a message", msg)
			}
			// The error response is one valid JSON line in either dialect.
			for _, d := range []protocol.Dialect{req.Dialect, protocol.TRL, protocol.JSONRPC} {
				r := *req
				r.Dialect = d
				line := protocol.EncodeError(&r, perr)
				if !lineValid(line) {
					t.Fatalf("Decode(%q): EncodeError is not one valid JSON line: %q", msg, line)
				}
				checkEchoedID(t, msg, &r, line)
			}
			return
		}

		if req.Method == "" {
			t.Fatalf("Decode(%q): success with an empty method", msg)
		}
		if req.ID != nil {
			if !json.Valid(req.ID) || !utf8.Valid(req.ID) {
				t.Fatalf("Decode(%q): id %q is not valid UTF-8 JSON", msg, req.ID)
			}
			switch c := req.ID[0]; {
			case c == '"', c == '-', c >= '0' && c <= '9':
			case string(req.ID) == "null" && req.Dialect == protocol.JSONRPC:
				// An explicit JSON-RPC "id":null: a request, not a notification.
			default:
				t.Fatalf("Decode(%q): id %q is not a JSON string or number", msg, req.ID)
			}
		}
		if req.IsNotification() != (req.Dialect == protocol.JSONRPC && req.ID == nil) {
			t.Fatalf("Decode(%q): IsNotification inconsistent", msg)
		}
		if req.Params != nil && (req.Params[0] != '{' || !json.Valid(req.Params)) {
			t.Fatalf("Decode(%q): params %q is not an object", msg, req.Params)
		}
		line, err := protocol.EncodeResult(req, map[string]string{"method": req.Method})
		if err != nil {
			t.Fatalf("Decode(%q): EncodeResult: %v", msg, err)
		}
		if !lineValid(line) {
			t.Fatalf("Decode(%q): EncodeResult is not one valid JSON line: %q", msg, line)
		}
		checkEchoedID(t, msg, req, line)

		// Whatever the params, strict decoding must not panic and fails
		// only with INVALID_PARAMS.
		var p protocol.ExecParams
		if err := protocol.DecodeParams(req.Params, &p); err != nil {
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams {
				t.Fatalf("Decode(%q): DecodeParams error %v is not INVALID_PARAMS", msg, err)
			}
		}
	})
}

// checkEchoedID checks that line carries req's id byte for byte.
func checkEchoedID(t *testing.T, msg []byte, req *protocol.Request, line []byte) {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("Decode(%q): %v", msg, err)
	}
	if got := m["id"]; string(got) != idOrNull(req) {
		t.Fatalf("Decode(%q): response id %q, want %q", msg, got, idOrNull(req))
	}
}

func FuzzDecodeParams(f *testing.F) {
	for _, s := range []string{
		``, `null`, `{}`, ` {} `,
		`{"session_id":"s-1","command":"echo <&>","timeout_s":2.5,"stdin":"","env":{"A":"1"},"max_output_bytes":1024,"check":true}`,
		`{"command":null,"env":null,"timeout_s":null}`,
		`{"comand":"ls"}`, `{"command":1}`, `{"timeout_s":"10"}`, `{"max_output_bytes":1.5}`,
		`{"max_output_bytes":1e30}`, `{"max_output_bytes":-9223372036854775809}`, `{"timeout_s":1e999}`,
		`{"check":"yes"}`, `{"env":[]}`, `{"env":{"A":1}}`, `{"env":{"":""}}`,
		`[]`, `"x"`, `5`, `{} {}`, `{}]`, `{"session_id":"s"} x`, `{`, `{"a" 1}`,
		"{\"command\":\"a\\u0000b\xffc\"}", "{\"c\xffmmand\":1}", "\x00",
		`{"SESSION_ID":"x","Command":"y"}`, `{"command":"a","command":"b"}`,
		`{"env":` + deepArrays[:200] + `}`, `{"stdin":{"a":{"b":[{"c":null}]}}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var p protocol.ExecParams
		err := protocol.DecodeParams(json.RawMessage(raw), &p)
		if err != nil {
			var pe *protocol.Error
			if !errors.As(err, &pe) || pe.Code != protocol.CodeInvalidParams || pe.Message == "" {
				t.Fatalf("DecodeParams(%q): %v is not an INVALID_PARAMS *Error", raw, err)
			}
			for _, d := range []protocol.Dialect{protocol.TRL, protocol.JSONRPC} {
				line := protocol.EncodeError(&protocol.Request{Dialect: d, ID: json.RawMessage(`1`)}, pe)
				if !lineValid(line) {
					t.Fatalf("DecodeParams(%q): error line invalid: %q", raw, line)
				}
			}
			return
		}
		// What decoded re-encodes and decodes to the same thing.
		again, merr := json.Marshal(p)
		require.NoError(t, merr)
		var q protocol.ExecParams
		require.NoError(t, protocol.DecodeParams(again, &q), "re-decoding %s", again)
		require.Equal(t, p, q)
		if bytes.Contains(again, []byte("\n")) {
			t.Fatalf("marshalled params contain a newline: %q", again)
		}
	})
}
