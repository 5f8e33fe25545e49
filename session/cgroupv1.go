package session

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Limits on a host whose controllers are bound to cgroup v1 (many
// container hosts and VMs still mount memory, cpu and pids as v1
// hierarchies beside an empty v2 tree): the session gets a group of its
// own in each v1 hierarchy it needs, made under the daemon's group there.
// Unlike the v2 group (born into with CLONE_INTO_CGROUP), a v1 group is
// entered by writing the shell's pid into it right after the shell
// starts: the shell then waits for its first line, so it has started
// nothing yet, and everything it starts later is born in the groups.
// Killing and finding the session's processes stays the v2 group's and
// /proc's business (cgroup.go, proctree.go); these groups only limit and
// count.

// v1Controllers are the v1 hierarchies limits use: the four that limit
// and cpuacct, which counts CPU time for Usage.
var v1Controllers = []string{"memory", "cpu", "cpuacct", "pids", "blkio"}

var (
	v1Once  sync.Once
	v1Bases map[string]string // controller → the daemon's group dir in its hierarchy, when writable
)

// v1Base returns the daemon's own group directory in the v1 hierarchy of
// controller, if the daemon can make groups there, or "".
func v1Base(controller string) string {
	v1Once.Do(func() { v1Bases = findV1Bases() })
	return v1Bases[controller]
}

func findV1Bases() map[string]string {
	mounts := v1Mounts()
	own := ownV1Groups()
	out := map[string]string{}
	for _, c := range v1Controllers {
		m, ok := mounts[c]
		if !ok {
			continue
		}
		rel, ok := own[c]
		if !ok {
			continue
		}
		rel, ok = strings.CutPrefix(rel, m.root)
		if !ok {
			continue // the daemon's group is outside what is mounted here
		}
		dir := filepath.Join(m.point, rel)
		probe := filepath.Join(dir, fmt.Sprintf("trl-probe-%d-%s", os.Getpid(), NewID("", 4)))
		if err := os.Mkdir(probe, 0o755); err != nil {
			continue
		}
		os.Remove(probe)
		out[c] = dir
	}
	return out
}

// v1Mounts maps each controller to where its v1 hierarchy is mounted.
func v1Mounts() map[string]cgroupMount {
	out := map[string]cgroupMount{}
	for _, m := range cgroupMounts() {
		if m.fstype != "cgroup" {
			continue
		}
		for _, opt := range m.options {
			if slices.Contains(v1Controllers, opt) {
				out[opt] = m
			}
		}
	}
	return out
}

// ownV1Groups maps each v1 controller to the daemon's group path in it,
// from /proc/self/cgroup ("4:memory:/a/b", "2:cpu,cpuacct:/").
func ownV1Groups() map[string]string {
	out := map[string]string{}
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return out
	}
	for _, line := range strings.Split(string(b), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || parts[1] == "" {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out
}

// v1Unavailable says which of the v1 controllers names cannot be used,
// or returns nil.
func v1Unavailable(names []string) error {
	if limitsOff.Load() {
		return errors.New("per-session limits are turned off")
	}
	var missing []string
	for _, n := range names {
		if v1Base(v1Name(n)) == "" {
			missing = append(missing, v1Name(n))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("no writable cgroup v1 hierarchy for %s either", strings.Join(missing, ", "))
	}
	return nil
}

// v1Name is the v1 controller that does what the v2 controller n does.
func v1Name(n string) string {
	if n == "io" {
		return "blkio"
	}
	return n
}

// v1Groups are one session's groups, controller → directory.
type v1Groups struct {
	dirs map[string]string
	// ooms counts the memory group's OOM events, told by the kernel on
	// an eventfd (oomEvents): reading memory.oom_control costs about
	// 30 µs, too much twice per command.
	oomFD, oomCtl int
	ooms          atomic.Int64
}

// newV1Groups makes the session's groups in every writable v1 hierarchy
// limits use; those the limits need must be among them.
func newV1Groups(id string, l Limits) (*v1Groups, error) {
	if err := v1Unavailable(l.controllers()); err != nil {
		return nil, err
	}
	g := &v1Groups{dirs: map[string]string{}}
	name := fmt.Sprintf("trl-%d-%s", os.Getpid(), id)
	made := map[string]bool{}
	for _, c := range v1Controllers {
		base := v1Base(c)
		if base == "" {
			continue
		}
		dir := filepath.Join(base, name)
		// Controllers mounted together (cpu,cpuacct on most systemd
		// hosts) share one hierarchy, so one group.
		if !made[dir] {
			if err := os.Mkdir(dir, 0o755); err != nil {
				g.remove()
				return nil, fmt.Errorf("make the session's %s group: %w", c, err)
			}
			made[dir] = true
		}
		g.dirs[c] = dir
	}
	g.oomFD, g.oomCtl = -1, -1
	if dir, ok := g.dirs["memory"]; ok {
		g.oomEvents(dir)
	}
	return g, nil
}

// oomEvents asks the kernel to count the memory group's OOM events on an
// eventfd (cgroup.event_control with memory.oom_control). The kernel
// tells it before it picks a process to kill, so a command whose process
// was killed finds the count raised when its end is recorded. Where that
// cannot be set up, oomKills reads memory.oom_control instead.
func (g *v1Groups) oomEvents(dir string) {
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return
	}
	ctl, err := unix.Open(filepath.Join(dir, "memory.oom_control"), unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(efd)
		return
	}
	line := fmt.Sprintf("%d %d", efd, ctl)
	if err := os.WriteFile(filepath.Join(dir, "cgroup.event_control"), []byte(line), 0); err != nil {
		unix.Close(efd)
		unix.Close(ctl)
		return
	}
	g.oomFD, g.oomCtl = efd, ctl
}

func (g *v1Groups) set(c, file, value string) error {
	if err := os.WriteFile(filepath.Join(g.dirs[c], file), []byte(value), 0); err != nil {
		return fmt.Errorf("set %s to %s: %w", file, value, err)
	}
	return nil
}

// apply writes l into the groups. v1's OOM killer, like v2's with
// memory.oom.group off, ends the process of the group that the kernel
// picks (the hog), not the group.
func (g *v1Groups) apply(l Limits) error {
	if l.MemoryMB > 0 {
		limit := strconv.FormatInt(l.MemoryMB<<20, 10)
		if err := g.set("memory", "memory.limit_in_bytes", limit); err != nil {
			return err
		}
		// Memory and swap together, where swap accounting is on: the hog
		// dies rather than swaps.
		if _, err := os.Stat(filepath.Join(g.dirs["memory"], "memory.memsw.limit_in_bytes")); err == nil {
			if err := g.set("memory", "memory.memsw.limit_in_bytes", limit); err != nil {
				return err
			}
		}
	}
	if l.CPU > 0 {
		const period = 100000
		if err := g.set("cpu", "cpu.cfs_period_us", strconv.Itoa(period)); err != nil {
			return err
		}
		if err := g.set("cpu", "cpu.cfs_quota_us", strconv.FormatInt(int64(l.CPU*period), 10)); err != nil {
			return err
		}
	}
	if l.PIDs > 0 {
		if err := g.set("pids", "pids.max", strconv.FormatInt(l.PIDs, 10)); err != nil {
			return err
		}
	}
	if l.IOWeight > 0 {
		// v1 weights run 1 (bfq) or 10 (cfq) to 1000 with 100 for bfq's
		// default; v2's io.weight runs 1 to 10000 around the same 100.
		w := min(l.IOWeight, 1000)
		switch dir := g.dirs["blkio"]; {
		case fileExists(filepath.Join(dir, "blkio.bfq.weight")):
			return g.set("blkio", "blkio.bfq.weight", strconv.Itoa(w))
		case fileExists(filepath.Join(dir, "blkio.weight")):
			return g.set("blkio", "blkio.weight", strconv.Itoa(max(w, 10)))
		default:
			return errors.New("io_weight: the blkio hierarchy has no weight (the disk's I/O scheduler is neither bfq nor cfq)")
		}
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// unique maps each of the groups' directories to one controller in it.
func (g *v1Groups) unique() map[string]string {
	out := make(map[string]string, len(g.dirs))
	seen := map[string]bool{}
	for c, dir := range g.dirs {
		if !seen[dir] {
			seen[dir] = true
			out[c] = dir
		}
	}
	return out
}

// enter moves the process pid (the freshly started shell) into every
// group.
func (g *v1Groups) enter(pid int) error {
	for c, dir := range g.unique() {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
			return fmt.Errorf("move the shell into its %s group: %w", c, err)
		}
	}
	return nil
}

func (g *v1Groups) usage() Usage {
	var u Usage
	if d, ok := g.dirs["memory"]; ok {
		u.MemoryBytes = readInt(filepath.Join(d, "memory.usage_in_bytes"))
	}
	if d, ok := g.dirs["pids"]; ok {
		u.PIDs = readInt(filepath.Join(d, "pids.current"))
	}
	if d, ok := g.dirs["cpuacct"]; ok {
		u.CPUSeconds = float64(readInt(filepath.Join(d, "cpuacct.usage"))) / 1e9
	}
	u.OOMKills = g.oomCount()
	return u
}

// oomKills counts the group's OOM events: what the eventfd has told so
// far, or the kernel's oom_kill count where there is no eventfd. It only
// ever grows, which is all a command's start and end compare.
func (g *v1Groups) oomKills() int64 {
	if g.oomFD < 0 {
		return g.oomCount()
	}
	var b [8]byte
	if n, err := unix.Read(g.oomFD, b[:]); err == nil && n == 8 {
		g.ooms.Add(int64(binary.NativeEndian.Uint64(b[:])))
	}
	return g.ooms.Load()
}

// oomCount is the kernel's count of processes of the group its OOM
// killer ended.
func (g *v1Groups) oomCount() int64 {
	d, ok := g.dirs["memory"]
	if !ok {
		return 0
	}
	return readKey(filepath.Join(d, "memory.oom_control"), "oom_kill")
}

// remove deletes the groups. Their processes are gone by now (the v2
// group or the /proc scan ended them); a group the kernel still counts
// a dying process in is tried again for up to a second.
func (g *v1Groups) remove() error {
	if g.oomFD >= 0 {
		unix.Close(g.oomFD)
		unix.Close(g.oomCtl)
		g.oomFD, g.oomCtl = -1, -1
	}
	var errs []error
	deadline := time.Now().Add(time.Second)
	for c, dir := range g.unique() {
		if err := removeBusyGroup(dir, deadline); err != nil {
			errs = append(errs, fmt.Errorf("remove the session's %s group: %w", c, err))
		}
	}
	return errors.Join(errs...)
}

// removeBusyGroup removes dir, trying again until deadline while the
// kernel still counts a dying process in it (EBUSY).
func removeBusyGroup(dir string, deadline time.Time) error {
	for {
		err := removeGroup(dir)
		if err == nil || !errors.Is(err, syscall.EBUSY) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// sweepStaleV1Groups removes the v1 groups of daemons that died without
// cleaning up, ending what is left in them first.
func sweepStaleV1Groups() int {
	removed := 0
	swept := map[string]bool{}
	for _, c := range v1Controllers {
		base := v1Base(c)
		if base == "" || swept[base] {
			continue
		}
		swept[base] = true
		for _, dir := range staleGroups(base) {
			if pids, _ := groupProcs(dir, nil); len(pids) > 0 {
				for _, pid := range pids {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				removeBusyGroup(dir, time.Now().Add(time.Second))
			} else {
				removeGroup(dir)
			}
			if !fileExists(dir) {
				removed++
			}
		}
	}
	return removed
}
