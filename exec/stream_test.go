package exec

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/trl-project/trl/session"
)

// TestReadAtCharacterBoundary: a limit that falls inside a character ends
// the read before it, and what is returned is contiguous.
func TestReadAtCharacterBoundary(t *testing.T) {
	s := NewStream("st-x", "s-x", 1<<20)
	s.store(session.Stdout, []byte("aé"))
	s.chunks = append(s.chunks, chunk{stream: session.Stdout, offset: 3, data: []byte("bcd")}) // a separate chunk
	s.totals[0] = 6
	data, start, lost, _ := s.ReadAt(session.Stdout, 0, 2)
	assert.Equal(t, "a", string(data))
	assert.Equal(t, int64(0), start)
	assert.Zero(t, lost)
	data, start, lost, _ = s.ReadAt(session.Stdout, 1, 4)
	assert.Equal(t, "ébc", string(data))
	assert.Equal(t, int64(1), start)
	assert.Zero(t, lost)
}

// TestTinyWritesStayBounded: a writer of single bytes costs the window its
// chunks' overhead too, so memory stays near the window.
func TestTinyWritesStayBounded(t *testing.T) {
	s := NewStream("st-x", "s-x", 64<<10)
	for i := 0; i < 1_000_000; i++ {
		s.Output(session.Stdout, []byte{'x'})
		if i%2 == 0 {
			s.Output(session.Stderr, []byte{'y'})
		}
	}
	retained := 0
	for _, c := range s.chunks {
		retained += cap(c.data) + chunkOverhead
	}
	assert.Less(t, retained, 4*(64<<10), "memory held for a 64 KiB window")
	r := s.NewReader(0, 0)
	out, _ := r.collectAll()
	assert.Greater(t, len(out), 0)
	assert.True(t, strings.Trim(string(out), "x") == "")
}

// collectAll gathers what a reader can read now, stdout only.
func (r *Reader) collectAll() ([]byte, int64) {
	r.s.mu.Lock()
	defer r.s.mu.Unlock()
	var out []byte
	var lost int64
	for {
		cs := r.collect()
		if len(cs) == 0 {
			return out, lost
		}
		for _, c := range cs {
			if c.Stream == session.Stdout {
				out = append(out, c.Data...)
				lost += c.Lost
			}
		}
	}
}
