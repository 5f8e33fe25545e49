package exec

import (
	"sync"
	"unicode/utf8"

	"github.com/trl-project/trl/internal/clip"
	"github.com/trl-project/trl/session"
)

// DefaultMaxOutput is exec.run's default cap on stdout+stderr together.
const DefaultMaxOutput = 512 << 10

// Collector keeps a command's output for a buffered result within a byte
// budget shared by stdout and stderr: the first half of the budget holds
// the head of the output in arrival order, and each stream keeps a ring of
// its most recent bytes for the tail. Memory stays under 1.5× the budget
// however much the command prints.
type Collector struct {
	mu      sync.Mutex
	max     int
	headCap int
	headLen int
	streams [2]collected
}

type collected struct {
	head    []byte
	tail    ring
	total   int64
	dropped bool
}

// NewCollector returns a Collector with budget max bytes (≤0: default).
func NewCollector(max int) *Collector {
	if max <= 0 {
		max = DefaultMaxOutput
	}
	c := &Collector{max: max, headCap: max / 2}
	for i := range c.streams {
		c.streams[i].tail.cap = max - c.headCap
	}
	return c
}

// Output implements session.Sink.
func (c *Collector) Output(s session.Stream, p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.streams[s]
	st.total += int64(len(p))
	if room := c.headCap - c.headLen; room > 0 {
		n := min(room, len(p))
		st.head = append(st.head, p[:n]...)
		c.headLen += n
		p = p[n:]
	}
	if len(p) > 0 {
		if st.tail.write(p) {
			st.dropped = true
		}
	}
}

// finish implements Store: a Collector has nothing to flush.
func (c *Collector) finish(Exit) {}

// retained implements Store.
func (c *Collector) retained() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, st := range c.streams {
		n += cap(st.head) + cap(st.tail.buf)
	}
	return n
}

// Output is what a Collector kept.
type Output struct {
	Stdout, Stderr           []byte
	StdoutBytes, StderrBytes int64
	Truncated                bool
	// StdoutCut and StderrCut are where in Stdout and Stderr the bytes
	// left out were (-1: none were): the head is before, the tail after.
	StdoutCut, StderrCut int
}

// Result assembles the kept output: whole streams when nothing was
// dropped, otherwise each stream's head and as much of its tail as the
// budget allows, cut on UTF-8 character boundaries. Each stream is copied
// once, straight from where it is kept, into a buffer of its final size:
// with the Collector's own 1.5×, a result takes at most 2.5× its budget.
func (c *Collector) Result() Output {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Output{StdoutBytes: c.streams[0].total, StderrBytes: c.streams[1].total}
	room := c.max - c.headLen
	// Share the room left after the heads between the tails: each gets
	// half, and what one does not need goes to the other.
	keep := [2]int{c.streams[0].tail.len(), c.streams[1].tail.len()}
	tails := keep
	if keep[0]+keep[1] > room {
		half := room / 2
		switch {
		case keep[0] <= half:
			keep[1] = room - keep[0]
		case keep[1] <= half:
			keep[0] = room - keep[1]
		default:
			keep[0], keep[1] = half, room-half
		}
	}
	var parts [2][]byte
	cuts := [2]int{-1, -1}
	for i := range c.streams {
		st := &c.streams[i]
		cut := st.dropped || keep[i] < tails[i]
		head := st.head
		if cut {
			head = clip.TrimCutEnd(head)
		}
		b := make([]byte, 0, len(head)+keep[i])
		b = append(b, head...)
		n := len(b)
		b = st.tail.appendLast(b, keep[i])
		if cut {
			out.Truncated = true
			b = append(b[:n], clip.TrimCutStart(b[n:])...)
			cuts[i] = n
		}
		parts[i] = b
	}
	out.Stdout, out.Stderr = parts[0], parts[1]
	out.StdoutCut, out.StderrCut = cuts[0], cuts[1]
	return out
}

// ring keeps the last cap bytes written to it.
type ring struct {
	cap  int
	buf  []byte
	next int // where the next byte goes once buf is full
	full bool
}

// write appends p and reports whether older bytes were overwritten.
func (r *ring) write(p []byte) (dropped bool) {
	if r.cap == 0 {
		return len(p) > 0
	}
	if len(p) >= r.cap {
		dropped = len(r.buf) > 0 || len(p) > r.cap
		if r.buf == nil || len(r.buf) < r.cap {
			r.buf = make([]byte, r.cap)
		}
		copy(r.buf, p[len(p)-r.cap:])
		r.next, r.full = 0, true
		return dropped
	}
	if !r.full {
		if len(r.buf)+len(p) <= r.cap {
			r.buf = append(r.buf, p...)
			if len(r.buf) == r.cap {
				r.full, r.next = true, 0
			}
			return false
		}
		// Fill up, then wrap.
		n := r.cap - len(r.buf)
		r.buf = append(r.buf, p[:n]...)
		r.full, r.next = true, 0
		p = p[n:]
	}
	for len(p) > 0 {
		n := copy(r.buf[r.next:], p)
		r.next = (r.next + n) % r.cap
		p = p[n:]
	}
	return true
}

// len is how many bytes the ring holds.
func (r *ring) len() int { return len(r.buf) }

