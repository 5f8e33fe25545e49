package transport

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"runtime"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// frames reads every message from in and renders them, with "TOO LARGE"
// for ErrTooLarge and a final "EOF".
func frames(t *testing.T, r io.Reader, max int) []string {
	t.Helper()
	f := NewFramer(r, max)
	var out []string
	for range 10000 {
		msg, err := f.Next()
		switch {
		case errors.Is(err, ErrTooLarge):
			out = append(out, "TOO LARGE")
		case err == io.EOF:
			return append(out, "EOF")
		case err != nil:
			t.Fatalf("Next: %v", err)
		default:
			out = append(out, string(msg))
		}
	}
	t.Fatal("framer did not reach EOF")
	return nil
}

func TestFramer(t *testing.T) {
	pretty := "{\n  \"id\": 1,\n  \"method\": \"echo\",\n  \"params\": {\n    \"a\": [1, 2]\n  }\n}\n"
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"single line", `{"id":1,"method":"echo"}` + "\n", 0,
			[]string{`{"id":1,"method":"echo"}`, "EOF"}},
		{"no final newline", `{"id":1}`, 0, []string{`{"id":1}`, "EOF"}},
		{"crlf", "{\"id\":1}\r\n{\"id\":2}\r\n", 0, []string{`{"id":1}`, `{"id":2}`, "EOF"}},
		{"pretty printed", pretty, 0, []string{strings.TrimSpace(pretty), "EOF"}},
		{"two on one line", `{"id":1}{"id":2}` + "\n", 0, []string{`{"id":1}`, `{"id":2}`, "EOF"}},
		{"two with space", `{"id":1} {"id":2}`, 0, []string{`{"id":1}`, `{"id":2}`, "EOF"}},
		{"blank lines skipped", "\n\n  \n\t\r\n{\"id\":1}\n\n\n", 0, []string{`{"id":1}`, "EOF"}},
		{"braces in strings", `{"a":"}}]]{{[","b":"\\"}` + "\n" + `{"c":1}`, 0,
			[]string{`{"a":"}}]]{{[","b":"\\"}`, `{"c":1}`, "EOF"}},
		{"escaped quote in string", `{"a":"say \"}\" now"}` + "\n", 0,
			[]string{`{"a":"say \"}\" now"}`, "EOF"}},
		{"escaped backslash then quote", `{"a":"\\\\"}{"b":"\\"}`, 0,
			[]string{`{"a":"\\\\"}`, `{"b":"\\"}`, "EOF"}},
		{"array", "[1,[2,{\"x\":[3]}]]\n", 0, []string{`[1,[2,{"x":[3]}]]`, "EOF"}},
		{"malformed line", "hello world  \n{\"id\":1}\n", 0, []string{"hello world", `{"id":1}`, "EOF"}},
		{"malformed line with brace later", "  nope {\"id\":1}\n", 0, []string{`nope {"id":1}`, "EOF"}},
		{"trailing garbage after value", `{"id":1}, x` + "\n{}", 0, []string{`{"id":1}`, ", x", "{}", "EOF"}},
		{"partial at EOF", "{\"id\":1}\n{\"id\":2,\"method\":", 0,
			[]string{`{"id":1}`, `{"id":2,"method":`, "EOF"}},
		{"unterminated string before newline", "{\"a\":\"}\n", 0, []string{"{\"a\":\"}", "EOF"}},
		{"unterminated string ends at newline", "{\"a\":\"x}\n{\"id\":2}\n", 0, []string{"{\"a\":\"x}", `{"id":2}`, "EOF"}},
		{"unterminated string at EOF", "{\"a\":\"x}", 0, []string{"{\"a\":\"x}", "EOF"}},
		{"unclosed request then a good one", "{\"id\":1,\"method\":\n{\"id\":2}\n", 0,
			[]string{`{"id":1,"method":`, `{"id":2}`, "EOF"}},
		{"object value on its own line stays", "{\"id\":1,\"params\":\n  {\"a\":1\n  }\n}\n", 0,
			[]string{"{\"id\":1,\"params\":\n  {\"a\":1\n  }\n}", "EOF"}},
		{"empty input", "", 0, []string{"EOF"}},
		{"only blanks", "\n \n", 0, []string{"EOF"}},
		{"oversize single line resyncs", `{"id":1,"p":"` + strings.Repeat("x", 100) + `"}` + "\n" + `{"id":2}` + "\n", 32,
			[]string{"TOO LARGE", `{"id":2}`, "EOF"}},
		{"oversize malformed line resyncs", strings.Repeat("y", 100) + "\n{}\n", 32,
			[]string{"TOO LARGE", "{}", "EOF"}},
		{"oversize without newline", strings.Repeat("[", 100), 32, []string{"TOO LARGE", "EOF"}},
		{"exactly max", `{"a":"12345"}` + "\n", 13, []string{`{"a":"12345"}`, "EOF"}},
		{"one over max", `{"a":"123456"}` + "\n{}", 13, []string{"TOO LARGE", "{}", "EOF"}},
		{"oversize pretty printed resyncs by line", "{\n\"a\": \"" + strings.Repeat("z", 40) + "\"\n}\n{}\n", 16,
			[]string{"TOO LARGE", "}", "{}", "EOF"}},
	}
	readers := map[string]func(io.Reader) io.Reader{
		"whole":    func(r io.Reader) io.Reader { return r },
		"one byte": iotest.OneByteReader,
		"half":     iotest.HalfReader,
	}
	for _, tt := range tests {
		for rname, wrap := range readers {
			t.Run(tt.name+"/"+rname, func(t *testing.T) {
				require.Equal(t, tt.want, frames(t, wrap(strings.NewReader(tt.in)), tt.max))
			})
		}
	}
}

