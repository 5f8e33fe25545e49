package callbacks

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

func call(l *List[func() string]) []string {
	var got []string
	for _, f := range l.Load() {
		got = append(got, (*f)())
	}
	return got
}

func TestAddRemoveInOrder(t *testing.T) {
	var l List[func() string]
	assert.Nil(t, l.Load())
	removeA := l.Add(func() string { return "a" })
	removeB := l.Add(func() string { return "b" })
	l.Add(func() string { return "c" })
	assert.Equal(t, []string{"a", "b", "c"}, call(&l))

	before := l.Load()
	removeB()
	removeB() // twice is harmless
	assert.Equal(t, []string{"a", "c"}, call(&l))
	assert.Len(t, before, 3, "a list loaded before stays as it was")
	removeA()
	assert.Equal(t, []string{"c"}, call(&l))
}

// Adding, removing and loading at once is safe (run with -race).
func TestConcurrentUse(t *testing.T) {
	var l List[func() string]
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Go(func() {
			for j := 0; j < 200; j++ {
				remove := l.Add(func() string { return "x" })
				_ = call(&l)
				remove()
			}
		})
	}
	wg.Wait()
	assert.Empty(t, l.Load())
}
