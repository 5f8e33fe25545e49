// Package session owns shells: each Session is one long-lived interactive
// shell on its own pseudo-terminal, and the Manager keeps the live ones by
// id and name.
//
// # How a command reaches the shell and comes back
//
// The shell is started interactive (so Ctrl-C semantics, job control and
// syntax-error recovery are those a person at a terminal gets) but it does
// not read its commands from the terminal. Its file descriptors are:
//
//	0  command channel  the daemon writes one command line per command
//	1  control pipe     the shell's own stdout (see below), as fd 2
//	2  control pipe     the shell's own prompt, which we set to a record
//	                  "\x1eTRL:<nonce>:<seq>:<status>:<$->:<cwd>\x1f<nonce>\x1f"
//	                  (the nonce in the end marker lets the cwd hold any byte)
//	3  PTY slave      stdin and stdout of commands (fds 0 and 1 are
//	                  re-pointed here); the controlling terminal
//	4  stderr pipe    stderr of every command, kept apart from stdout
//	5  stderr pipe    bash and zsh only: a spare copy, to repair fd 4
//	                  after an interrupt (see settle)
//
// A command is sent as `_trl<nonce>c='<text>'; _trl<nonce>r <&3 >&3 2>&4 3<&- 4>&-`
// (and `5>&-` where there is an fd 5; bash's and zsh's lines also put the
// text in the shell's history in place of the line, see historyNote,
// after a failed command a call gives the next one its status as $?, see
// statusFunc, and under errexit the text is followed by a statement that
// keeps its status for the prompt, see errexitNote):
// the text runs through eval inside a function whose fds are the terminal
// and the stderr pipe, with the command channel and control pipe out of reach.
// All three standard fds are re-pointed for each command line, so a
// command's `exec >/dev/null` or `exec 2>&-` ends with it. The command
// channel is a socket pair, not a pipe: a command could open a pipe of its
// shell's again through /proc/<pid>/fd and type lines into the shell; the
// kernel opens no socket that way (see shellChannel).
// Because the shell prints its prompt after every command line, including
// one aborted by SIGINT or a syntax error, the next record on the control
// pipe is the completion signal, carrying the exit status and the working
// directory. Nothing the command prints can reach the control pipe, so
// printing the record's text does not end a command early.
//
// When the record arrives the command's output is already in the kernel's
// buffers (the PTY's line discipline is flushed by a reading master), so
// the reader drains the PTY master and the stderr pipe to empty before it
// reports completion: no sleeps, no polling.
package session
