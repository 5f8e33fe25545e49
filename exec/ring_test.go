package exec

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trl-project/trl/session"
)

// The ring keeps exactly the last cap bytes written; appendLast hands
// back any suffix of them and appendRange any run, in order, across the
// wrap.
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
			from := rng.IntN(len(kept) + 1)
			want := kept[from:min(len(kept), from+n)]
			if got := r.appendRange(nil, from, n); !bytes.Equal(got, want) {
				t.Fatalf("trial %d: appendRange(%d, %d) = %q, want %q", trial, from, n, got, want)
			}
		}
	}
}

// Page hands a reader paging with offset += length every kept byte once,
// in order and where it was written, never splitting a character it kept
// whole, and steps over the unkept gap between head and tail by starting
// past it.
func TestCollectorPage(t *testing.T) {
	out := []byte(strings.Repeat("añ€😀", 40)) // 1, 2, 3 and 4 bytes
	for _, budget := range []int{16, 64, 1000} {
		for _, limit := range []int{1, 2, 3, 5, 64} {
			c := NewCollector(budget)
			c.Output(session.Stdout, out[:100])
			c.Output(session.Stdout, out[100:])
			var gap, got int64
			offset := int64(0)
			for pages := 0; ; pages++ {
				require.Less(t, pages, 1000, "no progress")
				data, start, end := c.Page(session.Stdout, offset, limit)
				require.Equal(t, int64(len(out)), end)
				if len(data) == 0 {
					require.Equal(t, end, start)
					break
				}
				require.GreaterOrEqual(t, start, offset)
				require.LessOrEqual(t, len(data), max(limit, utf8.UTFMax))
				require.Equal(t, out[start:start+int64(len(data))], data, "budget %d limit %d: page at %d", budget, limit, start)
				if budget == 1000 {
					require.True(t, utf8.Valid(data), "limit %d: page %q at %d splits a character", limit, data, start)
				}
				gap += start - offset
				got += int64(len(data))
				offset = start + int64(len(data))
			}
			kept := int64(min(len(out), budget))
			assert.Equal(t, kept, got, "budget %d limit %d: bytes paged", budget, limit)
			assert.Equal(t, int64(len(out))-kept, gap, "budget %d limit %d: the gap", budget, limit)
		}
	}
}

// TestSinceLeavesOutOneRun: whatever the budget, the offset asked from
// and the limit, Since hands back kept output that leaves out at most one
// run of bytes inside it, and says exactly which: the bytes before Gap.At
// are the output from Start, those after it the output from Gap.Offset +
// Gap.Bytes to End (a status could not say where it cut when the
// head-tail gap and the limit's cut were two).
func TestSinceLeavesOutOneRun(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := range 3000 {
		c := NewCollector(2 + rng.IntN(300))
		var whole []byte
		for range rng.IntN(10) {
			p := make([]byte, rng.IntN(200))
			for i := range p {
				p[i] = 'a' + byte(rng.IntN(26))
			}
			c.Output(session.Stdout, p)
			whole = append(whole, p...)
		}
		offset := int64(rng.IntN(len(whole) + 2))
		limit := rng.IntN(400) - 20 // ≤ 0: no limit
		sl := c.Since(session.Stdout, offset, limit)
		require.EqualValues(t, len(whole), sl.End, "trial %d", trial)
		if offset >= int64(len(whole)) {
			assert.Empty(t, sl.Data)
			continue
		}
		require.GreaterOrEqual(t, sl.Start, offset, "trial %d", trial)
		if limit > 0 {
			assert.LessOrEqual(t, len(sl.Data), limit, "trial %d", trial)
		}
		if sl.Gap.Bytes == 0 {
			require.Equal(t, string(whole[sl.Start:]), string(sl.Data), "trial %d", trial)
			assert.Equal(t, sl.Start > offset, sl.Cut, "trial %d", trial)
			continue
		}
		assert.True(t, sl.Cut)
		require.Equal(t, string(whole[sl.Start:sl.Start+int64(sl.Gap.At)]), string(sl.Data[:sl.Gap.At]), "trial %d: the head", trial)
		assert.Equal(t, sl.Start+int64(sl.Gap.At), sl.Gap.Offset, "trial %d: the gap follows the head", trial)
		require.Equal(t, string(whole[sl.Gap.Offset+sl.Gap.Bytes:]), string(sl.Data[sl.Gap.At:]), "trial %d: the tail", trial)
	}
}

// TestSinceCutsOnCharacters: a cut to the limit never splits a character,
// and the gap it says still matches the bytes around it.
func TestSinceCutsOnCharacters(t *testing.T) {
	c := NewCollector(1 << 20)
	whole := []byte(strings.Repeat("é€😀x", 300))
	c.Output(session.Stdout, whole)
	for limit := 1; limit < 64; limit++ {
		sl := c.Since(session.Stdout, 0, limit)
		require.True(t, utf8.Valid(sl.Data), "limit %d: %q", limit, sl.Data)
		require.Equal(t, string(whole[:sl.Gap.At]), string(sl.Data[:sl.Gap.At]))
		require.Equal(t, string(whole[sl.Gap.Offset+sl.Gap.Bytes:]), string(sl.Data[sl.Gap.At:]))
	}
}
