package runtime

import (
	"context"
	"encoding/json"
	"fmt"
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

// TestStreamSaysItWaits: a streamed command that begins to wait for
// terminal input is told with exec.waiting, once per wait, with the
// prompt; answered, it goes on and the next wait is told again. A
// command that only prints is never said to wait. (A streaming client
// saw "name? " and then nothing: it could not tell a prompt from a
// pause.)
func TestStreamSaysItWaits(t *testing.T) {
	rt := newRuntime(t, Options{})
	id, reply := stream(t, rt, map[string]any{"command": `printf 'name? '; read n; printf 'age? '; read a; echo "$n is $a"`})
	var got []map[string]any
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := reply.Follow(ctx, func(method string, params any) error {
		b, _ := json.Marshal(params)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		m["method"] = method
		got = append(got, m)
		if method == protocol.NotifyExecWaiting {
			answer := map[string]string{"name? ": "ada\r", "age? ": "36\r"}[m["input"].(map[string]any)["prompt"].(string)]
			require.NotEmpty(t, answer, "a wait with an unexpected prompt: %v", m)
			go func() {
				mustCall(t, rt, "exec.input", map[string]any{"exec_id": id, "input": answer, "until": []string{}})
			}()
		}
		return nil
	})
	require.NoError(t, err, "the stream ended (nobody answers a wait that is not told)")
	var waits []string
	var out string
	for _, n := range got {
		switch n["method"] {
		case protocol.NotifyExecWaiting:
			assert.Equal(t, id, n["stream_id"])
			in := n["input"].(map[string]any)
			assert.Equal(t, "line", in["kind"])
			waits = append(waits, in["prompt"].(string))
		case protocol.NotifyExecOutput:
			out += n["data"].(string)
		}
	}
	assert.Equal(t, []string{"name? ", "age? "}, waits, "each wait told once")
	assert.Contains(t, out, "ada is 36\n")
	assert.Equal(t, protocol.NotifyExecExit, got[len(got)-1]["method"])

	_, reply = stream(t, rt, map[string]any{"command": "for i in 1 2 3 4 5; do echo $i; sleep 0.1; done"})
	for _, n := range collect(t, context.Background(), reply) {
		assert.NotEqual(t, protocol.NotifyExecWaiting, n["method"], "a command that only prints does not wait")
	}
}

// TestRunSaysWhereItCut: a truncated exec.run result says where in its
// stdout the bytes were left out, from which offset and how many (the
// head and the tail were glued with nothing to tell where), raw and
// rendered as text.
func TestRunSaysWhereItCut(t *testing.T) {
	rt := newRuntime(t, Options{})
	var whole strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&whole, "%d\n", i)
	}
	for _, render := range []string{"raw", "text"} {
		st := mustCall(t, rt, "exec.run", map[string]any{"command": "seq 1 20000", "max_output_bytes": 1000, "render": render})
		require.Equal(t, true, st["truncated"])
		om, ok := st["stdout_omitted"].(map[string]any)
		require.True(t, ok, "%s: %v", render, st)
		at, offset, n := int(om["at"].(float64)), int(om["offset"].(float64)), int(om["bytes"].(float64))
		out := st["stdout"].(string)
		assert.Equal(t, whole.String()[:offset], out[:at], "%s: the head", render)
		assert.Equal(t, whole.String()[offset+n:], out[at:], "%s: the tail", render)
		assert.EqualValues(t, whole.Len(), st["stdout_bytes"])
		assert.Nil(t, st["stderr_omitted"], "stderr was not cut")
	}
	st := mustCall(t, rt, "exec.run", map[string]any{"command": "echo short"})
	assert.Nil(t, st["stdout_omitted"])
}

