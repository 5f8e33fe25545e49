package gateway

import (
	"net/http"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	headtail "github.com/trl-project/trl/internal/clip"
)

func TestOutputClip(t *testing.T) {
	c := outputClip{headtail.Clip{Max: 10}}
	c.write("abc")
	c.write("de")
	require.Equal(t, "abcde", c.String())
	c.write("fgh")
	require.Equal(t, "abcdefgh", c.String(), "head and tail meet: nothing omitted")

	c = outputClip{headtail.Clip{Max: 10}}
	for i := range 1000 {
		c.write(string(rune('a' + i%26)))
	}
	s := c.String()
	require.True(t, strings.HasPrefix(s, "abcde\n[... trl: 990 bytes of output omitted ...]\n"), "%q", s)
	require.True(t, strings.HasSuffix(s, "\n"+lastN(1000, 5)), "%q", s)

	// One huge write keeps its head and its tail.
	c = outputClip{headtail.Clip{Max: 10}}
	c.write("0123456789ABCDEFGHIJ")
	require.Equal(t, "01234\n[... trl: 10 bytes of output omitted ...]\nFGHIJ", c.String())

	// Cuts never split a character.
	c = outputClip{headtail.Clip{Max: 10}}
	c.write(strings.Repeat("é", 20))
	s = c.String()
	require.True(t, utf8.ValidString(s), "%q", s)
	require.True(t, strings.HasPrefix(s, "éé\n[... trl: 32 bytes"), "%q", s)
	require.True(t, strings.HasSuffix(s, "\néé"), "%q", s)

	// Lost bytes close the head and are counted.
	c = outputClip{headtail.Clip{Max: 10}}
	c.write("ab")
	c.skip(100)
	c.write("cd")
	require.Equal(t, "ab\n[... trl: 100 bytes of output omitted ...]\ncd", c.String())
}

func lastN(n, k int) string {
	var b strings.Builder
	for i := n - k; i < n; i++ {
		b.WriteRune(rune('a' + i%26))
	}
	return b.String()
}

func TestCollectorUpdates(t *testing.T) {
	t0 := time.Date(2026, 2, 14, 12, 0, 0, 0, time.UTC)
	c := newCollector(1<<20, 100*time.Millisecond)
	c.add("stdout", "a", 0, t0)
	c.add("stdout", "b", 0, t0.Add(50*time.Millisecond))
	c.add("stderr", "x", 0, t0.Add(60*time.Millisecond))
	require.False(t, c.overTime(), "output within one interval is answered directly")
	c.add("stdout", "c", 0, t0.Add(200*time.Millisecond))
	require.True(t, c.overTime())
	require.Equal(t, []update{
		{Delta: "ab", At: "2026-02-14T12:00:00.000Z", Stream: "stdout"},
		{Delta: "x", At: "2026-02-14T12:00:00.060Z", Stream: "stderr"},
		{Delta: "c", At: "2026-02-14T12:00:00.200Z", Stream: "stdout"},
	}, c.updates)
	require.Equal(t, "abc\nx", c.output())
	require.Equal(t, `{"updates":[{"delta":"ab","at":"2026-02-14T12:00:00.000Z","stream":"stdout"},{"delta":"x","at":"2026-02-14T12:00:00.060Z","stream":"stderr"},{"delta":"c","at":"2026-02-14T12:00:00.200Z","stream":"stdout"}],"result":{"ok":true,"output":"<&>"}}`+"\n",
		string(c.body(toolResult{OK: true, Output: ptr("<&>")})))

	// Updates are capped; the result still has head and tail.
	c = newCollector(8, time.Nanosecond)
	for i := range 10 {
		c.add("stdout", "ab", 0, t0.Add(time.Duration(i)*time.Second))
	}
	require.Len(t, c.updates, 4)
	require.Equal(t, "abab\n[... trl: 12 bytes of output omitted ...]\nabab", c.output())
}

func TestMemoStore(t *testing.T) {
	t0 := time.Now()
	s := newMemoStore(time.Minute, 3, 1000)
	fp := [32]byte{1}
	key := func(i int) [32]byte { return memoKey("t", string(rune('a'+i))) }

	m, first, conflict := s.begin(key(0), fp, t0)
	require.True(t, first)
	require.False(t, conflict)
	m2, first, _ := s.begin(key(0), fp, t0)
	require.False(t, first)
	require.Same(t, m, m2, "a duplicate while running shares the memo")
	_, _, conflict = s.begin(key(0), [32]byte{2}, t0)
	require.True(t, conflict)
	s.finish(m, http.StatusOK, []byte("one"), true, t0)
	<-m2.done
	require.Equal(t, "one", string(m2.body))

	// An answer that is not kept is forgotten: the next one runs.
	m, _, _ = s.begin(key(1), fp, t0)
	s.finish(m, http.StatusOK, []byte("busy"), false, t0)
	_, first, _ = s.begin(key(1), fp, t0)
	require.True(t, first)

	// At most maxEntries finished answers, oldest dropped first.
	s = newMemoStore(time.Minute, 3, 1<<20)
	for i := range 5 {
		m, _, _ := s.begin(key(i), fp, t0)
		s.finish(m, http.StatusOK, []byte("x"), true, t0)
	}
	require.Equal(t, 3, s.len())
	_, first, _ = s.begin(key(0), fp, t0)
	require.True(t, first, "the oldest was dropped")
	_, first, _ = s.begin(key(4), fp, t0)
	require.False(t, first)

	// At most maxBytes of bodies.
	s = newMemoStore(time.Minute, 100, 1000)
	for i := range 5 {
		m, _, _ := s.begin(key(i), fp, t0)
		s.finish(m, http.StatusOK, make([]byte, 300), true, t0)
	}
	require.Equal(t, 2, s.len())
	require.LessOrEqual(t, s.bytes, int64(1000))

	// Expired after ttl.
	s = newMemoStore(time.Minute, 100, 1<<20)
	m, _, _ = s.begin(key(0), fp, t0)
	s.finish(m, http.StatusOK, []byte("x"), true, t0)
	_, first, _ = s.begin(key(0), fp, t0.Add(59*time.Second))
	require.False(t, first)
	_, first, _ = s.begin(key(0), fp, t0.Add(61*time.Second))
	require.True(t, first, "expired")
}
