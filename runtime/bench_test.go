package runtime

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/protocol"
)

// BenchmarkExecRunTrue is exec.run `true` through the method table, with
// no transport: the runtime's, exec's and session's share of a command
// plus the shell's own (compare `trl bench`'s shell floor).
func BenchmarkExecRunTrue(b *testing.B) {
	rt := New(Options{Logger: zerolog.Nop()})
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = rt.Shutdown(ctx)
	}()
	call := &protocol.Call{Method: protocol.MethodExecRun, Params: []byte(`{"command":"true"}`)}
	if _, err := rt.Handle(context.Background(), call); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rt.Handle(context.Background(), call); err != nil {
			b.Fatal(err)
		}
	}
}
