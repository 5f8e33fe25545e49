package session

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// tree names every process a session started, by three marks that
// overlap: the session id of the shell's terminal session (background jobs
// and nohup), the TRL_SESSION_ID variable every process inherits (which
// survives setsid and double forks, unless the process clears it), and,
// when there is one, the session's cgroup (which survives both).
type tree struct {
	sid    int    // the shell's pid, leader of its terminal session
	marker []byte // "TRL_SESSION_ID=<id>\x00"
	cg     *cgroup
}

func newTree(sid int, id string, cg *cgroup) tree {
	return tree{sid: sid, marker: []byte("TRL_SESSION_ID=" + id + "\x00"), cg: cg}
}

// kill ends every process of the tree, the shell first so that nothing
// new is started, and rescans until a scan finds nothing (so a process
// forking while it is killed does not survive) or limit passes. It
// reports whether the tree is gone.
func (t tree) kill(limit time.Duration) bool {
	unix.Kill(t.sid, unix.SIGKILL)
	if t.cg != nil {
		t.cg.kill()
	}
	deadline := time.Now().Add(limit)
	for round := 0; ; round++ {
		pids := t.members()
		if len(pids) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		for _, pid := range pids {
			t.signal(pid, unix.SIGKILL)
		}
		time.Sleep(time.Duration(min(round+1, 20)) * time.Millisecond)
	}
}

// signal sends sig to pid only if pid is still a member of the tree,
// checked through a pidfd so that a pid reused after the scan is never hit.
func (t tree) signal(pid int, sig unix.Signal) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return // gone already
	}
	defer unix.Close(fd)
	if !t.owns(pid) {
		return
	}
	unix.PidfdSendSignal(fd, sig, nil, 0)
}

// members lists the live (not zombie) processes of the tree.
func (t tree) members() []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	self := os.Getpid()
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self {
			continue
		}
		if t.owns(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// owns reports whether pid is a live process of the tree.
func (t tree) owns(pid int) bool {
	st, ok := readStat(pid)
	if !ok || st.state == 'Z' || st.state == 'X' {
		return false
	}
	if st.sid == t.sid {
		return true
	}
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	return err == nil && hasEntry(env, t.marker)
}

// hasEntry reports whether the NUL-separated environ block env holds the
// entry e (which ends in NUL) as a whole entry.
func hasEntry(env, e []byte) bool {
	for off := 0; ; {
		i := bytes.Index(env[off:], e)
		if i < 0 {
			return false
		}
		if at := off + i; at == 0 || env[at-1] == 0 {
			return true
		}
		off += i + 1
	}
}

type procStat struct {
	state           byte
	ppid, pgrp, sid int
}

// readStat parses /proc/PID/stat. The command name may hold spaces and
// parentheses, so fields are counted from the last ')'.
func readStat(pid int) (procStat, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return procStat{}, false
	}
	f := bytes.Fields(b[i+2:])
	if len(f) < 4 {
		return procStat{}, false
	}
	st := procStat{state: f[0][0]}
	st.ppid, _ = strconv.Atoi(string(f[1]))
	st.pgrp, _ = strconv.Atoi(string(f[2]))
	st.sid, _ = strconv.Atoi(string(f[3]))
	return st, true
}

var sealOnce sync.Once

// sealInheritedFDs marks every fd above stderr close-on-exec. Go opens its
// own fds that way, but fds inherited from whatever started the daemon are
// not, and os.StartProcess would pass them on to every shell and so to
// every command.
func sealInheritedFDs() {
	sealOnce.Do(func() {
		d, err := os.Open("/proc/self/fd")
		if err != nil {
			return
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, name := range names {
			if fd, err := strconv.Atoi(name); err == nil && fd > 2 {
				unix.CloseOnExec(fd)
			}
		}
	})
}
