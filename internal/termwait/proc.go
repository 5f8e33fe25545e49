package termwait

import (
	"bytes"
	"errors"
	"strconv"

	"golang.org/x/sys/unix"
)

// The /proc readers below use raw system calls and the Terminal's scratch
// buffers: a Check opens a dozen small files and must stay cheap.

// errBlind is a file the kernel would not let us read (ptrace access).
var errBlind = errors.New("termwait: /proc file not readable")

// readFile reads the whole of a small /proc file into buf (grown when
// full, up to max) and returns the filled part.
func readFile(path string, buf []byte, max int) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, mapErr(err)
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(buf) {
			if len(buf) >= max {
				return buf[:n], nil
			}
			nb := make([]byte, 2*len(buf))
			copy(nb, buf)
			buf = nb
		}
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, mapErr(err)
		}
		if m == 0 {
			return buf[:n], nil
		}
		n += m
	}
}

func mapErr(err error) error {
	if err == unix.EACCES || err == unix.EPERM {
		return errBlind
	}
	return err
}

// procStat is what a Check needs from /proc/PID/stat (always readable).
type procStat struct {
	state   byte
	ppid    int
	pgrp    int
	ttyNr   uint64 // new_encode_dev of the controlling terminal
	threads int
	comm    string
}

// parseStat parses /proc/PID/stat; comm may hold spaces and parentheses,
// so the fields start after the last ')'.
func parseStat(b []byte) (procStat, bool) {
	var st procStat
	open := bytes.IndexByte(b, '(')
	end := bytes.LastIndexByte(b, ')')
	if open < 0 || end < open || end+2 >= len(b) {
		return st, false
	}
	st.comm = string(b[open+1 : end])
	fields := b[end+2:]
	// index 0 = state (field 3), 1 = ppid, 2 = pgrp, 4 = tty_nr, 17 = num_threads.
	for i := 0; i <= 17; i++ {
		sp := bytes.IndexByte(fields, ' ')
		if sp < 0 {
			return st, false
		}
		f := fields[:sp]
		fields = fields[sp+1:]
		switch i {
		case 0:
			if len(f) > 0 {
				st.state = f[0]
			}
		case 1:
			st.ppid = atoi(f)
		case 2:
			st.pgrp = atoi(f)
		case 4:
			st.ttyNr = uint64(atoi(f))
		case 17:
			st.threads = atoi(f)
		}
	}
	return st, true
}

// ttyDev decodes stat's tty_nr into major and minor.
func ttyDev(nr uint64) (major, minor uint32) {
	return uint32((nr >> 8) & 0xfff), uint32((nr & 0xff) | ((nr >> 12) & 0xfff00))
}

func atoi(b []byte) int {
	neg := false
	if len(b) > 0 && b[0] == '-' {
		neg, b = true, b[1:]
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	if neg {
		return -n
	}
	return n
}

// parseSyscall parses /proc/PID/task/TID/syscall: "running", "-1 sp pc",
// or "nr a0 a1 a2 a3 a4 a5 sp pc" (nr decimal, the rest hex).
func parseSyscall(b []byte) (nr int64, args [6]uint64, running bool, ok bool) {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("running")) {
		return 0, args, true, true
	}
	sp := bytes.IndexByte(b, ' ')
	if sp < 0 {
		sp = len(b)
	}
	n, err := strconv.ParseInt(string(b[:sp]), 10, 64)
	if err != nil {
		return 0, args, false, false
	}
	if n < 0 {
		// Blocked outside a system call: preempted in user space.
		return n, args, true, true
	}
	rest := b[sp:]
	for i := range args {
		rest = bytes.TrimLeft(rest, " ")
		e := bytes.IndexByte(rest, ' ')
		if e < 0 {
			e = len(rest)
		}
		tok := rest[:e]
		rest = rest[e:]
		tok = bytes.TrimPrefix(tok, []byte("0x"))
		v, err := strconv.ParseUint(string(tok), 16, 64)
		if err != nil {
			return 0, args, false, false
		}
		args[i] = v
	}
	return n, args, false, true
}

// appendPath builds "/proc/<pid>/<a>" or "/proc/<pid>/task/<tid>/<a>".
func procPath(dst []byte, pid, tid int, leaf string) []byte {
	dst = append(dst[:0], "/proc/"...)
	dst = strconv.AppendInt(dst, int64(pid), 10)
	if tid > 0 {
		dst = append(dst, "/task/"...)
		dst = strconv.AppendInt(dst, int64(tid), 10)
	}
	dst = append(dst, '/')
	return append(dst, leaf...)
}

// forEachInt calls f for each decimal integer in a space-separated list
// (the children file).
func forEachInt(b []byte, f func(int)) {
	for len(b) > 0 {
		b = bytes.TrimLeft(b, " \n")
		e := bytes.IndexAny(b, " \n")
		if e < 0 {
			e = len(b)
		}
		if e > 0 {
			f(atoi(b[:e]))
		}
		b = b[e:]
	}
}

// readDirInts lists the numeric entries of a /proc directory (task/, fd/).
func readDirInts(path string, buf []byte, f func(int)) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return mapErr(err)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, buf)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return mapErr(err)
		}
		if n <= 0 {
			return nil
		}
		parseDirents(buf[:n], f)
	}
}

// parseDirents walks linux_dirent64 records: ino(8) off(8) reclen(2)
// type(1) name.
func parseDirents(b []byte, f func(int)) {
	for len(b) >= 19 {
		reclen := int(b[16]) | int(b[17])<<8
		if reclen < 19 || reclen > len(b) {
			return
		}
		name := b[19:reclen]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		if len(name) > 0 && name[0] >= '0' && name[0] <= '9' {
			f(atoi(name))
		}
		b = b[reclen:]
	}
}

// ReadsFD reports whether process pid's main thread is blocked in a
// read-like system call on its descriptor fd (session start-up asks it of
// a program that should have answered its set-up line with a prompt).
// It reports false whenever that cannot be told: the process is gone,
// running, or its /proc/PID/syscall is not ours to read.
func ReadsFD(pid, fd int) bool {
	b, err := readFile(string(procPath(nil, pid, 0, "syscall")), make([]byte, 256), 4096)
	if err != nil {
		return false
	}
	nr, args, running, ok := parseSyscall(b)
	return ok && !running && classify(nr) == callRead && args[0] == uint64(fd)
}

// Parent is process pid's command name and parent pid, from
// /proc/PID/stat.
func Parent(pid int) (comm string, ppid int, ok bool) {
	b, err := readFile(string(procPath(nil, pid, 0, "stat")), make([]byte, 512), 4096)
	if err != nil {
		return "", 0, false
	}
	st, ok := parseStat(b)
	return st.comm, st.ppid, ok
}
