package session

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A cgroup v2 group per session, when the daemon can make one: every
// process the shell starts is born into it (clone3 with CLONE_INTO_CGROUP)
// and stays there unless it has the rights to move itself out, and
// writing "1" to cgroup.kill ends them all at once, however they forked.
// Without a writable cgroup v2 hierarchy, cleanup falls back to scanning
// /proc (see killTree).
type cgroup struct {
	dir string
	fd  *os.File
}

// noCgroups turns per-session groups off (tests of the /proc fallback).
var noCgroups atomic.Bool

var (
	cgroupParent     string
	cgroupParentOnce sync.Once
)

// cgroupBase finds the daemon's own cgroup v2 directory if it can create
// groups in it, or returns "".
func cgroupBase() string {
	cgroupParentOnce.Do(func() {
		mount := cgroup2Mount()
		if mount == "" {
			return
		}
		rel := ""
		if b, err := os.ReadFile("/proc/self/cgroup"); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if p, ok := strings.CutPrefix(line, "0::"); ok {
					rel = p
				}
			}
		}
		dir := filepath.Join(mount, rel)
		// cgroup.kill exists only in non-root groups, so probe with a
		// child of our own.
		probe := filepath.Join(dir, fmt.Sprintf("trl-probe-%d-%s", os.Getpid(), NewID("", 4)))
		if err := os.Mkdir(probe, 0o755); err != nil {
			return
		}
		_, killErr := os.Stat(filepath.Join(probe, "cgroup.kill"))
		os.Remove(probe)
		if killErr == nil {
			cgroupParent = dir
		}
	})
	return cgroupParent
}

// cgroup2Mount returns where the cgroup v2 hierarchy is mounted.
func cgroup2Mount() string {
	for _, m := range cgroupMounts() {
		if m.fstype == "cgroup2" {
			return m.point
		}
	}
	return ""
}

// cgroupMount is one cgroup file system mounted in the daemon's mount
// namespace.
type cgroupMount struct {
	point, root string // where it is mounted, and the group mounted there
	fstype      string // "cgroup2", or "cgroup" for a v1 hierarchy
	options     []string
}

// cgroupMounts lists the cgroup mounts in /proc/self/mountinfo, whose
// lines read "id parent dev root mountpoint opts ... - fstype source
// superopts".
func cgroupMounts() []cgroupMount {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		for i, fld := range fields {
			if fld != "-" || i+3 >= len(fields) || len(fields) < 5 {
				continue
			}
			if t := fields[i+1]; t == "cgroup" || t == "cgroup2" {
				out = append(out, cgroupMount{point: fields[4], root: fields[3], fstype: t, options: strings.Split(fields[i+3], ",")})
			}
			break
		}
	}
	return out
}

// newCgroup makes the session's group, or returns nil when none can be
// made (cleanup then relies on /proc scans alone).
func newCgroup(id string) *cgroup {
	if noCgroups.Load() {
		return nil
	}
	base := cgroupBase()
	if base == "" {
		return nil
	}
	dir := filepath.Join(base, fmt.Sprintf("trl-%d-%s", os.Getpid(), id))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil
	}
	fd, err := os.Open(dir)
	if err != nil {
		os.Remove(dir)
		return nil
	}
	return &cgroup{dir: dir, fd: fd}
}

// kill ends every process in the group.
func (c *cgroup) kill() error {
	return os.WriteFile(filepath.Join(c.dir, "cgroup.kill"), []byte("1"), 0)
}

// procs lists the pids in the group and in any groups a command made
// below it.
func (c *cgroup) procs() ([]int, error) { return groupProcs(c.dir, nil) }

func groupProcs(dir string, out []int) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return out, err
	}
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			out, _ = groupProcs(filepath.Join(dir, e.Name()), out)
		}
	}
	return out, nil
}

// has reports whether pid is in the group now.
func (c *cgroup) has(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	return err == nil && strings.Contains(string(b), "/"+filepath.Base(c.dir)+"\n")
}

// empty reports whether no process is left in the group or below it. A
// group already removed (by another daemon sweeping too) is empty.
func (c *cgroup) empty() bool {
	b, err := os.ReadFile(filepath.Join(c.dir, "cgroup.events"))
	if errors.Is(err, os.ErrNotExist) {
		return true
	}
	return err == nil && strings.Contains(string(b), "populated 0\n")
}

// waitEmpty waits, up to limit, for the group's processes to be reaped;
// the first looks come quickly, since that usually takes microseconds.
func (c *cgroup) waitEmpty(limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for wait := 100 * time.Microsecond; ; wait = min(2*wait, 10*time.Millisecond) {
		if c.empty() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(wait)
	}
}

// remove deletes the group once it is empty, with any groups a command
// made inside it (children first: a cgroup directory with children cannot
// be removed, and the session's would leak).
func (c *cgroup) remove() error {
	if c.fd != nil {
		c.fd.Close()
	}
	return removeGroup(c.dir)
}

// removeGroup removes dir and the cgroups below it, depth-first. A cgroup
// directory's files are the kernel's: only directories are removed.
func removeGroup(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, e := range entries {
		if e.IsDir() {
			removeGroup(filepath.Join(dir, e.Name()))
		}
	}
	err = os.Remove(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	return err
}

// sweepStaleCgroups ends what a daemon that died without cleaning up (a
// SIGKILL) left in its session groups: background jobs that survived their
// shells' hang-up. A group is stale when the daemon pid in its name is no
// longer a live process. Every stale group is killed first and then they
// are waited for together, a second at most, so many groups (or one whose
// processes are slow to die) cost one bounded wait. It returns how many
// groups it removed.
func sweepStaleCgroups() int {
	base := cgroupBase()
	if base == "" {
		return 0
	}
	var stale []*cgroup
	for _, dir := range staleGroups(base) {
		c := &cgroup{dir: dir}
		c.kill()
		stale = append(stale, c)
	}
	deadline := time.Now().Add(time.Second)
	removed := 0
	for _, c := range stale {
		c.waitEmpty(time.Until(deadline))
		if removeGroup(c.dir) == nil {
			removed++
		}
	}
	return removed
}

// staleGroups lists the groups under base that daemons no longer alive
// made: "trl-PID-ID" for sessions, "trl-probe-PID-ID" for probes a
// daemon died between making and removing.
func staleGroups(base string) []string {
	entries, err := os.ReadDir(base)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), "trl-")
		if !ok || !e.IsDir() {
			continue
		}
		rest = strings.TrimPrefix(rest, "probe-")
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + pidStr); err == nil {
			continue // its daemon is alive (or the pid was reused: leave it)
		}
		out = append(out, filepath.Join(base, e.Name()))
	}
	return out
}
