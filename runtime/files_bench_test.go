package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/protocol"
)

// BenchmarkFSRead64K is fs.read of a 64 KiB source file through the
// method table and the response encoder, with no transport: the daemon's
// share of `trl bench`'s fs.read row.
func BenchmarkFSRead64K(b *testing.B) {
	rt := New(Options{Logger: zerolog.Nop()})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	}()
	p := filepath.Join(b.TempDir(), "f.go")
	line := []byte("\tfmt.Fprintf(w, \"%s: %d bytes\\n\", name, n) // a line of source\n")
	if err := os.WriteFile(p, bytes.Repeat(line, 64<<10/len(line)+1)[:64<<10], 0o644); err != nil {
		b.Fatal(err)
	}
	params, _ := json.Marshal(map[string]any{"path": p})
	call := &protocol.Call{Method: protocol.MethodFSRead, Params: params}
	req := &protocol.Request{ID: json.RawMessage(`1`)}
	b.ReportAllocs()
	for b.Loop() {
		reply, err := rt.Handle(context.Background(), call)
		if err != nil {
			b.Fatal(err)
		}
		m, err := protocol.Result(req, reply.Data)
		if err != nil {
			b.Fatal(err)
		}
		m.WriteTo(io.Discard)
	}
}