// appendLast appends the last n of the kept bytes to dst, in order.
func (r *ring) appendLast(dst []byte, n int) []byte {
	n = min(n, len(r.buf))
	return r.appendRange(dst, len(r.buf)-n, n)
}

// appendRange appends at most n of the kept bytes to dst, in order,
// starting from the from'th.
func (r *ring) appendRange(dst []byte, from, n int) []byte {
	// In order the bytes are buf[next:] then buf[:next] once the ring
	// is full, buf before.
	first, second := r.buf, []byte(nil)
	if r.full {
		first, second = r.buf[r.next:], r.buf[:r.next]
	}
	for _, part := range [2][]byte{first, second} {
		if from >= len(part) {
			from -= len(part)
			continue
		}
		k := min(n, len(part)-from)
		dst = append(dst, part[from:from+k]...)
		n -= k
		from = 0
		if n == 0 {
			break
		}
	}
	return dst
}

// Since returns stream s's output from offset on, as far as the Collector
// kept it, cut to at most limit bytes (head and tail) on character
// boundaries, with at most one run of bytes left out inside it (Gap): the
// output not kept between the head and the tail, or the middle a cut to
// limit leaves out, never both, so that a status can say where it is. A
// command that yields (SPEC §8) is asked this for each status.
func (c *Collector) Since(s session.Stream, offset int64, limit int) Slice {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.streams[s]
	out := Slice{Start: offset, End: st.total}
	if offset >= st.total {
		out.Start = st.total
		return out
	}
	head := int64(len(st.head))
	tailStart := st.total - int64(st.tail.len())
	// The kept bytes from offset on are [offset, head) and then
	// [secondAt, total); bytes between the two were not kept.
	firstLen := max(head-offset, 0)
	secondAt := max(offset, head, tailStart)
	if firstLen == 0 {
		out.Start = secondAt
		out.Cut = secondAt > offset // offset fell where nothing is kept
	}
	secondLen := st.total - secondAt
	gap := firstLen > 0 && secondAt > head
	if limit <= 0 || firstLen+secondLen <= int64(limit) {
		out.Data = st.appendKept(make([]byte, 0, firstLen+secondLen), out.Start, out.Start+firstLen)
		out.Data = st.appendKept(out.Data, secondAt, st.total)
		if gap {
			out.Gap = Gap{At: int(firstLen), Offset: head, Bytes: secondAt - head}
			out.Cut = true
		}
		return out
	}
	// Too much: half of limit from the start and half from the end, shifted
	// when one side of a gap has less than its half.
	keepFirst, keepLast := int64(limit/2), int64(limit-limit/2)
	if gap && firstLen < keepFirst {
		keepFirst, keepLast = firstLen, int64(limit)-firstLen
	} else if gap && secondLen < keepLast {
		keepFirst, keepLast = int64(limit)-secondLen, secondLen
	}
	h := clip.TrimCutEnd(st.appendKept(nil, out.Start, out.Start+keepFirst))
	t := clip.TrimCutStart(st.appendKept(nil, st.total-keepLast, st.total))
	from := out.Start + int64(len(h))
	out.Data = append(h, t...)
	out.Gap = Gap{At: len(h), Offset: from, Bytes: st.total - int64(len(t)) - from}
	out.Cut = true
	return out
}

// appendKept appends the stream's bytes [from, to) to dst; all of them
// must be kept (in the head, or in the tail where the head ends).
func (st *collected) appendKept(dst []byte, from, to int64) []byte {
	head := int64(len(st.head))
	if from < head {
		dst = append(dst, st.head[from:min(to, head)]...)
		from = head
	}
	if from < to {
		tailStart := st.total - int64(st.tail.len())
		dst = st.tail.appendRange(dst, int(from-tailStart), int(to-from))
	}
	return dst
}

// Page returns at most limit bytes of stream s's output from offset on,
// contiguous and ending on a character boundary, for a client paging
// through the output with exec.read. start is the offset of the first byte
// returned: past offset when the bytes there were not kept (the gap
// between head and tail), the next kept byte. A limit smaller than the
// next character still returns that character, so a reader paging with
// offset += length always advances. Only the page is copied.
func (c *Collector) Page(s session.Stream, offset int64, limit int) (data []byte, start, end int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &c.streams[s]
	end = st.total
	head := int64(len(st.head))
	tailStart := st.total - int64(st.tail.len())
	// Take up to UTFMax-1 bytes more than asked, to find where the last
	// character ends.
	want := limit + utf8.UTFMax - 1
	switch {
	case offset >= st.total:
		return nil, st.total, end
	case offset < head:
		start = offset
		data = make([]byte, 0, min(int64(want), st.total-offset))
		data = append(data, st.head[offset:min(head, offset+int64(want))]...)
		if room := want - len(data); room > 0 && tailStart == head {
			data = st.tail.appendRange(data, 0, room)
		}
	default:
		start = max(offset, tailStart)
		data = st.tail.appendRange(nil, int(start-tailStart), want)
	}
	if len(data) > limit {
		cut := clip.TrimCutEnd(data[:limit])
		if len(cut) == 0 {
			_, n := utf8.DecodeRune(data)
			cut = data[:n]
		}
		data = cut
	}
	return data, start, end
}

// Truncated reports whether Result will be cut: more output arrived than
// the budget holds.
func (c *Collector) Truncated() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.streams[0].total+c.streams[1].total > int64(c.max)
}
