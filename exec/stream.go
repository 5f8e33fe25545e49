package exec

import (
	"context"
	"sync"
	"unicode/utf8"

	"github.com/trl-project/trl/internal/clip"
	"github.com/trl-project/trl/session"
)

// DefaultWindow is how many bytes of recent output a stream retains.
const DefaultWindow = 8 << 20

// DefaultMaxRetained is the memory finished commands' output may hold
// together by default (RegistryOptions.MaxRetainedBytes).
const DefaultMaxRetained = 256 << 20

// maxChunk caps the data of one notification: consecutive chunks of one
// stream are merged up to it for a reader that is behind.
const maxChunk = 64 << 10

// Stream is the Sink of a streamed command: it keeps a bounded window of
// the most recent output, in arrival order, for any number of readers.
// Writers never wait for readers; a reader that falls behind the window
// learns exactly how many bytes it lost.
type Stream struct {
	ID        string
	SessionID string
	window    int

	mu      sync.Mutex
	chunks  []chunk // retained, oldest first
	first   int64   // index of chunks[0] among all chunks ever stored
	bytes   int     // retained bytes
	totals  [2]int64
	carry   [2][]byte // incomplete UTF-8 sequence held for the next write
	exit    *Exit
	changed chan struct{} // closed and replaced on every change
}

type chunk struct {
	stream session.Stream
	offset int64 // offset of data[0] in its stream
	data   []byte
}

// NewStream returns the window of a streamed command's output: id is its
// exec_id, window the bytes of recent output kept (0: DefaultWindow).
func NewStream(id, sessionID string, window int) *Stream {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Stream{ID: id, SessionID: sessionID, window: window, changed: make(chan struct{})}
}

// Output implements session.Sink. A multi-byte character split across
// reads is held back until it is whole, so no chunk ever splits one.
func (s *Stream) Output(st session.Stream, p []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.carry[st]; len(c) > 0 {
		p = append(c, p...)
		s.carry[st] = nil
	}
	if cut := incompleteTail(p); cut > 0 {
		s.carry[st] = append([]byte(nil), p[len(p)-cut:]...)
		p = p[:len(p)-cut]
	}
	s.store(st, p)
}

// chunkOverhead is what a chunk costs beyond its data (the struct and the
// allocation's header), counted against the window so that a writer of
// tiny pieces cannot make a window of bytes hold far more in memory.
const chunkOverhead = 64

// coalesceBelow: a write joins the last chunk, when it is of the same
// stream, while that chunk is smaller than this.
const coalesceBelow = 4 << 10

// store appends a copy of p, to the last chunk when it is small and of the
// same stream or as a new chunk, and evicts the oldest chunks beyond the
// window. The window counts memory (capacity plus chunkOverhead), not just
// output bytes, so no pattern of writes can make it hold more. Called with
// mu held.
func (s *Stream) store(st session.Stream, p []byte) {
	if len(p) == 0 {
		return
	}
	if n := len(s.chunks); n > 0 && s.chunks[n-1].stream == st && len(s.chunks[n-1].data) < coalesceBelow {
		last := &s.chunks[n-1]
		before := cap(last.data)
		last.data = append(last.data, p...)
		s.bytes += cap(last.data) - before
	} else {
		data := append([]byte(nil), p...)
		s.chunks = append(s.chunks, chunk{stream: st, offset: s.totals[st], data: data})
		s.bytes += cap(data) + chunkOverhead
	}
	s.totals[st] += int64(len(p))
	for s.bytes > s.window && len(s.chunks) > 1 {
		s.bytes -= cap(s.chunks[0].data) + chunkOverhead
		s.chunks[0] = chunk{}
		s.chunks = s.chunks[1:]
		s.first++
	}
	s.signal()
}

// retained implements Store.
func (s *Stream) retained() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

func (s *Stream) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// finish flushes held-back bytes and records how the command ended.
func (s *Stream) finish(x Exit) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.carry {
		c := s.carry[st]
		s.carry[st] = nil
		s.store(session.Stream(st), c)
	}
	s.exit = &x
	s.signal()
}

// Since returns stream st's output from offset, within limit bytes, as
// far as the window holds it (a yielded exec.stream command's status asks
// this); Cut says bytes were lost or are left for later. It has no Gap.
func (s *Stream) Since(st session.Stream, offset int64, limit int) Slice {
	data, start, lost, _ := s.ReadAt(st, offset, limit)
	end := start + int64(len(data))
	out, errb := s.Totals()
	total := out
	if st == session.Stderr {
		total = errb
	}
	return Slice{Data: data, Start: start, End: end, Cut: lost > 0 || end < total}
}

// Done reports whether the command has ended, and how.
func (s *Stream) Done() (Exit, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.exit == nil {
		return Exit{}, false
	}
	return *s.exit, true
}

// Totals returns the bytes produced so far on stdout and stderr.
func (s *Stream) Totals() (stdout, stderr int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.totals[0], s.totals[1]
}

