package protocol

// SessionLimits are session.create's limits and session.info's record of
// them (issue 23 §3). A zero or absent field means no limit (or the
// daemon's default, at session.create).
type SessionLimits struct {
	// MemoryMB is the most memory the session's processes may use, in
	// MiB; a process that goes over is killed by the kernel (the command
	// ends with exit code 137 and end_cause "out of memory") and the
	// session's shell lives on.
	MemoryMB int64 `json:"memory_mb,omitempty"`
	// CPU is how many CPUs' worth of time the session may use, fractional.
	CPU float64 `json:"cpu,omitempty"`
	// PIDs bounds the session's processes and threads at once.
	PIDs int64 `json:"pids,omitempty"`
	// IOWeight is the session's share of disk time, 1 to 10000 (100 is
	// the kernel's default).
	IOWeight int `json:"io_weight,omitempty"`
}

// SessionUsage is what a session's processes use now (session.info).
type SessionUsage struct {
	MemoryBytes int64   `json:"memory_bytes"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	PIDs        int64   `json:"pids"`
	OOMKills    int64   `json:"oom_kills"`
}

// EndCauseOutOfMemory is a command's end_cause when the kernel's OOM
// killer ended one of its processes because the session went over its
// memory limit.
const EndCauseOutOfMemory = "out of memory"
