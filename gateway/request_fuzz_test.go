package gateway

import (
	"os"
	"testing"
)

// FuzzParseRequest: no body crashes the gateway's decoder; a body it
// accepts has every field seed 000 requires.
func FuzzParseRequest(f *testing.F) {
	if seed, err := os.ReadFile("../testdata/gateway/seed000_mock_request.json"); err == nil {
		f.Add(seed)
	}
	for _, s := range []string{"", "{}", "[]", "null", `{"call":1}`, `{"call":{"name":"bash.exec","args":[]}}`,
		`{"call":{"name":"bash.exec","args":{"cmd":"ls"}},"ctx":{"runId":"r","sessionId":"s","runtimeMode":"local","timeoutMs":1e309},"target":{"targetId":"t","kind":"k","tenantId":"x"}}`,
		`{"call":{"name":"\u0000","args":{}},"ctx":{"runId":"","sessionId":"s","runtimeMode":"m"},"target":{"targetId":"t","kind":"k","tenantId":"x"}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := parseRequest(body)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an error without a message")
			}
			return
		}
		if r.Tool == "" || r.Args == nil || r.RunID == "" || r.SessionID == "" || r.RuntimeMode == "" ||
			r.TargetID == "" || r.Kind == "" || r.TenantID == "" {
			t.Fatalf("accepted a request missing a required field: %+v", r)
		}
	})
}
