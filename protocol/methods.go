package protocol

// Method names.
const (
	MethodSessionCreate  = "session.create"
	MethodSessionList    = "session.list"
	MethodSessionInfo    = "session.info"
	MethodSessionDestroy = "session.destroy"
	MethodExecRun        = "exec.run"
	MethodExecStream     = "exec.stream"
	MethodExecRead       = "exec.read"
	MethodExecAttach     = "exec.attach"
	MethodExecCancel     = "exec.cancel"
	MethodSystemPing     = "system.ping"
	MethodSystemStats    = "system.stats"

	// Notifications the daemon sends.
	NotifyExecOutput = "exec.output"
	NotifyExecExit   = "exec.exit"
	// NotifyExecWaiting, on exec.stream and exec.attach: the command
	// waits for terminal input (answer with exec.input). Sent once each
	// time it begins to wait: after output, a later wait is told again.
	NotifyExecWaiting = "exec.waiting"
)

// WaitingNotification is the params of an exec.waiting notification.
type WaitingNotification struct {
	StreamID string    `json:"stream_id"`
	Input    InputWait `json:"input"`
}

// SessionCreateParams are session.create's parameters. Zero values mean
// the defaults SPEC §4 gives.
type SessionCreateParams struct {
	Shell string            `json:"shell"`
	Env   map[string]string `json:"env"`
	// Secrets are environment variables whose values trl masks ("***")
	// in everything it stores or sends (issue 23 §2).
	Secrets    map[string]string `json:"secrets"`
	WorkingDir string            `json:"working_dir"`
	Name       string            `json:"name"`
	TimeoutS   *float64          `json:"timeout_s"`
	Rows       *int              `json:"rows"`
	Cols       *int              `json:"cols"`
	// Limits bound the session's memory, CPU, processes and disk share.
	Limits *SessionLimits `json:"limits"`
	// State, when set, is applied to the new shell (SPEC §17).
	State *ShellState `json:"state,omitempty"`
}

// SessionRef names a session by id or name.
type SessionRef struct {
	SessionID string `json:"session_id"`
}

// SessionDestroyParams are session.destroy's parameters.
type SessionDestroyParams struct {
	SessionID string `json:"session_id"`
	Force     bool   `json:"force"`
}

// SessionInfo describes a session.
type SessionInfo struct {
	SessionID   string  `json:"session_id"`
	Name        string  `json:"name"`
	Shell       string  `json:"shell"`
	WorkingDir  string  `json:"working_dir"`
	State       string  `json:"state"`
	CreatedAt   string  `json:"created_at"`
	LastUsedAt  string  `json:"last_used_at"`
	CommandsRun int64   `json:"commands_run"`
	PID         int     `json:"pid"`
	TimeoutS    float64 `json:"timeout_s"`
	Rows        int     `json:"rows"`
	Cols        int     `json:"cols"`
	ExitCode    *int    `json:"exit_code,omitempty"`
	// EndCause says why an exited session ended: "destroyed",
	// "shell exited with status N", "timeout escalation: ...", "shell
	// stopped answering: ...", "daemon shut down". Absent while it lives.
	EndCause string `json:"end_cause,omitempty"`
	// Command is the command running now (session.info only; SPEC §8).
	Command *ExecSummary `json:"command,omitempty"`
	// Limits are the limits the session runs under, when it has any.
	Limits *SessionLimits `json:"limits,omitempty"`
	// Usage is what its processes use now (session.info only, for a
	// session with limits).
	Usage *SessionUsage `json:"usage,omitempty"`
	// Parent is the session this one was forked from (SPEC §17).
	Parent string `json:"parent,omitempty"`
}

// ExecParams are the parameters of exec.run and exec.stream.
type ExecParams struct {
	SessionID      string            `json:"session_id"`
	Command        *string           `json:"command"`
	TimeoutS       *float64          `json:"timeout_s"`
	Stdin          *string           `json:"stdin"`
	Env            map[string]string `json:"env"`
	MaxOutputBytes *int64            `json:"max_output_bytes"`
	Check          bool              `json:"check"`
	// Render is "raw" (the default) or "text" (SPEC §9: escapes removed,
	// redrawn lines collapsed); exec.run only.
	Render string `json:"render"`
	// YieldMS and Until are exec.run's wait options (SPEC §8).
	YieldMS *int64    `json:"yield_ms"`
	Until   *[]string `json:"until"`
}

// ExecResult is exec.run's result.
type ExecResult struct {
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	ExitCode    int    `json:"exit_code"`
	DurationMS  int64  `json:"duration_ms"`
	TimedOut    bool   `json:"timed_out"`
	Canceled    bool   `json:"canceled"`
	Truncated   bool   `json:"truncated"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	Cwd         string `json:"cwd"`
	// SessionExited is set when the command ended the session's shell.
	SessionExited bool `json:"session_exited,omitempty"`
	// EndCause is EndCauseOutOfMemory when the OOM killer ended it.
	EndCause string `json:"end_cause,omitempty"`
}

// ExecCancelParams are exec.cancel's parameters. Signal is a name such as
// "SIGINT" or "TERM", or a number.
type ExecCancelParams struct {
	ExecID    string `json:"exec_id"`
	SessionID string `json:"session_id"`
	Signal    Signal `json:"signal"`
}

// OutputNotification is the params of an exec.output notification.
type OutputNotification struct {
	StreamID string `json:"stream_id"`
	Seq      int64  `json:"seq"`
	Stream   string `json:"stream"`
	Data     string `json:"data"`
	Offset   int64  `json:"offset"`
	// LostBytes is set when the reader fell behind the stream's window:
	// this many bytes of Stream, just before Offset, are gone.
	LostBytes int64 `json:"lost_bytes,omitempty"`
}

// ExitNotification is the params of the final exec.exit notification.
type ExitNotification struct {
	StreamID      string `json:"stream_id"`
	ExitCode      int    `json:"exit_code"`
	DurationMS    int64  `json:"duration_ms"`
	TimedOut      bool   `json:"timed_out"`
	Canceled      bool   `json:"canceled"`
	Cwd           string `json:"cwd"`
	StdoutBytes   int64  `json:"stdout_bytes"`
	StderrBytes   int64  `json:"stderr_bytes"`
	SessionExited bool   `json:"session_exited,omitempty"`
	// SessionEndCause, with SessionExited, is why the session ended (see
	// ExecStatus).
	SessionEndCause string `json:"session_end_cause,omitempty"`
	// Denied is set when the command never ran: the policy or a person
	// denied it, or its approval timed out.
	Denied bool `json:"denied,omitempty"`
	// EndCause is EndCauseOutOfMemory when the OOM killer ended it.
	EndCause string `json:"end_cause,omitempty"`
}
