package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
)

// drainStream follows a stream to its end and returns stdout, stderr and
// the exit notification, checking seq and offsets on the way.
func drainStream(t *testing.T, reply *protocol.Reply) (stdout, stderr []byte, exit protocol.ExitNotification) {
	t.Helper()
	var seq int64
	var offs [2]int64
	stdout = make([]byte, 0, 256<<20)
	err := reply.Follow(context.Background(), func(method string, params any) error {
		if method == protocol.NotifyExecExit {
			exit = params.(protocol.ExitNotification)
			return nil
		}
		n := params.(protocol.OutputNotification)
		require.Equal(t, seq, n.Seq)
		seq++
		i := 0
		if n.Stream == "stderr" {
			i = 1
		}
		require.Equal(t, offs[i], n.Offset, "offset of seq %d", n.Seq)
		require.Zero(t, n.LostBytes)
		offs[i] += int64(len(n.Data))
		if i == 0 {
			stdout = append(stdout, n.Data...)
		} else {
			stderr = append(stderr, n.Data...)
		}
		return nil
	})
	require.NoError(t, err)
	return stdout, stderr, exit
}

func TestStreamUTF8(t *testing.T) {
	rt := newRuntime(t, Options{})
	// 100,000 Chinese characters (300,000 bytes) arrive in PTY reads of a
	// few KB, so many characters are split across reads.
	_, reply := stream(t, rt, map[string]any{"command": "python3 -c \"import sys; sys.stdout.write('中文字' * 33334)\" 2>/dev/null || { i=0; s=''; while [ $i -lt 334 ]; do s=\"$s中\"; i=$((i+1)); done; i=0; while [ $i -lt 300 ]; do printf %s \"$s\"; i=$((i+1)); done; }"})
	out, _, exit := drainStream(t, reply)
	assert.Equal(t, 0, exit.ExitCode)
	assert.NotContains(t, string(out), "\uFFFD")
	assert.Equal(t, int64(len(out)), exit.StdoutBytes)
	assert.Zero(t, len(out)%3)
	assert.True(t, strings.HasPrefix(string(out), "中"))
}

func TestStreamLargeInOrder(t *testing.T) {
	if testing.Short() {
		t.Skip("200 MB stream")
	}
	// Under -race this in-process reader is slower than the PTY; a large
	// window keeps the test about order and completeness, not speed.
	rt := newRuntime(t, Options{Commands: exec.RegistryOptions{Window: 96 << 20}})
	const mb = 200
	// seq prints numbered lines: their order proves nothing was reordered.
	_, reply := stream(t, rt, map[string]any{"command": "seq 1 30000000 | head -c 209715200"})
	start := time.Now()
	out, _, exit := drainStream(t, reply)
	t.Logf("%d MB in %s", mb, time.Since(start))
	require.Equal(t, mb<<20, len(out))
	assert.Equal(t, int64(mb<<20), exit.StdoutBytes)
	lines := strings.Split(string(out[:1<<20]), "\n")
	for i, l := range lines[:len(lines)-1] {
		if l != itoa(i+1) {
			t.Fatalf("line %d is %q", i, l)
		}
	}
}

func itoa(i int) string {
	var b [20]byte
	n := len(b)
	for {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
		if i == 0 {
			return string(b[n:])
		}
	}
}
