package session

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// killTree SIGKILLs the shell and every process in its session (the shell
// is the session leader, so its pid is the session id): background jobs
// and their children included. It repeats the scan until nothing is left,
// so a process forking while it is killed does not survive.
func killTree(sid int) {
	unix.Kill(sid, unix.SIGKILL)
	for round := 0; round < 50; round++ {
		pids := sessionMembers(sid)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			unix.Kill(pid, unix.SIGKILL)
		}
		time.Sleep(time.Duration(round+1) * time.Millisecond)
	}
}

// sessionMembers lists the live (not zombie) processes whose session id
// is sid.
func sessionMembers(sid int) []int {
	d, err := os.Open("/proc")
	if err != nil {
		return nil
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	var out []int
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		st, ok := readStat(pid)
		if ok && st.sid == sid && st.state != 'Z' {
			out = append(out, pid)
		}
	}
	return out
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
