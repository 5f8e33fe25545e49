package console

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// row is a commands.jsonl row, as much as these tests read of it.
type row struct {
	Command  string `json:"command"`
	State    string `json:"state"`
	ExitCode *int   `json:"exit_code"`
	Stdout   string `json:"stdout"`
	Stderr   string `json:"stderr"`
}

func rows(t *testing.T, path string) []row {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []row
	for sc := bufio.NewScanner(f); sc.Scan(); {
		var r row
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		out = append(out, r)
	}
	return out
}

func intp(n int) *int { return &n }

// A session that lives for a moment is recorded whole: the recorder is
// told of it as it is created and of each command as it ends, so no poll
// can miss it (it looked every 500 ms and missed short sessions, their
// markers and their last commands). Its cast has each command's markers
// and output; its commands file has a row per command, output included,
// also for the command the destroy killed and for one that ended the
// shell. The recorder takes nothing from the agent: its exec.wait still
// gets the output it had not read.
func TestRecordingOfAMomentarySession(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec := startRecorder(t, h, dir)

	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo momentary; echo oops >&2"})
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo started; sleep 0.5; echo late; sleep 30", "yield_ms": 200})
	require.Equal(t, "running", st["state"])
	require.Equal(t, "started\n", st["stdout"])
	time.Sleep(time.Second) // "late" is printed
	h.call(t, "session.destroy", map[string]any{"session_id": sid, "force": true})
	st = h.call(t, "exec.wait", map[string]any{"exec_id": st["exec_id"], "timeout_ms": 10000})
	assert.Equal(t, "late\n", st["stdout"], "the agent reads what it had not read")

	exiting := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	h.call(t, "exec.run", map[string]any{"session_id": exiting, "command": "echo bye; exit 3"})
	// Each recording is closed once its session has ended and the end of
	// its last command was told (as a stopping daemon's recorder stops
	// after every command's end was told).
	require.Eventually(t, func() bool {
		rec.rec.mu.Lock()
		defer rec.rec.mu.Unlock()
		return len(rec.rec.recs) == 0
	}, 15*time.Second, 20*time.Millisecond)
	rec.stop()

	out, _, marks := castStreams(t, filepath.Join(dir, sid+".cast"))
	require.GreaterOrEqual(t, len(marks), 3, "%q", marks)
	assert.Equal(t, []string{"$ echo momentary; echo oops >&2", "exit 0", "$ echo started; sleep 0.5; echo late; sleep 30"}, marks[:3])
	assert.Contains(t, out, "momentary\r\n")
	assert.Contains(t, out, "started\r\n")

	got := rows(t, filepath.Join(dir, sid+".commands.jsonl"))
	require.Len(t, got, 2)
	assert.Equal(t, row{Command: "echo momentary; echo oops >&2", State: "exited", ExitCode: intp(0), Stdout: "momentary\n", Stderr: "oops\n"}, got[0])
	assert.Equal(t, "echo started; sleep 0.5; echo late; sleep 30", got[1].Command)
	assert.Equal(t, "exited", got[1].State)
	assert.Equal(t, "started\nlate\n", got[1].Stdout)
	require.NotNil(t, got[1].ExitCode, "the killed command's row says how it ended")
	assert.NotEqual(t, 0, *got[1].ExitCode)

	assert.Equal(t, []row{{Command: "echo bye; exit 3", State: "exited", ExitCode: intp(3), Stdout: "bye\n"}},
		rows(t, filepath.Join(dir, exiting+".commands.jsonl")), "a command that ended its shell has its row")
}

// A recorder that stops while commands run waits for none of them and
// changes nothing for the agent waiting on one; a daemon that shuts down
// leaves a row for each command it ended.
func TestRecorderStopAndShutdown(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec := startRecorder(t, h, dir)
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	answered := make(chan map[string]any, 1)
	go func() {
		answered <- h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo first; sleep 2; echo second", "until": []string{}})
	}()
	time.Sleep(500 * time.Millisecond)
	t0 := time.Now()
	rec.stop()
	assert.Less(t, time.Since(t0), time.Second, "the recorder stopped at once")
	st := <-answered
	assert.Equal(t, "first\nsecond\n", st["stdout"], "the agent's command answered whole")

	dir2 := t.TempDir()
	rec2 := startRecorder(t, h, dir2)
	sid2 := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	st = h.call(t, "exec.run", map[string]any{"session_id": sid2, "command": "echo before the end; sleep 30", "yield_ms": 300})
	require.Equal(t, "running", st["state"])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, h.rt.Shutdown(ctx))
	rec2.stop()
	got := rows(t, filepath.Join(dir2, sid2+".commands.jsonl"))
	require.Len(t, got, 1)
	assert.Equal(t, "echo before the end; sleep 30", got[0].Command)
	assert.Equal(t, "before the end\n", got[0].Stdout, "read while the daemon shut down")
}
