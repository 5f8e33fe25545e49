package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/trl-project/trl/internal/suggest"
)

// Handler is the method table as transports see it. Handle is called
// concurrently from many goroutines.
type Handler interface {
	Handle(ctx context.Context, call *Call) (*Reply, error)
}

// Call is one request as the method table sees it: no bytes, no dialect.
// Who asked travels in the context (WithCaller).
type Call struct {
	Method string
	Params json.RawMessage
}

// Reply is a successful answer.
type Reply struct {
	Data any
	// Follow, when set, runs after the response has been written and sends
	// the request's notifications through emit until it is done or ctx
	// ends. ctx ends when the client goes away; what Follow watches (a
	// running command) goes on regardless.
	Follow Follow
}

// Emitter sends one notification to the client that made the request.
type Emitter func(method string, params any) error

// DecodeParams decodes a params object into dst strictly: unknown fields,
// wrong types and trailing data are INVALID_PARAMS errors that name the
// field. Absent params decode as an empty object.
func DecodeParams(raw json.RawMessage, dst any) error {
	if len(raw) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if f, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			// A top-level name gets the method's names; one inside a
			// nested object (limits.memroy) the plain message.
			var top map[string]json.RawMessage
			if name, uerr := strconv.Unquote(f); uerr == nil && json.Unmarshal(raw, &top) == nil {
				if _, atTop := top[name]; atTop {
					return unknownParam(name, paramNames(reflect.TypeOf(dst)))
				}
			}
		}
		return paramsError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Errorf(CodeInvalidParams, "params: unexpected data after the object")
	}
	// encoding/json also takes a name that differs from a field's only in
	// case ("COMMAND" is command), so {"command":"ls","COMMAND":"rm -rf
	// ~"} ran what a reader of the first took for a duplicate the
	// request would be refused for. A parameter is named exactly.
	if name, top := inexactKey(raw, reflect.TypeOf(dst), ""); name != "" {
		if top {
			return unknownParam(name, paramNames(reflect.TypeOf(dst)))
		}
		return Errorf(CodeInvalidParams, "unknown parameter %s: parameter names are exact, case included; see the method's parameters in docs/protocol.md", name)
	}
	return nil
}

// exactNames is what the exact-name check needs of a type, made once per
// type: its parameter names, and the fields whose values hold objects of
// checked types (nested). Nil (no check) for a type that is no struct,
// decodes itself, or has a field without a json tag.
type exactNames struct {
	names  map[string]bool
	nested map[string]reflect.Type
}

func exactOf(t reflect.Type) *exactNames {
	if m, ok := exactCache.Load(t); ok {
		return m.(*exactNames)
	}
	var e *exactNames
	st := deref(t)
	if st.Kind() == reflect.Struct && !reflect.PointerTo(st).Implements(unmarshaler) && tagged(st) {
		e = &exactNames{names: map[string]bool{}, nested: map[string]reflect.Type{}}
		for _, n := range paramNames(t) {
			e.names[n] = true
		}
		for i := 0; i < st.NumField(); i++ {
			f := st.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" || !f.IsExported() {
				continue
			}
			if holdsChecked(f.Type, 0) {
				e.nested[tag] = f.Type
			}
		}
	}
	exactCache.Store(t, e)
	return e
}

// holdsChecked reports whether values of t hold objects the exact-name
// check looks at: a checked struct, or a slice, array or map of them.
func holdsChecked(t reflect.Type, depth int) bool {
	t = deref(t)
	switch {
	case depth > 4:
		return false
	case t.Kind() == reflect.Struct:
		return !reflect.PointerTo(t).Implements(unmarshaler) && tagged(t)
	case t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map:
		return holdsChecked(t.Elem(), depth+1)
	}
	return false
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// inexactKey returns the first key of JSON object raw, decoded into t,
// that names no field of t exactly (encoding/json takes "COMMAND" for
// command), looking into nested objects of checked types too
// ({"state":{"aliases":…,"ALIASES":…}}); top says it is one of raw's own
// keys. Keys of maps are names of the caller's, kept as they are.
func inexactKey(raw []byte, t reflect.Type, prefix string) (name string, top bool) {
	e := exactOf(t)
	if e == nil {
		return "", false
	}
	topKeys(raw, func(k string) bool {
		if !e.names[k] {
			name = k
		}
		return name == ""
	})
	if name != "" {
		return prefix + name, prefix == ""
	}
	if len(e.nested) == 0 {
		return "", false
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return "", false
	}
	for k, ft := range e.nested {
		if v, ok := fields[k]; ok {
			if name := inexactValue(v, ft, prefix+k); name != "" {
				return name, false
			}
		}
	}
	return "", false
}

// inexactValue is inexactKey for a value of type t at path.
func inexactValue(v json.RawMessage, t reflect.Type, path string) string {
	t = deref(t)
	switch t.Kind() {
	case reflect.Struct:
		name, _ := inexactKey(v, t, path+".")
		return name
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return ""
		}
		for i, it := range items {
			if name := inexactValue(it, t.Elem(), path+"["+strconv.Itoa(i)+"]"); name != "" {
				return name
			}
		}
	case reflect.Map:
		var items map[string]json.RawMessage
		if json.Unmarshal(v, &items) != nil {
			return ""
		}
		for k, it := range items {
			if name := inexactValue(it, t.Elem(), path+"."+k); name != "" {
				return name
			}
		}
	}
	return ""
}

