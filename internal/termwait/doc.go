// Package termwait tells, from the kernel's own evidence, whether the
// foreground job of a terminal waits for terminal input, and what kind of
// input it wants (SPEC §8, "How waiting is told").
//
// It owns one question and nothing else: given the master side of a PTY
// and the pid of the shell on it, is someone blocked on reading that
// terminal right now? It keeps no goroutines and no history; a caller
// samples it (Check) when a command's output has been quiet briefly.
//
// # Evidence
//
//   - The terminal's foreground process group, tcgetpgrp on the master
//     (TIOCGPGRP; on a PTY master it answers for the slave).
//   - The members of that group, found by walking the shell's descendants
//     through /proc/PID/task/TID/children (plus the group leader, and a
//     scan of /proc when neither finds a member).
//   - For every thread of every member, its current system call from
//     /proc/PID/task/TID/syscall, with its arguments:
//     a read (read, readv, pread64, preadv, preadv2) on an fd that is the
//     terminal; a poll, ppoll, select or pselect6 whose set (read from
//     /proc/PID/mem) asks for input from the terminal; an epoll_wait,
//     epoll_pwait or epoll_pwait2 whose epoll set (the tfd lines of
//     /proc/PID/fdinfo/EPFD) holds the terminal.
//   - An fd is the terminal when /proc/PID/fd/N links to the slave
//     (/dev/pts/N, or any path whose device is the slave's), or links to
//     /dev/tty in a process whose controlling terminal is the slave.
//   - The terminal's modes (TCGETS on the master): canonical and echo flags
//     give the kind: "line" (canonical, echo), "password" (canonical, no
//     echo), "raw" (non-canonical: a readline REPL, an editor); the caller
//     says whether the alternate screen is on, which makes it "tui".
//
// # The rule
//
// The job waits for input when some foreground thread waits on the
// terminal and the terminal is the only thing it waits on besides timers
// and its own wake-ups (timerfd, signalfd, eventfd, inotify, a pipe whose
// both ends the process holds). A poll, select or epoll that also watches
// a socket or another program's pipe is a running program (an idle dev
// server that also takes keys); so is a reader process another of whose
// threads waits on a socket or pipe. A wait on the terminal with a timeout
// (vim, top) is still a wait for input. Any foreground thread on a CPU
// (or preempted outside a system call) means the job is working: not
// waiting, sample again later. Threads blocked elsewhere in other
// processes of the group (the last stage of a pipeline reading its pipe,
// a parent in wait4) neither make nor break a wait.
//
// A waiting Status also says the reader's timeout (read from the call's
// arguments, or from /proc/PID/mem for the pointer kinds), so the caller
// can tell a loop that polls for a key between pieces of work from a
// program that waits, and how many bytes the job's processes other than
// the shell have written (wchar of /proc/PID/io), which bounds its prompt.
//
// The shell itself is inspected like any member of the group: trl's shell
// reads its commands from a pipe, so it never counts as waiting while
// idle, but a builtin `read` on the terminal does.
//
// # Limits
//
// Reading another process's syscall, fd and mem files needs ptrace access
// to it (same user and not made undumpable, or CAP_SYS_PTRACE): for a
// setuid program (sudo, su, passwd run by a non-root daemon) the kernel
// cannot be asked. Then a member that is asleep, in a group where nothing
// inspectable contradicts it, is reported as waiting with Confidence
// "heuristic"; the caller only samples after the output has been quiet, so
// this is a quiet-time guess, marked as such.
//
// A sample is one instant: a program between two reads of the terminal
// (a REPL evaluating a line) is running. A Unix socket pair used as a
// self-pipe (Python's asyncio) looks like a socket, so such a program
// (prompt_toolkit REPLs) reads as running. Processes that left the
// shell's tree and the group leader's (double forks) are found only by the
// /proc scan fallback, which runs when no member was found otherwise.
//
// System call numbers are those of linux/amd64 and linux/arm64.
package termwait
