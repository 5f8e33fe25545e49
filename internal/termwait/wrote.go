package termwait

import (
	"bytes"
	"encoding/binary"
	"time"
)

// wrote sums what the group's members other than the shell have written
// (wchar of /proc/PID/io: every byte passed to write, whatever the fd,
// with the members' reaped children's), or -1 when the shell itself reads
// (a builtin `read`: its count holds every command's builtins) or a
// member's count cannot be read. The caller bounds the prompt with it:
// what a process that wrote nothing waits behind (`printf 'Sure? '; cat`)
// is not its prompt.
func (t *Terminal) wrote(members []member, reader int) int64 {
	if reader == t.shell {
		return -1
	}
	var sum int64
	for _, m := range members {
		if m.pid == t.shell {
			continue
		}
		t.path = procPath(t.path, m.pid, 0, "io")
		b, err := readFile(string(t.path), t.buf, 4096)
		if err != nil {
			return -1
		}
		i := bytes.Index(b, []byte("wchar:"))
		if i < 0 {
			return -1
		}
		f := bytes.TrimLeft(b[i+len("wchar:"):], " \t")
		sum += int64(atoi(f))
	}
	return sum
}

// timeoutKind says where a waiting call keeps its timeout.
type timeoutKind uint8

const (
	noTimeout   timeoutKind = iota // read: waits until input
	msArg                          // poll, epoll_wait, epoll_pwait: an int of milliseconds, -1 none
	timevalPtr                     // select: struct timeval *, NULL none
	timespecPtr                    // ppoll, pselect6, epoll_pwait2: struct timespec *, NULL none
)

// timeout reads the timeout of a wait: 0 when it has none. While the call
// waits, the memory holds the value given (the kernel writes the time left
// back only on return).
func (p procFDs) timeout(nr int64, args [6]uint64) time.Duration {
	kind, i := timeoutArg(nr)
	switch kind {
	case msArg:
		ms := int32(args[i])
		if ms < 0 {
			return 0
		}
		return max(time.Duration(ms)*time.Millisecond, time.Nanosecond)
	case timevalPtr, timespecPtr:
		if args[i] == 0 {
			return 0
		}
		b, err := p.readMem(args[i], 16)
		if err != nil || len(b) < 16 {
			return 0
		}
		sec := int64(binary.LittleEndian.Uint64(b))
		frac := int64(binary.LittleEndian.Uint64(b[8:]))
		unit := time.Nanosecond
		if kind == timevalPtr {
			unit = time.Microsecond
		}
		return max(time.Duration(sec)*time.Second+time.Duration(frac)*unit, time.Nanosecond)
	}
	return 0
}
