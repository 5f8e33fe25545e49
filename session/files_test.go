package session

import (
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoLockHeldWhileWritingFiles: the files a line needs (bash's command
// file, a command's stdin) are written with neither of the session's
// locks held: at each write a hook takes mu and ioMu (lockLog), and
// could not if the writer held them.
func TestNoLockHeldWhileWritingFiles(t *testing.T) {
	inEachShell(t, func(t *testing.T, s *Session) {
		var log lockLog
		hook := func(what string) { log.note(s, what) }
		s.fileHook.Store(&hook)
		in := "from stdin\n"
		k := &splitSink{}
		j, err := s.Start(Command{Text: "cat", Stdin: &in}, k)
		require.NoError(t, err)
		<-j.Done()
		out, _ := k.get()
		assert.Equal(t, "from stdin\n", out)
		written, held := log.get()
		assert.Contains(t, written, "the stdin file")
		if s.dialect.source {
			assert.Contains(t, written, "the command file")
		}
		assert.Empty(t, held)
	})
}

// TestCommandFileRunsEachLineItsOwnText: bash runs each line from one
// command file written over in place; a shorter command after a longer
// one runs nothing of the longer one's rest, and of Starts racing on an
// idle session one runs and the others are told the session is busy.
func TestCommandFileRunsEachLineItsOwnText(t *testing.T) {
	s, err := newManager(t).Create(Config{Shell: "bash"})
	if err != nil {
		t.Skipf("bash: %v", err)
	}
	run := func(text string) string {
		t.Helper()
		out, errOut, _ := run2(t, s, text)
		return out + errOut
	}
	assert.Equal(t, strings.Repeat("a", 300)+"\n", run("echo "+strings.Repeat("a", 300)+" # and a long comment"))
	assert.Equal(t, "b\n", run("echo b"))
	assert.Equal(t, "ccc\n", run("echo ccc"))

	for round := 0; round < 5; round++ {
		var started atomic.Int32
		var wg sync.WaitGroup
		lines := make([]*Line, 8)
		sinks := make([]*splitSink, 8)
		for i := range lines {
			wg.Add(1)
			go func() {
				defer wg.Done()
				sinks[i] = &splitSink{}
				// The line lasts a while, so that every racer tries while
				// it runs.
				j, err := s.Start(Command{Text: "sleep 0.2; echo racer-" + strings.Repeat("x", i)}, sinks[i])
				if err != nil {
					assert.ErrorIs(t, err, ErrBusy)
					return
				}
				started.Add(1)
				lines[i] = j
			}()
		}
		wg.Wait()
		require.Equal(t, int32(1), started.Load(), "one of the racing Starts runs")
		for i, j := range lines {
			if j == nil {
				continue
			}
			<-j.Done()
			out, _ := sinks[i].get()
			assert.Equal(t, "racer-"+strings.Repeat("x", i)+"\n", out, "the line ran its own text")
		}
	}
}
