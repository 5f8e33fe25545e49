package runtime

import (
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// limitsOf is a session's limits on the wire; nil when it has none.
func limitsOf(l session.Limits) *protocol.SessionLimits {
	if l.IsZero() {
		return nil
	}
	return &protocol.SessionLimits{MemoryMB: l.MemoryMB, CPU: l.CPU, PIDs: l.PIDs, IOWeight: l.IOWeight}
}

// endCause is a command's end_cause on the wire.
func endCause(x exec.Exit) string {
	if x.OutOfMemory {
		return protocol.EndCauseOutOfMemory
	}
	return ""
}

// SessionUsage sums what every live session's processes use now, for the
// metrics: one figure per resource, no session ids.
func (rt *Runtime) SessionUsage() (memoryBytes int64, cpuSeconds float64, pids, oomKills int64) {
	for _, s := range rt.sessions.List() {
		if u, ok := s.Usage(); ok {
			memoryBytes += u.MemoryBytes
			cpuSeconds += u.CPUSeconds
			pids += u.PIDs
			oomKills += u.OOMKills
		}
	}
	return
}
