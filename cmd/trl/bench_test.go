package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBenchQuick runs `trl bench --quick --json` and checks that every
// section is there and measured. It never looks at how fast anything was.
func TestBenchQuick(t *testing.T) {
	t.Parallel() // its own daemon; it measures, it asserts no timing
	if testing.Short() {
		t.Skip("starts a daemon and runs every measurement once")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, trlBin, "bench", "--quick", "--json", "--sessions", "6", "--stream-mb", "2")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "trl bench: %s", stderr.String())

	var rep struct {
		Machine struct {
			CPUs int `json:"cpus"`
		} `json:"machine"`
		Latency struct {
			ForkExec map[string]any `json:"fork_exec"`
			Shell    map[string]any `json:"shell_pipe"`
			Unix     benchPath      `json:"unix"`
			JSONRPC  benchPath      `json:"jsonrpc"`
			HTTP     benchPath      `json:"http"`
			Error    string         `json:"error"`
		} `json:"latency"`
		Stream      map[string]any   `json:"stream"`
		LargeRun    map[string]any   `json:"large_run"`
		Sessions    map[string]any   `json:"sessions"`
		Parallel    map[string]any   `json:"parallel"`
		Cancel      map[string]any   `json:"cancel"`
		Interactive map[string]any   `json:"interactive"`
		Policy      map[string]any   `json:"policy"`
		Files       map[string]any   `json:"files"`
		State       map[string]any   `json:"state"`
		Masking     map[string]any   `json:"masking"`
		Goals       []map[string]any `json:"goals"`
	}
	require.NoError(t, json.Unmarshal(out, &rep), "%s", out)
	assert.Positive(t, rep.Machine.CPUs)

	l := rep.Latency
	assert.Empty(t, l.Error)
	assert.NotEmpty(t, l.ForkExec, "fork/exec floor")
	assert.NotEmpty(t, l.Shell, "persistent shell floor")
	for name, p := range map[string]benchPath{"unix": l.Unix, "jsonrpc": l.JSONRPC} {
		assert.Empty(t, p.Error, name)
		assert.NotEmpty(t, p.ExecRun, name)
		assert.NotEmpty(t, p.Ping, name)
	}
	// HTTP is measured when the daemon serves it, and says why not otherwise.
	assert.Empty(t, l.HTTP.Error)
	assert.True(t, l.HTTP.Skipped != "" || len(l.HTTP.ExecRun) > 0, "http: neither measured nor skipped")

	for name, sec := range map[string]map[string]any{"stream": rep.Stream, "large_run": rep.LargeRun,
		"sessions": rep.Sessions, "parallel": rep.Parallel, "cancel": rep.Cancel, "interactive": rep.Interactive, "policy": rep.Policy,
		"files": rep.Files, "state": rep.State} {
		require.NotNil(t, sec, name)
		assert.Nil(t, sec["error"], "%s: %v", name, sec["error"])
	}
	assert.NotZero(t, rep.Stream["stream_mb_s"])
	assert.NotZero(t, rep.Stream["raw_pty_mb_s"])
	assert.NotNil(t, rep.LargeRun["wall"])
	assert.NotNil(t, rep.Sessions["create"])
	assert.EqualValues(t, 6, rep.Sessions["created"])
	assert.NotNil(t, rep.Sessions["reused"], "second round on reused heap")
	assert.Len(t, rep.Sessions["steps"], 2, "at 3 and 6 sessions")
	assert.NotNil(t, rep.Cancel["latency"])
	assert.NotNil(t, rep.Interactive["to_waiting_input"])
	assert.NotNil(t, rep.State["session_state"], "session.state measured")
	assert.NotNil(t, rep.State["session_fork"], "session.fork measured")
	levels, _ := rep.Parallel["levels"].([]any)
	assert.Len(t, levels, 5, "1, 2, 4, 8 and 32 clients")
	assert.NotNil(t, rep.Policy["evaluate"])

	assert.NotNil(t, rep.Files["fs_read_64k"])
	assert.NotNil(t, rep.Files["cat_64k"])
	assert.True(t, rep.Files["http_skipped"] != nil || rep.Files["http_over_disk"] != nil, "files: GET /files neither measured nor skipped")
	assert.NotNil(t, rep.Masking["ratio"], "masking measured: %v", rep.Masking)
	assert.Len(t, rep.Goals, 25)
}

type benchPath struct {
	Skipped string         `json:"skipped"`
	Error   string         `json:"error"`
	ExecRun map[string]any `json:"exec_run"`
	Ping    map[string]any `json:"ping"`
}
