package protocol_test

import (
	"bytes"
	"encoding/json"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/protocol"
)

// reflected is v encoded by encoding/json: what the hand-written encoder
// must produce byte for byte.
func reflected(t testing.TB, v any) json.RawMessage {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(v))
	return bytes.TrimRight(b.Bytes(), "\n")
}

// oneByteWriter takes at most n bytes per call, to show WriteTo copes with
// short pieces.
type chunkedWriter struct {
	bytes.Buffer
	writes int
}

func (w *chunkedWriter) Write(p []byte) (int, error) {
	w.writes++
	return w.Buffer.Write(p)
}

func statuses() []protocol.ExecStatus {
	code := 3
	big := strings.Repeat("a\x00é\xff\u2028\"\\<&>\n", 40_000) // cuts fall everywhere
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 300_000)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	return []protocol.ExecStatus{
		{},
		{Stdout: "out\n", Stderr: "err\n", ExitCode: &code, DurationMS: 12, Cwd: "/tmp/a\x1fb\nc", ExecID: "x-1", SessionID: "s", State: "exited", Reason: "exit"},
		{Stdout: big, Stderr: string(random), TimedOut: true, Canceled: true, Truncated: true, StdoutBytes: 1 << 40, SessionExited: true},
		{Stdout: strings.Repeat("\x00", 100_000), State: "waiting_input", StdoutOffset: 7, StderrOffset: 9,
			Input: &protocol.InputWait{Kind: "line", Prompt: "name? <", Reader: protocol.Reader{PID: 1, Comm: "read"}, Confidence: "kernel"}},
		{AltScreen: true, Screen: &protocol.Screen{Rows: 2, Cols: 3, Lines: []string{"a", "\x1b"}, Title: "&"}},
		everyField[protocol.ExecStatus](),
	}
}

// everyField is a T with every field, however deep, set to a value that
// is not its zero: a field added to a type but forgotten by its
// hand-written encoder (end_cause once was) shows as a difference.
func everyField[T any]() T {
	var v T
	fill(reflect.ValueOf(&v).Elem())
	return v
}

func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v\x01")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(7)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(7)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Struct:
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i))
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0))
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k)
		fill(e)
		v.SetMapIndex(k, e)
	case reflect.Interface:
		v.Set(reflect.ValueOf("v"))
	}
}

// The hand-written status encoder equals encoding/json, whole (Bytes) and
// in pieces (WriteTo), as a result and as an error's data, in both
// dialects.
func TestExecStatusEncodesAsReflection(t *testing.T) {
	for i, st := range statuses() {
		want := reflected(t, st)
		for _, req := range requestsFor(json.RawMessage(`7`)) {
			for _, data := range []any{st, &st} {
				m, err := protocol.Result(req, data)
				require.NoError(t, err)
				var w chunkedWriter
				n, err := m.WriteTo(&w)
				require.NoError(t, err)
				require.Equal(t, int64(w.Len()), n)
				require.Equal(t, m.Bytes(), w.Bytes(), "status %d: WriteTo and Bytes differ", i)
				line := requireLine(t, w.Bytes())
				key := "data"
				if req.Dialect == protocol.JSONRPC {
					key = "result"
				}
				require.Equal(t, string(want), string(line[key]), "status %d", i)
				if len(st.Stdout) > 100_000 {
					require.Greater(t, w.writes, 10, "a large result is written in pieces")
				}
			}
			// As an error's data, it matches the reflection path exactly.
			e := &protocol.Error{Code: protocol.CodeCommandFailed, Message: "command exited with status 3", Data: st}
			viaRaw := &protocol.Error{Code: e.Code, Message: e.Message, Data: want}
			var w bytes.Buffer
			_, err := protocol.ErrorMessage(req, e).WriteTo(&w)
			require.NoError(t, err)
			require.Equal(t, string(protocol.EncodeError(req, viaRaw)), w.String(), "status %d as error data", i)
			require.Equal(t, w.String(), string(protocol.EncodeError(req, e)))
		}
	}
}

// exec.read's page is encoded by hand too (it may be 16 MiB of output):
// it equals encoding/json, whole and in pieces, with and without the
// optional ids.
func TestExecReadResultEncodesAsReflection(t *testing.T) {
	for i, st := range statuses() {
		for _, r := range []protocol.ExecReadResult{
			{Data: st.Stdout, Stream: "stdout", ExecID: st.ExecID, Length: len(st.Stdout), Offset: st.StdoutOffset},
			{Data: st.Stderr, Stream: "stderr", StreamID: "x-9", Complete: true, LostBytes: 1 << 33},
			everyField[protocol.ExecReadResult](),
		} {
			want := `{"id":7,"ok":true,"data":` + string(reflected(t, r)) + "}\n"
			for _, data := range []any{r, &r} {
				m, err := protocol.Result(&protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`7`)}, data)
				require.NoError(t, err)
				var w chunkedWriter
				_, err = m.WriteTo(&w)
				require.NoError(t, err)
				require.Equal(t, want, w.String(), "page %d", i)
				require.Equal(t, want, string(m.Bytes()), "page %d", i)
				if len(r.Data) > 100_000 {
					require.Greater(t, w.writes, 10, "a large page is written in pieces")
				}
			}
		}
	}
}

func FuzzExecStatusEncoding(f *testing.F) {
	f.Add("out", "err", "/")
	f.Add("\xff\xfe\xc3", "\u2028\u2029\x00\x1f", "\"\\")
	f.Fuzz(func(t *testing.T, out, errs, cwd string) {
		st := protocol.ExecStatus{Stdout: strings.Repeat(out, 9000/(len(out)+1)+1), Stderr: errs, Cwd: cwd}
		m, err := protocol.Result(&protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`1`)}, st)
		if err != nil {
			t.Fatal(err)
		}
		var w bytes.Buffer
		if _, err := m.WriteTo(&w); err != nil {
			t.Fatal(err)
		}
		want := `{"id":1,"ok":true,"data":` + string(reflected(t, st)) + "}\n"
		if w.String() != want || string(m.Bytes()) != want {
			t.Fatalf("encoding differs from encoding/json for %q %q %q", out, errs, cwd)
		}
	})
}

// resultOf512KiB is exec.run's result of 512 KiB of 80-column lines.
func resultOf512KiB() protocol.ExecStatus {
	code := 0
	line := strings.Repeat("x", 79) + "\n"
	return protocol.ExecStatus{Stdout: strings.Repeat(line, 512<<10/80), ExitCode: &code, Cwd: "/work",
		ExecID: "x-0123456789abcdef", SessionID: "default", State: "exited", Reason: "exit"}
}

// BenchmarkExecResult is #9's target (a 512 KiB result encodes in
// ≤ 0.3 ms with ≤ 2 allocations): "written" is how the transports send it,
// in pieces through a pooled buffer; "whole" encodes it into one buffer;
// "encoding/json" is the reflection the hand-written encoder replaced.
func BenchmarkExecResult(b *testing.B) {
	st := resultOf512KiB()
	req := &protocol.Request{Dialect: protocol.TRL, ID: json.RawMessage(`1`)}
	for _, bc := range []struct {
		name string
		run  func() error
	}{
		{"written", func() error {
			m, err := protocol.Result(req, &st)
			if err == nil {
				_, err = m.WriteTo(io.Discard)
			}
			return err
		}},
		{"whole", func() error {
			m, err := protocol.Result(req, &st)
			if err == nil {
				_ = m.Bytes()
			}
			return err
		}},
		{"encoding/json", func() error {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			return enc.Encode(st)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(st.Stdout)))
			b.ReportAllocs()
			for b.Loop() {
				if err := bc.run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