// TestStatusSaysWhereItCut: a status of a command still running says
// where its output was cut as a final result does (statuses had
// truncated: true and nothing more), and leaves out one run only, raw and
// rendered as text; the result after a yield says it too.
func TestStatusSaysWhereItCut(t *testing.T) {
	rt := newRuntime(t, Options{})
	var whole strings.Builder
	for i := 1; i <= 20000; i++ {
		fmt.Fprintf(&whole, "%d\n", i)
	}
	check := func(what string, st map[string]any) {
		t.Helper()
		require.Equal(t, true, st["truncated"], what)
		om, ok := st["stdout_omitted"].(map[string]any)
		require.True(t, ok, "%s: %v", what, st)
		at, offset, n := int(om["at"].(float64)), int(om["offset"].(float64)), int(om["bytes"].(float64))
		out, start := st["stdout"].(string), int(st["stdout_offset"].(float64))
		assert.Equal(t, whole.String()[start:offset], out[:at], "%s: the head", what)
		assert.Equal(t, whole.String()[offset+n:], out[at:], "%s: the tail", what)
		assert.Nil(t, st["stderr_omitted"], "%s: stderr was not cut", what)
	}
	for _, render := range []string{"raw", "text"} {
		st := mustCall(t, rt, "exec.run", map[string]any{"command": "seq 1 20000; sleep 30", "max_output_bytes": 1000,
			"until": []string{"match:20000"}, "render": render})
		require.Equal(t, "running", st["state"], "%s: %v", render, st)
		check(render+", the status", st)
		mustCall(t, rt, "exec.cancel", map[string]any{"exec_id": st["exec_id"]})
		st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
		require.Equal(t, "exited", st["state"])
		assert.Nil(t, st["stdout_omitted"], "%s: nothing new, nothing cut", render)
	}
	st := mustCall(t, rt, "exec.run", map[string]any{"command": "sleep 0.3; seq 1 20000", "max_output_bytes": 1000, "yield_ms": 100})
	require.Equal(t, "running", st["state"])
	st = mustCall(t, rt, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	require.Equal(t, "exited", st["state"])
	check("the end after a yield", st)
}

// TestStreamWaitingKeepsOutputAndRetells: a wait seen while the client is
// behind is told after the output that came before it, none of which is
// dropped (a first version dropped the backlog); a second wait that
// follows input with no output between (a password read twice) is told
// too.
func TestStreamWaitingKeepsOutputAndRetells(t *testing.T) {
	rt := newRuntime(t, Options{})
	id, reply := stream(t, rt, map[string]any{"command": `seq 1 30000; printf 'go? '; read x; stty -echo; read a; read b; stty echo; echo "done $x$a$b"`})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out strings.Builder
	var waits []string
	var next int64
	answers := []string{"1\r", "2\r", "3\r"}
	err := reply.Follow(ctx, func(method string, params any) error {
		switch n := params.(type) {
		case protocol.OutputNotification:
			if n.Stream == "stdout" {
				require.Equal(t, next, n.Offset, "no stdout dropped")
				next += int64(len(n.Data))
				out.WriteString(n.Data)
			}
			time.Sleep(time.Millisecond) // a client that is behind
		case protocol.WaitingNotification:
			waits = append(waits, n.Input.Kind+":"+n.Input.Prompt)
			require.True(t, strings.HasSuffix(out.String(), "go? ") || len(waits) > 1, "the wait is told after its prompt: %q", out.String()[max(0, out.Len()-20):])
			require.LessOrEqual(t, len(waits), len(answers), "told more than once per wait: %q", waits)
			answer := answers[len(waits)-1]
			go func() {
				mustCall(t, rt, "exec.input", map[string]any{"exec_id": id, "input": answer, "until": []string{}})
			}()
		}
		return nil
	})
	require.NoError(t, err, "the stream ended")
	require.Len(t, waits, 3, "%q", waits)
	assert.Equal(t, "line:go? ", waits[0])
	assert.Contains(t, out.String(), "30000\ngo? ")
	assert.Contains(t, out.String(), "done 123\n")
}
