package console

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type transcriptReply struct {
	SessionID string `json:"session_id"`
	Commands  []struct {
		ExecID     string `json:"exec_id"`
		Command    string `json:"command"`
		State      string `json:"state"`
		ExitCode   *int   `json:"exit_code"`
		Stdout     string `json:"stdout"`
		Stderr     string `json:"stderr"`
		DurationMS int64  `json:"duration_ms"`
		Duration   string `json:"duration"`
		Cwd        string `json:"cwd"`
		StartedAt  string `json:"started_at"`
	} `json:"commands"`
}

// TestTranscriptAPI reads /console/api/commands after real commands: each
// carries its stdout and stderr apart, exit code, duration in human
// units, working directory and start time.
func TestTranscriptAPI(t *testing.T) {
	h := newHarness(t, false, "")
	sid := h.call(t, "session.create", map[string]any{"shell": "/bin/sh"})["session_id"].(string)
	before := time.Now().Add(-time.Second)
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "echo to-stdout; echo to-stderr >&2"})
	h.call(t, "exec.run", map[string]any{"session_id": sid, "command": "cd /tmp && sleep 0.3 && printf 'a\\nb\\n'; exit 7"})
	c := h.login(t)
	resp, err := c.Get(h.srv.URL + "/console/api/commands?session=" + sid)
	require.NoError(t, err)
	defer resp.Body.Close()
	var tr transcriptReply
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&tr))
	require.Len(t, tr.Commands, 2)

	first, second := tr.Commands[0], tr.Commands[1]
	assert.Equal(t, "to-stdout\n", first.Stdout)
	assert.Equal(t, "to-stderr\n", first.Stderr)
	require.NotNil(t, first.ExitCode)
	assert.Equal(t, 0, *first.ExitCode)
	assert.Regexp(t, `^\d+ ms$|^\d+\.\d s$`, first.Duration)

	assert.Equal(t, "a\nb\n", second.Stdout)
	assert.Empty(t, second.Stderr)
	require.NotNil(t, second.ExitCode)
	assert.Equal(t, 7, *second.ExitCode)
	assert.Equal(t, "/tmp", second.Cwd)
	assert.GreaterOrEqual(t, second.DurationMS, int64(300))
	assert.Regexp(t, `^\d+ ms$|^\d+\.\d s$`, second.Duration)
	assert.NotContains(t, second.Duration, "000000", "not nanoseconds")
	started, err := time.Parse(time.RFC3339Nano, second.StartedAt)
	require.NoError(t, err)
	assert.True(t, started.After(before), "started_at is when it started: %s", second.StartedAt)
}

func TestHumanDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0:                                       "0 ms",
		340 * time.Millisecond:                  "340 ms",
		2500 * time.Millisecond:                 "2.5 s",
		42 * time.Second:                        "42 s",
		3*time.Minute + 20*time.Second:          "3 min 20 s",
		2*time.Hour + 5*time.Minute:             "2 h 5 min",
		59*time.Minute + 59700*time.Millisecond: "1 h 0 min",
	} {
		assert.Equal(t, want, humanDuration(d), "%v", d)
	}
}
