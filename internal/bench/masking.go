package bench

import (
	"fmt"
	"io"
	"strconv"

	"github.com/trl-project/trl/protocol"
)

// Masking is #23's cost goal: exec.run in a session that holds a secret
// (session.create {secrets}: every byte of its output is looked at for
// it) against one that holds none, on one daemon, alternating, in the
// same run. The command prints a line, so the masker has bytes to look
// at. Per-session cgroup limits are the same goal's other half: a
// session with limits against one without, the same way; they are
// measured only where the daemon can set them (LimitsError says why
// not).
type Masking struct {
	Command string  `json:"command"`
	Without *Stats  `json:"without_secret,omitempty"`
	With    *Stats  `json:"with_secret,omitempty"`
	Ratio   float64 `json:"ratio,omitempty"`
	Error   string  `json:"error,omitempty"`

	WithoutLimits *Stats  `json:"without_limits,omitempty"`
	WithLimits    *Stats  `json:"with_limits,omitempty"`
	LimitsRatio   float64 `json:"limits_ratio,omitempty"`
	LimitsError   string  `json:"limits_error,omitempty"`
}

// benchLimits are generous limits no bench command comes near: what is
// measured is the cost of running in limited groups, not of hitting them.
var benchLimits = &protocol.SessionLimits{MemoryMB: 1024, CPU: 2, PIDs: 4096}

const maskingCommand = "echo build ok: 42 files, 0 warnings"

func (r *runner) masking() *Masking {
	out := &Masking{Command: maskingCommand}
	c, err := r.dial()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer c.Close()
	var ids [2]string
	for i, params := range []any{
		nil,
		protocol.SessionCreateParams{Secrets: map[string]string{"API_KEY": "sk-bench-0123456789abcdef"}},
	} {
		var s protocol.SessionInfo
		if err := c.Call(protocol.MethodSessionCreate, params, &s); err != nil {
			out.Error = "session.create: " + err.Error()
			return out
		}
		ids[i] = s.SessionID
		defer destroySession(c, s.SessionID)
	}
	without, with, ratio, err := r.abExecRun(c, c, ids, maskingCommand)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	out.Without, out.With, out.Ratio = &without, &with, ratio

	var limited protocol.SessionInfo
	if err := c.Call(protocol.MethodSessionCreate, protocol.SessionCreateParams{Limits: benchLimits}, &limited); err != nil {
		out.LimitsError = "session.create with limits: " + err.Error()
		return out
	}
	defer destroySession(c, limited.SessionID)
	free, bound, ratio, err := r.abExecRun(c, c, [2]string{ids[0], limited.SessionID}, maskingCommand)
	if err != nil {
		out.LimitsError = err.Error()
		return out
	}
	out.WithoutLimits, out.WithLimits, out.LimitsRatio = &free, &bound, ratio
	return out
}

func maskingTable(w io.Writer, m *Masking) {
	if m == nil {
		return
	}
	abTable(w, "secret masking (issue 23), exec.run "+strconv.Quote(m.Command), "error: "+m.Error, m.Error != "",
		"a session without secrets", "a session with a secret", m.Without, m.With, m.Ratio)
	abTable(w, "cgroup limits (issue 23), exec.run "+strconv.Quote(m.Command), "not measured: "+m.LimitsError, m.LimitsError != "",
		"a session without limits", "a session with limits", m.WithoutLimits, m.WithLimits, m.LimitsRatio)
}

// abTable prints one A/B pair of exec.run samples under title: the note
// when there is one, then a's and b's rows, b with its ratio to a.
func abTable(w io.Writer, title, note string, noted bool, aName, bName string, a, b *Stats, ratio float64) {
	fmt.Fprintf(w, "\n%s\t\t\t\t\t\n", title)
	if noted {
		fmt.Fprintf(w, "  %s\n", note)
	}
	if a != nil && b != nil {
		fmt.Fprintf(w, "  %s (n=%d)\tp50 %s\tp99 %s\t\t\t\n", aName, a.N, fmtUS(a.P50US), fmtUS(a.P99US))
		fmt.Fprintf(w, "  %s\tp50 %s\tp99 %s\t%.2f×\t\t\n", bName, fmtUS(b.P50US), fmtUS(b.P99US), ratio)
	}
}
