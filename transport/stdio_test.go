package transport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestStdioSequential: requests are answered in order, each with its
// notifications, even when a later one would finish first.
func TestStdioSequential(t *testing.T) {
	checkGoroutines(t)
	in := strings.Join([]string{
		`{"id":1,"method":"sleep","params":{"ms":100}}`,
		`{"id":2,"method":"stream"}`,
		"{\n  \"id\": 3,\n  \"method\": \"echo\"\n}",
		`not json`,
		`{"jsonrpc":"2.0","method":"echo"}`,
		`{"jsonrpc":"2.0","id":4,"method":"fail"}`,
	}, "\n") + "\n"
	var out bytes.Buffer
	err := ServeStdio(context.Background(), strings.NewReader(in), &out, newFakeHandler(), ConnOptions{})
	require.NoError(t, err)

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 8, "output:\n%s", out.String())
	require.Equal(t, `{"id":1,"ok":true,"data":{"slept_ms":100}}`, lines[0])
	require.Equal(t, `{"id":2,"ok":true,"data":{"streaming":true}}`, lines[1])
	require.Equal(t, `{"method":"exec.output","params":{"n":0}}`, lines[2])
	require.Equal(t, `{"method":"exec.output","params":{"n":2}}`, lines[4])
	require.Equal(t, `{"id":3,"ok":true,"data":{}}`, lines[5])
	require.Contains(t, lines[6], `{"id":null,"ok":false,"error":{"code":"INVALID_PARAMS"`)
	require.Contains(t, lines[7], `{"jsonrpc":"2.0","id":4,"error":{"code":-32001`)
}

func TestStdioReadError(t *testing.T) {
	checkGoroutines(t)
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader(`{"id":1,"method":"echo"}`+"\n"), errReader{boom})
	var out bytes.Buffer
	err := ServeStdio(context.Background(), r, &out, newFakeHandler(), ConnOptions{})
	require.ErrorIs(t, err, boom)
	require.Equal(t, `{"id":1,"ok":true,"data":{}}`+"\n", out.String())
}

// TestStdioWriteError: when output fails, ServeStdio stops and says why,
// rather than reporting the read that failed because it closed the input.
func TestStdioWriteError(t *testing.T) {
	checkGoroutines(t)
	boom := errors.New("broken pipe")
	pr, pw := io.Pipe()
	defer pw.Close()
	go func() {
		_, _ = pw.Write([]byte(`{"id":1,"method":"echo"}` + "\n"))
	}()
	err := ServeStdio(context.Background(), pr, errWriter{boom}, newFakeHandler(), ConnOptions{})
	require.ErrorIs(t, err, boom)
}

type errWriter struct{ err error }

func (e errWriter) Write([]byte) (int, error) { return 0, e.err }

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// TestStdioContextClosesInput: when ctx ends, a reader that is an io.Closer
// is closed to wake the blocked Read, and ServeStdio returns nil.
func TestStdioContextClosesInput(t *testing.T) {
	checkGoroutines(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeStdio(ctx, pr, io.Discard, newFakeHandler(), ConnOptions{}) }()
	_, err := pw.Write([]byte(`{"id":1,"method":"echo"}` + "\n"))
	require.NoError(t, err)
	cancel()
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("ServeStdio did not return after its context ended")
	}
}

// TestStdioInputReachesARunningCommand: on stdio an exec.input or
// exec.cancel that names its command's exec_id is handled as it is read,
// not behind the request it answers (a streamed command waiting for input
// held up its own exec.input for ever, and trl stdio never exited); one
// that names a session waits its turn; a request running at end of input
// is still answered.
func TestStdioInputReachesARunningCommand(t *testing.T) {
	checkGoroutines(t)
	in := strings.Join([]string{
		`{"id":1,"method":"sleep","params":{"ms":500}}`,
		`{"id":2,"method":"exec.input","params":{"exec_id":"x-1","input":"y\n"}}`,
		`{"id":3,"method":"exec.input","params":{"session_id":"default","input":"y\n"}}`,
		`{"id":4,"method":"exec.cancel","params":{"exec_id":"x-1"}}`,
		`not json`,
	}, "\n") + "\n"
	var out bytes.Buffer
	err := ServeStdio(context.Background(), strings.NewReader(in), &out, newFakeHandler(), ConnOptions{})
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, 5, "output:\n%s", out.String())
	var ids []string
	for _, l := range lines {
		var m struct{ ID json.RawMessage }
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		ids = append(ids, string(m.ID))
	}
	require.Equal(t, []string{"2", "4"}, ids[:2], "the ones naming an exec_id first, in their order: %s", out.String())
	require.Equal(t, []string{"1", "3", "null"}, ids[2:], "then the others in order: %s", out.String())
}