func TestFramerReadError(t *testing.T) {
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(`{"id":1}`+"\n"+`{"id":`), iotest.ErrReader(boom))
	f := NewFramer(r, 0)
	msg, err := f.Next()
	require.NoError(t, err)
	require.Equal(t, `{"id":1}`, string(msg))
	_, err = f.Next()
	require.ErrorIs(t, err, boom)
	_, err = f.Next()
	require.ErrorIs(t, err, boom, "the read error sticks")
}

// TestFramerEOFSticks guards against reading again after EOF, which on a
// terminal would wait for another ^D.
func TestFramerEOFSticks(t *testing.T) {
	r := &countingReader{r: strings.NewReader("{}")}
	f := NewFramer(r, 0)
	_, err := f.Next()
	require.NoError(t, err)
	for range 3 {
		_, err = f.Next()
		require.Equal(t, io.EOF, err)
	}
	require.Equal(t, 1, r.eofs)
}

type countingReader struct {
	r    io.Reader
	eofs int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.eofs++
	}
	return n, err
}

// endless yields an unterminated JSON string forever after a prefix, then
// stops after n bytes with "\n{}\n"; it allocates nothing per read.
type endless struct {
	n, done int
	tail    []byte
}

func (e *endless) Read(p []byte) (int, error) {
	if e.done < e.n {
		k := min(len(p), e.n-e.done)
		for i := range k {
			if e.done+i == 0 {
				p[i] = '{'
			} else if e.done+i == 1 {
				p[i] = '"'
			} else {
				p[i] = 'x'
			}
		}
		e.done += k
		return k, nil
	}
	if len(e.tail) == 0 {
		return 0, io.EOF
	}
	k := copy(p, e.tail)
	e.tail = e.tail[k:]
	return k, nil
}

// TestFramerMemoryBounded feeds 64 MiB of one oversized message through a
// 1 MiB cap and checks the framer allocated about the cap, not the message.
func TestFramerMemoryBounded(t *testing.T) {
	const max = 1 << 20
	r := &endless{n: 64 << 20, tail: []byte("\n{}\n")}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	got := frames(t, r, max)
	runtime.ReadMemStats(&after)
	require.Equal(t, []string{"TOO LARGE", "{}", "EOF"}, got)
	allocated := after.TotalAlloc - before.TotalAlloc
	require.Less(t, allocated, uint64(4*max), "framer allocated %d bytes for a %d-byte cap", allocated, max)
}

func FuzzFramer(f *testing.F) {
	seeds := []string{
		`{"id":1,"method":"system.ping"}` + "\n",
		"{\n  \"id\": \"a\",\n  \"params\": {\"s\": \"}\\\"{\"}\n}\n",
		`{"a":1}{"b":[2]}`,
		"garbage\n\n[]\n",
		`{"a":"\\\\\"}"}`,
		"{{{{{{",
		"}}}]]]\n{}",
		"\"just a string\"\n",
		strings.Repeat("x", 300) + "\n{}\n",
		"[\"\\",
	}
	for _, s := range seeds {
		f.Add([]byte(s), uint16(64))
		f.Add([]byte(s), uint16(7))
	}
	f.Fuzz(func(t *testing.T, data []byte, max16 uint16) {
		max := int(max16%4096) + 1
		fr := NewFramer(iotest.HalfReader(bytes.NewReader(data)), max)
		var first []byte
		for i := 0; ; i++ {
			if i > len(data)+1 {
				t.Fatalf("framer made %d steps on %d bytes", i, len(data))
			}
			msg, err := fr.Next()
			if errors.Is(err, ErrTooLarge) {
				continue
			}
			if err == io.EOF {
				break
			}
			require.NoError(t, err)
			require.NotEmpty(t, msg)
			require.LessOrEqual(t, len(msg), max)
			if i == 0 {
				first = msg
			}
		}
		// One valid JSON object or array that fits comes out whole.
		trimmed := bytes.Trim(data, " \t\r\n")
		if json.Valid(trimmed) && len(trimmed) <= max && (trimmed[0] == '{' || trimmed[0] == '[') {
			require.Equal(t, string(trimmed), string(first))
		}
	})
}

// A multi-line request that is already malformed is answered as soon as
// its bad line arrives, not when the next request does.
func TestFramerAnswersBadMultiLineAtOnce(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	f := NewFramer(pr, 1<<20)
	got := make(chan []byte, 1)
	go func() {
		msg, _ := f.Next()
		got <- msg
	}()
	_, err := pw.Write([]byte("{\"id\":\"bad\",\"method\":\n"))
	require.NoError(t, err)
	select {
	case m := <-got:
		t.Fatalf("a valid prefix was cut: %q", m)
	case <-time.After(100 * time.Millisecond):
	}
	_, err = pw.Write([]byte("this is not json\n"))
	require.NoError(t, err)
	select {
	case m := <-got:
		assert.Contains(t, string(m), "this is not json")
	case <-time.After(5 * time.Second):
		t.Fatal("the malformed request waited for the next one")
	}
	// A good multi-line request still goes through whole.
	go func() {
		msg, _ := f.Next()
		got <- msg
	}()
	_, err = pw.Write([]byte("{\"id\":2,\n \"method\": \"system.ping\"\n}\n"))
	require.NoError(t, err)
	select {
	case m := <-got:
		assert.JSONEq(t, `{"id":2,"method":"system.ping"}`, string(m))
	case <-time.After(5 * time.Second):
		t.Fatal("no message")
	}
}
