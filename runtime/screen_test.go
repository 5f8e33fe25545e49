package runtime

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/trl-project/trl/protocol"
)

func TestSessionScreenResizeOutput(t *testing.T) {
	rt := newRuntime(t, Options{})
	created := mustCall(t, rt, "session.create", map[string]any{"shell": "/bin/sh", "rows": 10, "cols": 40})
	id := created["session_id"].(string)

	mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": `printf '\033]2;my title\007\033[1;32mgreen\033[0m line\n'`})
	scr := mustCall(t, rt, "session.screen", map[string]any{"session_id": id})
	lines := scr["lines"].([]any)
	require.Len(t, lines, 10)
	require.Equal(t, "green line", lines[0])
	require.Equal(t, "my title", scr["title"])
	require.Equal(t, false, scr["alt_screen"])
	require.Equal(t, map[string]any{"row": 1.0, "col": 0.0, "visible": true}, scr["cursor"])
	ansi := mustCall(t, rt, "session.screen", map[string]any{"session_id": id, "format": "ansi"})
	require.Contains(t, ansi["lines"].([]any)[0], "\x1b[0;1;32mgreen")

	res := mustCall(t, rt, "session.resize", map[string]any{"session_id": id, "rows": 20, "cols": 100})
	require.Equal(t, 20.0, res["rows"])
	require.Equal(t, 100.0, res["cols"])
	out := mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "stty size"})
	require.Equal(t, "20 100\n", out["stdout"])
	require.Len(t, mustCall(t, rt, "session.screen", map[string]any{"session_id": id})["lines"], 20)

	mustCall(t, rt, "exec.run", map[string]any{"session_id": id, "command": "(sleep 0.2; echo bg-line) &"})
	deadline := time.Now().Add(10 * time.Second)
	for {
		o := mustCall(t, rt, "session.output", map[string]any{"session_id": id})
		if strings.Contains(o["data"].(string), "bg-line") {
			require.Equal(t, 0.0, o["offset"])
			break
		}
		require.True(t, time.Now().Before(deadline), "background output never logged: %v", o)
		time.Sleep(50 * time.Millisecond)
	}

	for _, bad := range []map[string]any{
		{"session_id": id, "format": "html"},
		{"session_id": id, "scrollback_lines": -1},
	} {
		_, perr := callJSON(t, rt, "session.screen", bad)
		require.NotNil(t, perr)
		require.Equal(t, protocol.CodeInvalidParams, perr.Code)
	}
	_, perr := callJSON(t, rt, "session.resize", map[string]any{"session_id": id, "rows": 0, "cols": 10})
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeInvalidParams, perr.Code)
	_, perr = callJSON(t, rt, "session.resize", map[string]any{"session_id": id})
	require.NotNil(t, perr)
	_, perr = callJSON(t, rt, "session.screen", map[string]any{"session_id": "s-nope"})
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeSessionNotFound, perr.Code)
}

func TestRenderText(t *testing.T) {
	rt := newRuntime(t, Options{})
	cmd := `printf 'get  0%%\rget 50%%\rget 100%%\n\033[31merr\033[0m\n' ; printf 'x\bY\n' >&2`
	raw := mustCall(t, rt, "exec.run", map[string]any{"command": cmd})
	require.Contains(t, raw["stdout"], "\r")
	text := mustCall(t, rt, "exec.run", map[string]any{"command": cmd, "render": "text"})
	require.Equal(t, "get 100%\nerr\n", text["stdout"])
	require.Equal(t, "Y\n", text["stderr"])
	_, perr := callJSON(t, rt, "exec.run", map[string]any{"command": "true", "render": "html"})
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeInvalidParams, perr.Code)
	_, perr = callJSON(t, rt, "exec.stream", map[string]any{"command": "true", "render": "text"})
	require.NotNil(t, perr)
}

func TestExecReadRenderText(t *testing.T) {
	rt := newRuntime(t, Options{})
	id, reply := stream(t, rt, map[string]any{"command": `printf 'a 10%%\ra 100%%\n\033[1mb\033[0m\n'`})
	collect(t, context.Background(), reply)
	raw := mustCall(t, rt, "exec.read", map[string]any{"stream_id": id})
	require.Contains(t, raw["data"], "\r")
	text := mustCall(t, rt, "exec.read", map[string]any{"stream_id": id, "render": "text"})
	require.Equal(t, "a 100%\nb\n", text["data"])
	_, perr := callJSON(t, rt, "exec.read", map[string]any{"stream_id": id, "render": "bogus"})
	require.NotNil(t, perr)
	require.Equal(t, protocol.CodeInvalidParams, perr.Code)
}