// Chunk is one piece of output as a reader receives it. Data may share
// memory with the stream: it must not be modified.
type Chunk struct {
	Stream session.Stream
	Offset int64
	Data   []byte
	// Lost is how many bytes of this stream were evicted from the window
	// before the reader got to them, just before Offset.
	Lost int64
}

// Reader follows a Stream from given offsets.
type Reader struct {
	s    *Stream
	next int64    // index of the next chunk to read
	want [2]int64 // next offset wanted in each stream
}

// NewReader starts reading s at the given stdout and stderr offsets.
func (s *Stream) NewReader(stdoutOffset, stderrOffset int64) *Reader {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &Reader{s: s, next: s.first, want: [2]int64{max(stdoutOffset, 0), max(stderrOffset, 0)}}
}

// Next blocks until there is output past the reader's position or the
// stream has ended. It returns the pending chunks (merged per stream up to
// maxChunk each, in order) and, once everything is read and the command
// has ended, its Exit.
func (r *Reader) Next(ctx context.Context) ([]Chunk, *Exit, error) {
	for {
		r.s.mu.Lock()
		out := r.collect()
		exit := r.s.exit
		changed := r.s.changed
		r.s.mu.Unlock()
		if len(out) > 0 {
			return out, nil, nil
		}
		if exit != nil {
			x := *exit
			return nil, &x, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

// collect gathers what the reader has not seen. Called with s.mu held.
func (r *Reader) collect() []Chunk {
	s := r.s
	if r.next < s.first {
		r.next = s.first
	}
	var out []Chunk
	budget := 4 * maxChunk
	for i := r.next - s.first; i < int64(len(s.chunks)) && budget > 0; i++ {
		c := s.chunks[i]
		// The last chunk may still grow: stay on it, the offsets say
		// what has been seen.
		if i < int64(len(s.chunks))-1 {
			r.next++
		}
		end := c.offset + int64(len(c.data))
		if end <= r.want[c.stream] {
			continue // already seen or skipped by the reader
		}
		data := c.data
		off := c.offset
		var lost int64
		if off < r.want[c.stream] {
			data = data[r.want[c.stream]-off:]
			off = r.want[c.stream]
		} else if off > r.want[c.stream] {
			lost = off - r.want[c.stream]
		}
		r.want[c.stream] = end
		budget -= len(data)
		// Small pieces are merged (a copy); large ones are handed out as
		// they are stored: stored bytes never change, and the slice's
		// capacity is cut so that an append cannot reach the store.
		if n := len(out); n > 0 && lost == 0 && out[n-1].Stream == c.stream && len(out[n-1].Data) < coalesceBelow &&
			len(out[n-1].Data)+len(data) <= maxChunk && out[n-1].Offset+int64(len(out[n-1].Data)) == off {
			out[n-1].Data = append(out[n-1].Data, data...)
			continue
		}
		out = append(out, Chunk{Stream: c.stream, Offset: off, Data: data[:len(data):len(data)], Lost: lost})
	}
	return out
}

// ReadAt returns up to limit retained bytes of one stream from offset, for
// exec.read. When offset is older than the window, reading starts at the
// oldest retained byte and lost says how many were skipped.
func (s *Stream) ReadAt(st session.Stream, offset int64, limit int) (data []byte, start int64, lost int64, complete bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	offset = max(offset, 0)
	start = offset
	var oldest int64 = -1
	for _, c := range s.chunks {
		if c.stream != st {
			continue
		}
		if oldest < 0 {
			oldest = c.offset
		}
		end := c.offset + int64(len(c.data))
		if end <= offset {
			continue
		}
		from := int64(0)
		if c.offset < offset {
			from = offset - c.offset
		} else if len(data) == 0 && c.offset > offset {
			lost = c.offset - offset
			start = c.offset
		}
		room := limit - len(data)
		if room <= 0 {
			break
		}
		part := c.data[from:]
		if len(part) > room {
			// Do not end inside a character; and stop here, so that what
			// is returned is contiguous.
			cut := clip.TrimCutEnd(part[:room])
			if len(data) == 0 && len(cut) == 0 {
				// A limit smaller than the next character still returns
				// that character: a reader paging with offset += length
				// always advances.
				_, n := utf8.DecodeRune(part)
				cut = part[:max(n, 1)]
			}
			data = append(data, cut...)
			break
		}
		data = append(data, part...)
	}
	if len(data) == 0 && oldest < 0 && offset < s.totals[st] {
		// Nothing of this stream is retained any more.
		lost = s.totals[st] - offset
		start = s.totals[st]
	}
	complete = s.exit != nil && start+int64(len(data)) >= s.totals[st]
	return data, start, lost, complete
}

// incompleteTail returns how many bytes at the end of p begin a UTF-8
// character that is not yet complete (0 when p ends on a boundary or with
// bytes that can never become valid).
func incompleteTail(p []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		b := p[len(p)-i]
		if b < utf8.RuneSelf {
			return 0
		}
		if utf8.RuneStart(b) {
			if !utf8.FullRune(p[len(p)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}
