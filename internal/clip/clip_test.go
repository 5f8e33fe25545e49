package clip

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mark(k Cut) string {
	return fmt.Sprintf("[%d bytes, %d lines from %d]\n", k.Dropped, k.DroppedLines, k.From)
}

func lines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %02d\n", i) // 8 bytes each
	}
	return b.String()
}

func TestCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []string
		skip   map[int]int64 // before writes[i]
		max    int
		want   string
	}{
		{name: "fits", writes: []string{"abc", "de"}, max: 10, want: "abcde"},
		{name: "head and tail meet", writes: []string{"abcde", "fgh"}, max: 10, want: "abcdefgh"},
		{name: "no lines: cut between characters", writes: []string{"0123456789ABCDEFGHIJ"}, max: 10,
			want: "01234\n[10 bytes, 0 lines from 5]\nFGHIJ"},
		{name: "lines: cut at line boundaries", writes: []string{lines(10)}, max: 40,
			// head 20 bytes → "line 01\nline 02\n", tail 20 → "line 09\nline 10\n"
			want: "line 01\nline 02\n[48 bytes, 6 lines from 16]\nline 09\nline 10\n"},
		{name: "lines in pieces", writes: strings.SplitAfter(lines(10), "\n"), max: 40,
			want: "line 01\nline 02\n[48 bytes, 6 lines from 16]\nline 09\nline 10\n"},
		{name: "tail starting a line is kept whole", writes: []string{lines(10)}, max: 32,
			want: "line 01\nline 02\n[48 bytes, 6 lines from 16]\nline 09\nline 10\n"},
		{name: "one long line among short ones", writes: []string{"a\n" + strings.Repeat("x", 100) + "\nz\n"}, max: 20,
			want: "a\nxxxxxxxx\n[85 bytes, 0 lines from 10]\nxxxxxxx\nz\n"},
		{name: "characters never split", writes: []string{strings.Repeat("é", 20)}, max: 10,
			want: "éé\n[32 bytes, 0 lines from 4]\néé"},
		{name: "lost bytes: lines unknown", writes: []string{"ab", "cd"}, skip: map[int]int64{1: 100}, max: 10,
			want: "ab\n[100 bytes, -1 lines from 2]\ncd"},
		{name: "lost bytes drop the tail before them", writes: []string{"0123456789", "xy"}, skip: map[int]int64{1: 3}, max: 10,
			want: "01234\n[8 bytes, -1 lines from 5]\nxy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Clip{Max: tc.max}
			for i, w := range tc.writes {
				c.Skip(tc.skip[i])
				c.Write(w)
			}
			k := c.Cut()
			assert.Equal(t, tc.want, k.String(mark))
			assert.True(t, utf8.ValidString(k.Head) && utf8.ValidString(k.Tail))
			assert.Equal(t, k.Total, int64(len(k.Head))+k.Dropped+int64(len(k.Tail)), "every byte is kept or counted")
		})
	}
}

func TestBoundedMemory(t *testing.T) {
	c := Clip{Max: 10}
	for i := range 100000 {
		c.Write(string(rune('a' + i%26)))
	}
	require.LessOrEqual(t, cap(c.tail), 64)
	require.LessOrEqual(t, cap(c.head), 16)
	k := c.Cut()
	assert.Equal(t, int64(100000-10), k.Dropped)
}

func TestText(t *testing.T) {
	k := Text(lines(4), 1000)
	assert.Zero(t, k.Dropped)
	assert.Equal(t, lines(4), k.String(mark))
}
