package console

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/trl-project/trl/protocol"
)

// transcriptLimit bounds each stream of each command in a transcript.
const transcriptLimit = 64 << 10

// transcriptEntry is one command of a session's transcript: what
// exec.list says of it, its output as text, and its duration in human
// units.
type transcriptEntry struct {
	protocol.ExecSummary
	Stdout string `json:"stdout"`
	Stderr string `json:"stderr"`
	// StdoutCut and StderrCut: the stream is longer than what is shown
	// (its first transcriptLimit bytes).
	StdoutCut bool `json:"stdout_cut,omitempty"`
	StderrCut bool `json:"stderr_cut,omitempty"`
	// OutputError says why the output could not be read (a command
	// whose output trl no longer keeps).
	OutputError string `json:"output_error,omitempty"`
	Duration    string `json:"duration"`
}

// transcript is /console/api/commands' answer.
type transcript struct {
	SessionID string            `json:"session_id"`
	Commands  []transcriptEntry `json:"commands"`
}

// commands is a session's transcript: each command kept, with its exit
// code, duration, working directory, start time and output.
func (c *Console) commands(w http.ResponseWriter, r *http.Request) {
	sid := r.URL.Query().Get("session")
	if sid == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "session is required"})
		return
	}
	ctx := caller(r)
	list, err := c.opts.API.ExecList(ctx, protocol.ExecListParams{SessionID: sid})
	if err != nil {
		writeError(w, err)
		return
	}
	out := make([]transcriptEntry, 0, len(list.Commands))
	for _, cmd := range list.Commands {
		out = append(out, transcriptEntryOf(ctx, cmd, c.opts.API.ExecRead))
	}
	writeJSON(w, http.StatusOK, transcript{SessionID: sid, Commands: out})
}

// humanDuration writes d as a person reads it: "340 ms", "2.5 s",
// "3 min 20 s", "2 h 5 min".
func humanDuration(d time.Duration) string {
	if d < 10*time.Second {
		if d < time.Second {
			return strconv.FormatInt(d.Milliseconds(), 10) + " ms"
		}
		return strconv.FormatFloat(d.Seconds(), 'f', 1, 64) + " s"
	}
	d = d.Round(time.Second)
	switch {
	case d < time.Minute:
		return strconv.Itoa(int(d/time.Second)) + " s"
	case d < time.Hour:
		return strconv.Itoa(int(d/time.Minute)) + " min " + strconv.Itoa(int(d%time.Minute/time.Second)) + " s"
	default:
		d = d.Round(time.Minute)
		return strconv.Itoa(int(d/time.Hour)) + " h " + strconv.Itoa(int(d%time.Hour/time.Minute)) + " min"
	}
}

// transcriptEntryOf is cmd's entry: its summary, its output as text (read
// with read, as exec.read) and its duration in human units.
func transcriptEntryOf(ctx context.Context, cmd protocol.ExecSummary, read func(context.Context, protocol.ExecReadParams) (protocol.ExecReadResult, error)) transcriptEntry {
	e := transcriptEntry{ExecSummary: cmd, Duration: humanDuration(time.Duration(cmd.DurationMS) * time.Millisecond)}
	for _, stream := range []string{"stdout", "stderr"} {
		rd, err := read(ctx, protocol.ExecReadParams{ExecID: cmd.ExecID, Stream: stream, Limit: transcriptLimit, Render: "text"})
		if err != nil {
			e.OutputError = protocol.AsError(err).Message
			continue
		}
		if stream == "stdout" {
			e.Stdout, e.StdoutCut = rd.Data, cmd.StdoutBytes > int64(rd.Length) || rd.LostBytes > 0
		} else {
			e.Stderr, e.StderrCut = rd.Data, cmd.StderrBytes > int64(rd.Length) || rd.LostBytes > 0
		}
	}
	return e
}
