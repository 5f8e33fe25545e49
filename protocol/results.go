package protocol

// The results of the methods whose shapes are not declared beside their
// params. Their fields are in alphabetical order: they were maps once, and
// encoding/json writes a map's keys sorted, so clients see the same bytes.

// ExecStreamStarted is exec.stream's response; its notifications follow.
// ExecID equals StreamID.
type ExecStreamStarted struct {
	ExecID    string `json:"exec_id"`
	SessionID string `json:"session_id"`
	StreamID  string `json:"stream_id"`
}

// ExecReadParams are exec.read's parameters: the output of a command
// named by StreamID (exec.stream) or ExecID, Stream "stdout" (the
// default) or "stderr", from Offset, at most Limit bytes (0: 64 KiB).
type ExecReadParams struct {
	StreamID string `json:"stream_id"`
	ExecID   string `json:"exec_id"`
	Stream   string `json:"stream"`
	Offset   int64  `json:"offset"`
	Limit    int    `json:"limit"`
	Render   string `json:"render"`
}

// ExecAttachParams are exec.attach's parameters: a stream named by
// StreamID or ExecID, followed from Offset (stdout) and StderrOffset.
type ExecAttachParams struct {
	StreamID     string `json:"stream_id"`
	ExecID       string `json:"exec_id"`
	Offset       int64  `json:"offset"`
	StderrOffset int64  `json:"stderr_offset"`
}

// ExecReadResult is exec.read's result: Length bytes of Stream from
// Offset. LostBytes were between the asked offset and Offset and are no
// longer kept. Complete says nothing more will come from this offset on.
// ExecID is set when the output was named by exec_id (an exec.run
// command), StreamID when by stream_id.
type ExecReadResult struct {
	Complete  bool   `json:"complete"`
	Data      string `json:"data"`
	ExecID    string `json:"exec_id,omitempty"`
	Length    int    `json:"length"`
	LostBytes int64  `json:"lost_bytes"`
	Offset    int64  `json:"offset"`
	Stream    string `json:"stream"`
	StreamID  string `json:"stream_id,omitempty"`
}

// ExecAttachResult is exec.attach's response; the stream's notifications
// from the given offsets follow.
type ExecAttachResult struct {
	Offset       int64  `json:"offset"`
	Running      bool   `json:"running"`
	SessionID    string `json:"session_id"`
	StderrOffset int64  `json:"stderr_offset"`
	StreamID     string `json:"stream_id"`
}

// ExecCancelResult is exec.cancel's result: whether a signal was sent, and
// which (the shell's interrupt may stand in for the one asked).
type ExecCancelResult struct {
	Canceled bool   `json:"canceled"`
	Signal   string `json:"signal,omitempty"`
}

// SessionListResult is session.list's result.
type SessionListResult struct {
	Sessions []SessionInfo `json:"sessions"`
}

// SessionDestroyed is session.destroy's result.
type SessionDestroyed struct {
	Destroyed bool   `json:"destroyed"`
	SessionID string `json:"session_id"`
}

// PingResult is system.ping's result.
type PingResult struct {
	UptimeS float64 `json:"uptime_s"`
	Version string  `json:"version"`
	// StartedAt is when this daemon started (RFC 3339, nanoseconds): a
	// client that sees it change knows the daemon restarted, and its
	// sessions are gone.
	StartedAt string `json:"started_at"`
}

// StatsResult is system.stats's result. Limits names every configured
// limit (max_sessions, max_output_bytes, the transports' caps, ...).
type StatsResult struct {
	ActiveSessions   int              `json:"active_sessions"`
	Goroutines       int              `json:"goroutines"`
	Limits           map[string]int64 `json:"limits"`
	MemoryRSSBytes   int64            `json:"memory_rss_bytes"`
	OpenFDs          int              `json:"open_fds"`
	RunningCommands  int              `json:"running_commands"`
	Streams          int              `json:"streams"`
	TotalCommandsRun int64            `json:"total_commands_run"`
	UptimeS          float64          `json:"uptime_s"`
	Version          string           `json:"version"`
}