// tagged reports whether every exported field of struct t names its
// parameter in a json tag: an untagged field is named by its Go name in
// any case, as encoding/json reads it.
func tagged(t reflect.Type) bool {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		switch {
		case f.Anonymous && f.Tag.Get("json") == "":
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct && !tagged(ft) {
				return false
			}
		case f.IsExported() && f.Tag.Get("json") == "":
			return false
		}
	}
	return true
}

var (
	exactCache  sync.Map // reflect.Type → *exactNames
	unmarshaler = reflect.TypeFor[json.Unmarshaler]()
)

func paramsError(err error) *Error {
	var own *Error
	if errors.As(err, &own) {
		return own // a type's own UnmarshalJSON said what was wrong
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			return Errorf(CodeInvalidParams, "params must be an object")
		}
		kind := te.Type.Kind().String()
		if hint := integerHint(kind, te); hint != "" {
			return Errorf(CodeInvalidParams, "params.%s must be an integer%s, got %s", field, hint, te.Value)
		}
		return Errorf(CodeInvalidParams, "params.%s must be %s, got %s", field, typeName(kind), te.Value)
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		return Errorf(CodeInvalidParams, "unknown parameter %s; see the method's parameters in docs/protocol.md", f)
	}
	return Errorf(CodeInvalidParams, "params: %s", strings.TrimPrefix(msg, "json: "))
}

// unknownParam is the error for a parameter name no field has: it names
// the closest one when one is close (a prefix either way, an
// abbreviation, or two edits away: cmd, command; session, session_id)
// and lists them all.
func unknownParam(name string, known []string) *Error {
	if len(known) == 0 {
		return Errorf(CodeInvalidParams, "unknown parameter %q: this method takes no parameters", name)
	}
	best, bestD := "", 3
	for _, k := range known {
		d := suggest.Distance(strings.ToLower(name), k)
		lower := strings.ToLower(name)
		switch {
		case strings.HasPrefix(k, lower) || strings.HasPrefix(lower, k):
			d = min(d, 1)
		case len(lower) >= 3 && subsequence(lower, k):
			d = min(d, 2) // an abbreviation: cmd, command
		}
		if d < bestD {
			best, bestD = k, d
		}
	}
	hint := ""
	if best != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", best)
	}
	return Errorf(CodeInvalidParams, "unknown parameter %q%s; the parameters are %s", name, hint, strings.Join(known, ", "))
}

// paramNames lists the JSON names of the fields of the struct t points
// to, embedded structs' included, in order.
func paramNames(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-" || (!f.IsExported() && !f.Anonymous):
		case f.Anonymous && tag == "":
			names = append(names, paramNames(f.Type)...)
		case tag != "":
			names = append(names, tag)
		default:
			names = append(names, f.Name)
		}
	}
	return names
}

// subsequence reports whether a's letters appear in b in order.
func subsequence(a, b string) bool {
	for i := 0; i < len(b) && a != ""; i++ {
		if b[i] == a[0] {
			a = a[1:]
		}
	}
	return a == ""
}

// integerHint says more about a number refused for an integer field when
// the number is a whole one: it was out of the field's range, or written
// with an exponent or a fraction (1e15, 2.0), which the decoder refuses
// for an integer even when its value is one.
func integerHint(kind string, te *json.UnmarshalTypeError) string {
	if typeName(kind) != "an integer" {
		return ""
	}
	lit, ok := strings.CutPrefix(te.Value, "number ")
	if !ok {
		return ""
	}
	v, err := strconv.ParseFloat(lit, 64)
	if err != nil || math.IsInf(v, 0) || v != math.Trunc(v) {
		return ""
	}
	fits := v >= math.MinInt64 && v < math.MaxInt64
	if strings.HasPrefix(kind, "uint") {
		fits = v >= 0 && v < math.MaxUint64
	}
	if !fits || !strings.ContainsAny(lit, ".eE") {
		return " in range (this one is out of range)"
	}
	return " written in digits (" + strconv.FormatFloat(v, 'f', -1, 64) + ", not " + lit + ")"
}

func typeName(kind string) string {
	switch kind {
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	case "string":
		return "a string"
	case "bool":
		return "true or false"
	case "map", "struct":
		return "an object"
	case "slice":
		return "an array"
	}
	return fmt.Sprintf("of type %s", kind)
}
