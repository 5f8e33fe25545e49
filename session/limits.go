package session

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Per-session resource limits (issue 23 §3) are set on the session's
// cgroup v2 group (cgroup.go), which every process of the session is born
// into: memory.max with memory.oom.group off, so that the kernel's OOM
// killer ends the process that overran (a hog) and not the whole group
// with its shell; memory.swap.max 0, so the hog dies rather than swaps;
// cpu.max; pids.max; io.weight. That needs the memory, cpu, pids (and,
// for io_weight, io) controllers available in the daemon's cgroup and
// enabled for its children. Where they are bound to cgroup v1 instead,
// the same limits are set on v1 groups of the session's own
// (cgroupv1.go). Where neither can be used, sessions asking for limits
// are refused with ErrInvalid rather than started without them.

// Limits bound one session. A zero field means no limit.
type Limits struct {
	// MemoryMB is memory.max in MiB (at least 4).
	MemoryMB int64
	// CPU is how many CPUs' worth of time the session may use (cpu.max),
	// fractional: 0.5 is half a CPU.
	CPU float64
	// PIDs is pids.max: processes and threads of the session at once.
	PIDs int64
	// IOWeight is io.weight, 1 to 10000 (100 is the kernel's default).
	IOWeight int
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// Over returns l with the fields of o that are set.
func (l Limits) Over(o Limits) Limits {
	if o.MemoryMB != 0 {
		l.MemoryMB = o.MemoryMB
	}
	if o.CPU != 0 {
		l.CPU = o.CPU
	}
	if o.PIDs != 0 {
		l.PIDs = o.PIDs
	}
	if o.IOWeight != 0 {
		l.IOWeight = o.IOWeight
	}
	return l
}

// Check refuses limits no session could live with, naming the field.
func (l Limits) Check() error {
	switch {
	case l.MemoryMB < 0 || (l.MemoryMB > 0 && l.MemoryMB < 4):
		return errorf(ErrInvalid, "limits.memory_mb must be at least 4 (MiB), got %d", l.MemoryMB)
	case l.CPU < 0 || (l.CPU > 0 && l.CPU < 0.01):
		return errorf(ErrInvalid, "limits.cpu must be at least 0.01 (CPUs), got %g", l.CPU)
	case l.PIDs < 0 || (l.PIDs > 0 && l.PIDs < 4):
		return errorf(ErrInvalid, "limits.pids must be at least 4, got %d", l.PIDs)
	case l.IOWeight < 0 || l.IOWeight > 10000:
		return errorf(ErrInvalid, "limits.io_weight must be between 1 and 10000, got %d", l.IOWeight)
	}
	return nil
}

// controllers names the cgroup controllers l needs.
func (l Limits) controllers() []string {
	var out []string
	if l.MemoryMB > 0 {
		out = append(out, "memory")
	}
	if l.CPU > 0 {
		out = append(out, "cpu")
	}
	if l.PIDs > 0 {
		out = append(out, "pids")
	}
	if l.IOWeight > 0 {
		out = append(out, "io")
	}
	return out
}

// Usage is what a session's cgroup has used.
type Usage struct {
	MemoryBytes int64   // memory.current
	CPUSeconds  float64 // cpu.stat usage_usec
	PIDs        int64   // pids.current
	OOMKills    int64   // memory.events oom_kill
}

// LimitsUnavailable says why per-session limits cannot be set here, or
// returns nil when memory, cpu and pids limits can be: through the
// daemon's cgroup v2 group, or else through cgroup v1 hierarchies
// (cgroupv1.go). io_weight is checked when a session asks for it. It
// only looks; the controllers are enabled when a session first needs
// them.
func LimitsUnavailable() error {
	core := []string{"memory", "cpu", "pids"}
	v2 := v2Unavailable(core)
	if v2 == nil {
		return nil
	}
	v1 := v1Unavailable(core)
	if v1 == nil {
		return nil
	}
	return fmt.Errorf("%v; %v", v2, v1)
}

// v2Unavailable says which of the v2 controllers names the daemon's
// group does not have, or returns nil.
func v2Unavailable(names []string) error {
	if limitsOff.Load() {
		return errors.New("per-session limits are turned off")
	}
	base := cgroupBase()
	if base == "" {
		return errors.New("no writable cgroup v2 hierarchy for the daemon (cgroup v1, or not delegated)")
	}
	have := readWords(filepath.Join(base, "cgroup.controllers"))
	var missing []string
	for _, c := range names {
		if !have[c] {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the cgroup v2 controllers %s are not available in %s (they are bound to cgroup v1 or not delegated to the daemon)", strings.Join(missing, ", "), base)
	}
	return nil
}

// limitsOff makes the daemon behave as on a host with no cgroup it may
// use for limits (tests of the refusal).
var limitsOff atomic.Bool

// limitsVersion picks where l is set: cgroup v2 (2) when the daemon's
// group can hand every controller l needs to session groups, else
// cgroup v1 (1) when a writable v1 hierarchy exists for each; otherwise
// it says why neither can.
func limitsVersion(l Limits) (int, error) {
	names := l.controllers()
	err2 := v2Unavailable(names)
	if err2 == nil {
		if err2 = enableControllers(names); err2 == nil {
			return 2, nil
		}
	}
	err1 := v1Unavailable(names)
	if err1 == nil {
		return 1, nil
	}
	return 0, fmt.Errorf("%v; %v", err2, err1)
}

var (
	enableMu sync.Mutex
	enabled  = map[string]bool{}
)

// enableControllers makes the controllers names (which v2Unavailable
// found in the daemon's group) available to the
// session groups: listed in the daemon's cgroup's subtree_control. A
// cgroup other than the root may not both hold processes and hand
// controllers to its children, so when the kernel refuses (EBUSY) the
// daemon first moves itself into a leaf group of its own, "daemon", as
// container runtimes do under a delegated systemd unit.
func enableControllers(names []string) error {
	enableMu.Lock()
	defer enableMu.Unlock()
	base := cgroupBase()
	var want []string
	for _, n := range names {
		if !enabled[n] {
			want = append(want, "+"+n)
		}
	}
	if len(want) == 0 {
		return nil
	}
	ctl := filepath.Join(base, "cgroup.subtree_control")
	err := os.WriteFile(ctl, []byte(strings.Join(want, " ")), 0)
	if errors.Is(err, syscall.EBUSY) {
		leaf := filepath.Join(base, "daemon")
		if err := os.Mkdir(leaf, 0o755); err != nil && !os.IsExist(err) {
			return fmt.Errorf("make a leaf group for the daemon: %w", err)
		}
		if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			return fmt.Errorf("move the daemon into %s: %w", leaf, err)
		}
		err = os.WriteFile(ctl, []byte(strings.Join(want, " ")), 0)
	}
	if err != nil {
		return fmt.Errorf("enable %s in %s: %w", strings.Join(want, " "), ctl, err)
	}
	for _, n := range names {
		enabled[n] = true
	}
	return nil
}

// applyLimits writes l into the group's control files. A file that
// cannot be written fails the session: limits asked for are never
// silently dropped.
func (c *cgroup) applyLimits(l Limits) error {
	set := func(file, value string) error {
		if err := os.WriteFile(filepath.Join(c.dir, file), []byte(value), 0); err != nil {
			return fmt.Errorf("set %s to %s: %w", file, value, err)
		}
		return nil
	}
	if l.MemoryMB > 0 {
		if err := set("memory.max", strconv.FormatInt(l.MemoryMB<<20, 10)); err != nil {
			return err
		}
		if err := set("memory.oom.group", "0"); err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(c.dir, "memory.swap.max")); err == nil {
			if err := set("memory.swap.max", "0"); err != nil {
				return err
			}
		}
	}
	if l.CPU > 0 {
		const period = 100000
		if err := set("cpu.max", fmt.Sprintf("%d %d", int64(l.CPU*period), period)); err != nil {
			return err
		}
	}
	if l.PIDs > 0 {
		if err := set("pids.max", strconv.FormatInt(l.PIDs, 10)); err != nil {
			return err
		}
	}
	if l.IOWeight > 0 {
		if err := set("io.weight", "default "+strconv.Itoa(l.IOWeight)); err != nil {
			return err
		}
	}
	return nil
}

