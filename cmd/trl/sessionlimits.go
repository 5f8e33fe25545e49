package main

import (
	"flag"
	"fmt"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/session"
)

// limitFlags are serve's daemon-wide defaults for per-session limits
// (issue 23 §3); session.create's limits override them field by field.
type limitFlags struct {
	memoryMB int64
	cpu      float64
	pids     int64
	ioWeight int
}

func (f *limitFlags) register(fs *flag.FlagSet) {
	fs.Int64Var(&f.memoryMB, "session-memory", 0, "default memory limit of each session, in MiB (cgroup memory.max, or v1 memory.limit_in_bytes; 0: none); a process that goes over is killed, the shell lives")
	fs.Float64Var(&f.cpu, "session-cpu", 0, "default CPU limit of each session, in CPUs, fractional (cgroup cpu.max, or v1 cpu.cfs_quota_us; 0: none)")
	fs.Int64Var(&f.pids, "session-pids", 0, "default limit on each session's processes and threads (cgroup pids.max; 0: none)")
	fs.IntVar(&f.ioWeight, "session-io-weight", 0, "default disk share of each session, 1-10000 (cgroup io.weight, or v1 blkio weight; 0: the kernel's default)")
}

// defaults returns the limits the flags ask for, checking that this host
// can set them; without flags it only says, in the log, whether sessions
// may ask for limits.
func (f *limitFlags) defaults(log zerolog.Logger) (session.Limits, error) {
	l := session.Limits{MemoryMB: f.memoryMB, CPU: f.cpu, PIDs: f.pids, IOWeight: f.ioWeight}
	if err := l.Check(); err != nil {
		return l, fmt.Errorf("--session-*: %w", err)
	}
	why := session.LimitsUnavailable()
	switch {
	case why != nil && !l.IsZero():
		return l, fmt.Errorf("--session-memory, --session-cpu, --session-pids and --session-io-weight need cgroup v2 delegated to the daemon or writable cgroup v1 hierarchies: %w", why)
	case why != nil:
		// Said at start, as information: nothing is wrong until a session
		// asks for limits, which is then refused with this reason.
		log.Info().Str("why", why.Error()).Msg("per-session limits are unavailable: session.create with limits will be refused")
	}
	return l, nil
}
