package session

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// tmpPrefix names a session's private directory (stdin files, the command
// file): trl-d<daemon pid>-<session id>-<random> in the system's temp
// directory, so that a later daemon can tell the directories of a daemon
// that died (SIGKILL leaves them) from those of one still running.
func tmpPrefix(id string) string {
	return "trl-d" + strconv.Itoa(os.Getpid()) + "-" + id + "-"
}

// sweepStaleTempDirs removes the private directories of sessions whose
// daemon is gone, as sweepStaleCgroups does for their groups, and
// returns how many it removed. A directory of a live daemon (another
// instance, or this one) is left alone.
func sweepStaleTempDirs() int {
	dir := os.TempDir()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, "trl-d") {
			continue
		}
		rest := name[len("trl-d"):]
		i := strings.IndexByte(rest, '-')
		if i <= 0 || !strings.HasPrefix(rest[i+1:], "s-") {
			continue
		}
		pid, err := strconv.Atoi(rest[:i])
		if err != nil || pid <= 0 || pid == os.Getpid() {
			continue
		}
		if err := unix.Kill(pid, 0); err != unix.ESRCH {
			continue // alive (or not ours to signal): keep
		}
		if os.RemoveAll(filepath.Join(dir, name)) == nil {
			n++
		}
	}
	return n
}
