package console

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A session that lives for a moment is recorded whole: the recorder is
// told of it as it is created and of each command as it ends, so no poll
// can miss it (it looked every 500 ms and missed short sessions, their
// markers and their last commands). Its cast has each command's markers
// and output; its commands file has a row per command, output included,
// also for the command the destroy killed.
func TestRecordingOfAMomentarySession(t *testing.T) {
	dir := t.TempDir()
	h := newHarness(t, false, dir)
	rec := startRecorder(t, h, dir)

	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo momentary; echo oops >&2"})
	st := h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo started; sleep 30", "yield_ms": 300})
	require.Equal(t, "running", st["state"])
	h.call(t, "session.destroy", map[string]any{"session_id": sid, "force": true})
	rec.stop()

	var marks []string
	out, _ := castEvents(t, filepath.Join(dir, sid+".cast"))
	f, err := os.Open(filepath.Join(dir, sid+".cast"))
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	require.True(t, sc.Scan(), "no header")
	for sc.Scan() {
		var ev []any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev[1] == "m" {
			s, ok := ev[2].(string)
			require.True(t, ok, "%v", ev)
			marks = append(marks, s)
		}
	}
	require.GreaterOrEqual(t, len(marks), 3, "%q", marks)
	assert.Equal(t, []string{"$ echo momentary; echo oops >&2", "exit 0", "$ echo started; sleep 30"}, marks[:3])
	assert.Contains(t, out, "momentary\r\n")
	assert.Contains(t, out, "started\r\n")

	type row struct {
		Command  string `json:"command"`
		State    string `json:"state"`
		ExitCode *int   `json:"exit_code"`
		Stdout   string `json:"stdout"`
		Stderr   string `json:"stderr"`
	}
	var rows []row
	cf, err := os.Open(filepath.Join(dir, sid+".commands.jsonl"))
	require.NoError(t, err)
	defer cf.Close()
	for sc := bufio.NewScanner(cf); sc.Scan(); {
		var r row
		require.NoError(t, json.Unmarshal(sc.Bytes(), &r), sc.Text())
		rows = append(rows, r)
	}
	require.Len(t, rows, 2)
	zero := 0
	assert.Equal(t, row{Command: "echo momentary; echo oops >&2", State: "exited", ExitCode: &zero, Stdout: "momentary\n", Stderr: "oops\n"}, rows[0])
	assert.Equal(t, "echo started; sleep 30", rows[1].Command)
	assert.Equal(t, "exited", rows[1].State)
	assert.Equal(t, "started\n", rows[1].Stdout)
	require.NotNil(t, rows[1].ExitCode, "the killed command's row says how it ended")
	assert.NotEqual(t, 0, *rows[1].ExitCode)
}
