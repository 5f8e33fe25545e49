package exec

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// The ring keeps exactly the last cap bytes written, and appendLast hands
// back any suffix of them in order, across the wrap.
func TestRingAppendLast(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		r := ring{cap: 1 + rng.IntN(40)}
		var all []byte
		for range rng.IntN(12) {
			p := make([]byte, rng.IntN(60))
			for i := range p {
				p[i] = byte(rng.UintN(256))
			}
			r.write(p)
			all = append(all, p...)
		}
		kept := all[len(all)-min(len(all), r.cap):]
		if r.len() != len(kept) {
			t.Fatalf("trial %d: len %d, want %d", trial, r.len(), len(kept))
		}
		for n := 0; n <= len(kept); n++ {
			got := r.appendLast([]byte("x"), n)
			if !bytes.Equal(got[1:], kept[len(kept)-n:]) || got[0] != 'x' {
				t.Fatalf("trial %d: appendLast(%d) = %q, want %q", trial, n, got[1:], kept[len(kept)-n:])
			}
		}
	}
}
