package session

import (
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// A restarted daemon hands out the first uids of its range again, and an
// older daemon (or one without namespaces) may have let a session's uid
// write to the host's shared-writable places. So before the pool hands
// out any uid, sweepUIDs removes whatever a uid of the range owns there:
// files and directories in privateDirs, and SysV shared memory, message
// queues and semaphore sets. Its homes are removed as each uid is taken
// (acquire). A uid with a live process is left alone: another daemon may
// be using it, and acquire will not hand it out anyway.
//
// Sessions of this daemon write none of these: their /tmp and the others
// are private tmpfs mounts and their IPC namespace is their own
// (namespace.go), all gone when the session's last process is.

// sweepUIDs removes what the uids first..last (except busy ones) own in
// the host's shared-writable places, and returns how many files and IPC
// objects it removed.
func sweepUIDs(first, last uint32, busy map[uint32]bool) int {
	ours := func(uid uint32) bool { return uid >= first && uid <= last && !busy[uid] }
	n := 0
	for _, dir := range privateDirs {
		filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || path == dir {
				return nil
			}
			info, err := d.Info()
			if err != nil {
				return nil
			}
			st, ok := info.Sys().(*syscall.Stat_t)
			if !ok || !ours(st.Uid) {
				return nil
			}
			if os.RemoveAll(path) == nil {
				n++
			}
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		})
	}
	for _, k := range ipcKinds {
		for _, id := range ipcObjects(k.file, ours) {
			if _, _, e := unix.Syscall(k.ctl, uintptr(id), uintptr(k.rmidArg), 0); e == 0 {
				n++
			}
		}
	}
	return n
}

// ipcKinds are the SysV IPC object kinds: where the kernel lists them,
// and the control call that removes one (semctl takes IPC_RMID as its
// third argument, after the semaphore number).
var ipcKinds = []struct {
	file    string
	ctl     uintptr
	rmidArg int
}{
	{"/proc/sysvipc/shm", unix.SYS_SHMCTL, unix.IPC_RMID},
	{"/proc/sysvipc/msg", unix.SYS_MSGCTL, unix.IPC_RMID},
	{"/proc/sysvipc/sem", unix.SYS_SEMCTL, 0},
}

// ipcObjects lists the ids in one /proc/sysvipc file whose owner or
// creator is one of ours.
func ipcObjects(file string, ours func(uint32) bool) []int {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 2 {
		return nil
	}
	col := map[string]int{}
	for i, h := range strings.Fields(lines[0]) {
		col[h] = i
	}
	uidCol, okU := col["uid"]
	cuidCol, okC := col["cuid"]
	if !okU || !okC {
		return nil
	}
	var ids []int
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) <= max(uidCol, cuidCol) {
			continue
		}
		id, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		for _, c := range []int{uidCol, cuidCol} {
			if u, err := strconv.ParseUint(f[c], 10, 32); err == nil && ours(uint32(u)) {
				ids = append(ids, id)
				break
			}
		}
	}
	return ids
}
