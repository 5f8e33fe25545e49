package protocol

import "encoding/json"

// The interactive methods (SPEC §8).
const (
	MethodExecInput = "exec.input"
	MethodExecWait  = "exec.wait"
	MethodExecList  = "exec.list"
)

// CodeInvalidState refuses an action the command's state does not allow:
// input to a command that has ended, or with require_waiting to one that
// does not wait for input.
const CodeInvalidState Code = "INVALID_STATE"

// Command states and the reasons a status was returned (SPEC §8).
const (
	StateRunning      = "running"
	StateWaitingInput = "waiting_input"
	StateExited       = "exited"

	ReasonExit     = "exit"
	ReasonInput    = "input"
	ReasonMatch    = "match"
	ReasonQuiet    = "quiet"
	ReasonYield    = "yield"
	ReasonTimeout  = "timeout"
	ReasonCanceled = "canceled"
)

// InputWait says what a command waiting for terminal input wants.
type InputWait struct {
	// Kind is "line" (canonical, echo), "password" (canonical, no echo),
	// "raw" (a readline REPL or a key-at-a-time program) or "tui" (a
	// full-screen program on the alternate screen).
	Kind string `json:"kind"`
	// Prompt is the text after the last newline of the output: the
	// screen's cursor row.
	Prompt string `json:"prompt"`
	Reader Reader `json:"reader"`
	// Confidence is "kernel" (the reader's system call was seen) or
	// "heuristic" (/proc could not be read).
	Confidence string `json:"confidence"`
}

// Reader is the process that waits on the terminal.
type Reader struct {
	PID  int    `json:"pid"`
	Comm string `json:"comm"`
}

// ExecStatus is the one status shape of SPEC §8: exec.run's result (when
// the command ended, or when it yielded before), exec.input's and
// exec.wait's. The first fields are exec.run's result of §4, in its order.
type ExecStatus struct {
	Stdout      string `json:"stdout"`
	Stderr      string `json:"stderr"`
	ExitCode    *int   `json:"exit_code"`
	DurationMS  int64  `json:"duration_ms"`
	TimedOut    bool   `json:"timed_out"`
	Canceled    bool   `json:"canceled"`
	Truncated   bool   `json:"truncated"`
	StdoutBytes int64  `json:"stdout_bytes"`
	StderrBytes int64  `json:"stderr_bytes"`
	Cwd         string `json:"cwd"`
	// StdoutOmitted and StderrOmitted say where output was left out of a
	// truncated exec.run result or status: the head is before At, the
	// tail after.
	StdoutOmitted *Omitted `json:"stdout_omitted,omitempty"`
	StderrOmitted *Omitted `json:"stderr_omitted,omitempty"`
	// SessionExited is set when the command ended the session's shell.
	SessionExited bool `json:"session_exited,omitempty"`
	// SessionEndCause, with SessionExited, is why the session ended, as
	// session.info's end_cause says it: "shell exited with status 3",
	// "destroyed by session.destroy", "daemon shut down", ...
	SessionEndCause string `json:"session_end_cause,omitempty"`
	// EndCause is EndCauseOutOfMemory when the OOM killer ended it.
	EndCause string `json:"end_cause,omitempty"`
	// NewSession is set on the first status of the first command of a
	// default session started because the one before it had ended: the
	// working directory, variables and functions set there are gone.
	NewSession bool `json:"new_session,omitempty"`
	// Note says in words what an agent must know beyond the command's
	// own output: that the shell exited with it, or that it ran in a new
	// shell.
	Note string `json:"note,omitempty"`

	ExecID    string `json:"exec_id"`
	SessionID string `json:"session_id"`
	State     string `json:"state"`
	Reason    string `json:"reason"`
	// StdoutOffset and StderrOffset are where Stdout and Stderr start in
	// the command's whole output: a status carries what is new since the
	// previous one.
	StdoutOffset int64      `json:"stdout_offset"`
	StderrOffset int64      `json:"stderr_offset"`
	Input        *InputWait `json:"input"`
	AltScreen    bool       `json:"alt_screen"`
	Screen       *Screen    `json:"screen"`
	// Approval is set while the command awaits a person's approval, and
	// after, with the decision (SPEC §16).
	Approval *Approval `json:"approval,omitempty"`
}

// WaitParams are the wait options of exec.run and exec.input: YieldMS
// (0: none for exec.run, 5000 for exec.input) and Until (absent: the
// default ["input"]; []: only the exit).
type WaitParams struct {
	YieldMS *int64    `json:"yield_ms"`
	Until   *[]string `json:"until"`
}

// InputItem is one item of exec.input's input: a string typed as is, or
// an object with one of key, paste or eof.
type InputItem struct {
	Text  *string `json:"-"`
	Key   string  `json:"key"`
	Paste *string `json:"paste"`
	EOF   bool    `json:"eof"`
}

// UnmarshalJSON accepts a string or an object.
func (it *InputItem) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		it.Text = &s
		return nil
	}
	type plain InputItem
	var p plain
	if err := DecodeParams(b, &p); err != nil {
		return err
	}
	*it = InputItem(p)
	return nil
}

// ExecInputParams are exec.input's parameters. Input is a string or a
// list of items.
type ExecInputParams struct {
	ExecID         string    `json:"exec_id"`
	SessionID      string    `json:"session_id"`
	Input          InputList `json:"input"`
	YieldMS        *int64    `json:"yield_ms"`
	Until          *[]string `json:"until"`
	RequireWaiting bool      `json:"require_waiting"`
	Secret         bool      `json:"secret"`
	MaxOutputBytes *int64    `json:"max_output_bytes"`
	Render         string    `json:"render"`
}

// ExecWaitParams are exec.wait's parameters: ExecID (one id, or "any"),
// or ExecIDs.
type ExecWaitParams struct {
	ExecID         string    `json:"exec_id"`
	ExecIDs        []string  `json:"exec_ids"`
	TimeoutMS      *int64    `json:"timeout_ms"`
	Until          *[]string `json:"until"`
	MaxOutputBytes *int64    `json:"max_output_bytes"`
	Render         string    `json:"render"`
}

// ExecListParams are exec.list's parameters: one session, or all.
type ExecListParams struct {
	SessionID string `json:"session_id"`
}

// Omitted is output left out of a result between its head and its tail.
type Omitted struct {
	// At is where in the result's string the bytes were left out.
	At int `json:"at"`
	// Offset is where they start in the command's output (exec.read's
	// offset), and Bytes how many there are.
	Offset int64 `json:"offset"`
	Bytes  int64 `json:"bytes"`
}

// ExecSummary is one command in exec.list and session.info.
type ExecSummary struct {
	ExecID      string     `json:"exec_id"`
	SessionID   string     `json:"session_id"`
	Command     string     `json:"command"`
	State       string     `json:"state"`
	Input       *InputWait `json:"input"`
	StartedAt   string     `json:"started_at"`
	StdoutBytes int64      `json:"stdout_bytes"`
	StderrBytes int64      `json:"stderr_bytes"`
	ExitCode    *int       `json:"exit_code"`
	// DurationMS is how long it ran (so far, while it runs); Cwd is the
	// shell's working directory after it ended, as exec.run reports it.
	DurationMS int64  `json:"duration_ms"`
	Cwd        string `json:"cwd,omitempty"`
	// Approval is the approval the command awaits or had (SPEC §16).
	Approval *Approval `json:"approval,omitempty"`
}

// ExecList is exec.list's result.
type ExecList struct {
	Commands []ExecSummary `json:"commands"`
}
