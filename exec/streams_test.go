package exec

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFinishedStreamsExpire: finished streams stay readable for Retain and
// at most MaxFinished of them; running ones are never dropped.
func TestFinishedStreamsExpire(t *testing.T) {
	now := time.Now()
	r := NewStreams(StreamOptions{Retain: 200 * time.Millisecond, MaxFinished: 2, Now: func() time.Time { return now }})
	running := r.New("s-1")
	var done []*Stream
	for i := 0; i < 3; i++ {
		s := r.New("s-1")
		r.Finish(s, Exit{})
		done = append(done, s)
	}
	_, err := r.Get(done[0].ID)
	assert.ErrorIs(t, err, ErrStreamNotFound, "the oldest of 3 finished streams is dropped when 2 are kept")
	for _, s := range done[1:] {
		_, err := r.Get(s.ID)
		require.NoError(t, err)
	}
	now = now.Add(199 * time.Millisecond)
	for _, s := range done[1:] {
		_, err := r.Get(s.ID)
		require.NoError(t, err, "still kept just before Retain")
	}
	now = now.Add(2 * time.Millisecond)
	for _, s := range done[1:] {
		_, err := r.Get(s.ID)
		assert.ErrorIs(t, err, ErrStreamNotFound, "expired after Retain")
	}
	_, err = r.Get(running.ID)
	assert.NoError(t, err, "a running stream is never expired")
}