// usage reads what the group has used; a file that is missing (its
// controller is not enabled) leaves its field zero.
func (c *cgroup) usage() Usage {
	var u Usage
	u.MemoryBytes = readInt(filepath.Join(c.dir, "memory.current"))
	u.PIDs = readInt(filepath.Join(c.dir, "pids.current"))
	u.CPUSeconds = float64(readKey(filepath.Join(c.dir, "cpu.stat"), "usage_usec")) / 1e6
	u.OOMKills = c.oomKills()
	return u
}

// oomKills is how many processes of the group the OOM killer has ended.
func (c *cgroup) oomKills() int64 { return readKey(filepath.Join(c.dir, "memory.events"), "oom_kill") }

func readWords(path string) map[string]bool {
	b, _ := os.ReadFile(path)
	out := map[string]bool{}
	for _, w := range strings.Fields(string(b)) {
		out[w] = true
	}
	return out
}

func readInt(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// readKey reads the value of key in a flat-keyed cgroup file ("key N"
// lines).
func readKey(path, key string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// Limits returns the limits the session runs under (zero: none).
func (s *Session) Limits() Limits { return s.limits }

// Usage returns what the session's processes use now, and false when
// the session has no limits (and so no group counting for it).
func (s *Session) Usage() (Usage, bool) {
	if s.lim == nil {
		return Usage{}, false
	}
	return s.lim.usage(), true
}

// limiter is where a session's limits are set and its usage is read:
// its cgroup v2 group or its v1 groups.
type limiter interface {
	usage() Usage
	oomKills() int64
}

// setLimits sets the session's limits, before its shell starts, where
// the manager found they can be (cfg.cgroupVersion).
func (s *Session) setLimits() error {
	if s.limits.IsZero() {
		return nil
	}
	switch s.cfg.cgroupVersion {
	case 2:
		if s.cg == nil {
			return errorf(ErrInvalid, "limits need a cgroup v2 group for the session, and none could be made")
		}
		if err := s.cg.applyLimits(s.limits); err != nil {
			s.cg.remove()
			s.cg = nil
			return errorf(ErrInvalid, "limits cannot be set: %v", err)
		}
		s.lim = s.cg
	case 1:
		g, err := newV1Groups(s.id, s.limits)
		if err == nil {
			if err = g.apply(s.limits); err != nil {
				g.remove()
			}
		}
		if err != nil {
			return errorf(ErrInvalid, "limits cannot be set: %v", err)
		}
		s.v1, s.lim = g, g
	default:
		return errorf(ErrInvalid, "limits were asked for but the manager found no cgroup to set them on")
	}
	return nil
}

// removeGroups removes the session's cgroups once its processes are
// gone.
func (s *Session) removeGroups() {
	if s.cg != nil {
		// Killed processes leave the group once reaped; give the reaper
		// a moment before removing it.
		s.cg.waitEmpty(time.Second)
		if err := s.cg.remove(); err != nil {
			s.log.Warn().Err(err).Msg("remove the session's cgroup")
		}
	}
	if s.v1 != nil {
		if err := s.v1.remove(); err != nil {
			s.log.Warn().Err(err).Msg("remove the session's cgroup v1 groups")
		}
	}
}
