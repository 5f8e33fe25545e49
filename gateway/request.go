package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math"
)

// request is a validated docker-runner POST (seed 000 §3).
type request struct {
	Tool string
	Args map[string]json.RawMessage

	RunID       string
	SessionID   string
	RuntimeMode string
	ToolCallID  string
	// TimeoutMS is ctx.timeoutMs when given (a trl extension; the seed's
	// gateway keeps its timeout in execution_targets.config).
	TimeoutMS *float64

	TargetID    string
	Kind        string
	TenantID    string
	WorkspaceID string

	// fingerprint identifies what was asked, so a toolCallId reused for a
	// different call is told apart from a retry.
	fingerprint [sha256.Size]byte
}

// fieldError is a request the gateway cannot use; its message names the
// field.
type fieldError struct{ msg string }

func (e *fieldError) Error() string { return e.msg }

func badField(format string, args ...any) error { return &fieldError{fmt.Sprintf(format, args...)} }

// parseRequest validates body as seed 000 §3 requires: call.name, call.args
// (an object), ctx.runId, ctx.sessionId, ctx.runtimeMode, and target with
// targetId, kind and tenantId (workspaceId optional). Fields it does not
// know are ignored, so a gateway may send more.
func parseRequest(body []byte) (*request, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil, badField(`the request body is empty; send {"call":{...},"ctx":{...},"target":{...}}`)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		if body[0] != '{' {
			return nil, badField("the request body must be a JSON object")
		}
		return nil, badField("the request body is not valid JSON: %v", err)
	}
	call, err := object(top, "", "call")
	if err != nil {
		return nil, err
	}
	ctx, err := object(top, "", "ctx")
	if err != nil {
		return nil, err
	}
	target, err := object(top, "", "target")
	if err != nil {
		return nil, err
	}
	r := &request{}
	if r.Tool, err = str(call, "call", "name", true); err != nil {
		return nil, err
	}
	if r.Args, err = object(call, "call", "args"); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		dst  *string
		name string
	}{{&r.RunID, "runId"}, {&r.SessionID, "sessionId"}, {&r.RuntimeMode, "runtimeMode"}} {
		if *f.dst, err = str(ctx, "ctx", f.name, true); err != nil {
			return nil, err
		}
	}
	if r.ToolCallID, err = str(ctx, "ctx", "toolCallId", false); err != nil {
		return nil, err
	}
	if r.TimeoutMS, err = number(ctx, "ctx", "timeoutMs"); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		dst  *string
		name string
	}{{&r.TargetID, "targetId"}, {&r.Kind, "kind"}, {&r.TenantID, "tenantId"}} {
		if *f.dst, err = str(target, "target", f.name, true); err != nil {
			return nil, err
		}
	}
	if r.WorkspaceID, err = str(target, "target", "workspaceId", false); err != nil {
		return nil, err
	}
	// Marshalling a decoded map sorts its keys, so the same call sent
	// with its keys in another order has the same fingerprint.
	var callValue any
	_ = json.Unmarshal(top["call"], &callValue)
	fp, _ := json.Marshal([]any{callValue, r.SessionID, r.WorkspaceID})
	r.fingerprint = sha256.Sum256(fp)
	return r, nil
}

// object returns m[key] decoded as an object; absent, null or another
// type is an error naming parent.key.
func object(m map[string]json.RawMessage, parent, key string) (map[string]json.RawMessage, error) {
	name := dotted(parent, key)
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return nil, badField("%s is required and must be an object", name)
	}
	var out map[string]json.RawMessage
	if raw = bytes.TrimSpace(raw); raw[0] != '{' || json.Unmarshal(raw, &out) != nil {
		return nil, badField("%s must be an object, got %s", name, kind(raw))
	}
	return out, nil
}

// str returns m[key] as a string. A required one must be present and not
// empty; an optional one may be absent or null.
func str(m map[string]json.RawMessage, parent, key string, required bool) (string, error) {
	name := dotted(parent, key)
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		if required {
			return "", badField("%s is required (a non-empty string)", name)
		}
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", badField("%s must be a string, got %s", name, kind(raw))
	}
	if required && s == "" {
		return "", badField("%s must not be empty", name)
	}
	return s, nil
}

// number returns m[key] as a finite positive number, or nil when absent.
func number(m map[string]json.RawMessage, parent, key string) (*float64, error) {
	name := dotted(parent, key)
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	var f float64
	if json.Unmarshal(raw, &f) != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, badField("%s must be a number of milliseconds, got %s", name, kind(raw))
	}
	if f <= 0 {
		return nil, badField("%s must be more than 0 milliseconds, got %g", name, f)
	}
	return &f, nil
}

func dotted(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// kind names a JSON value's type for an error message.
func kind(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
