package session

import (
	"time"

	"github.com/rs/zerolog"
)

// Options configure a Manager. Zero values mean the documented defaults.
type Options struct {
	// MaxSessions caps live sessions; 0 means 256.
	MaxSessions int
	// BaseEnv is the environment every shell starts from (the daemon's,
	// already stripped of trl's secrets by the caller); nil means empty.
	BaseEnv []string
	// StartTimeout bounds how long a shell may take to print its first
	// prompt record; 0 means 10 s.
	StartTimeout time.Duration
	// Subreaper makes the daemon the child subreaper of every process its
	// shells start and reaps all of the process's children itself (see
	// reaper.go). Only a daemon should set it: nothing else in the process
	// may wait for children once it is on.
	Subreaper bool
	// Isolation, when set, runs every session under a uid of its own
	// (see isolate.go); the daemon must be privileged
	// (CheckIsolationPrivilege).
	Isolation *Isolation
	// Limits are every session's defaults (see limits.go); a session's
	// own limits override them field by field. Zero: none.
	Limits Limits
	Logger zerolog.Logger
}

func (o Options) maxSessions() int {
	if o.MaxSessions <= 0 {
		return 256
	}
	return o.MaxSessions
}

func (o Options) startTimeout() time.Duration {
	if o.StartTimeout <= 0 {
		return 10 * time.Second
	}
	return o.StartTimeout
}

// Config describes a session to create. Zero values mean: shell /bin/sh,
// working dir /tmp, no name, no default timeout, 24 rows by 80 columns.
type Config struct {
	Shell string
	Env   map[string]string
	// Secrets are variables like Env whose values are masked in all of
	// the session's output (mask.go): an agent's API keys.
	Secrets map[string]string
	// Masks are further secrets' bytes to mask from the start: a fork's
	// (the source's, ForkSecrets).
	Masks      [][]byte
	WorkingDir string
	Name       string
	Timeout    time.Duration
	Rows, Cols int
	// IsolationKey groups sessions under one uid when the manager
	// isolates: the gateway passes its (tenant, workspace). "" gives the
	// session a uid of its own. Never taken from a client's params.
	IsolationKey string
	// Limits bound the session's cgroup (limits.go); zero fields take the
	// manager's defaults.
	Limits Limits
	// State, when set, is applied to the shell after its first prompt,
	// before the session is registered (SPEC §17).
	State *ShellState
	// StateFrom, when set instead, is called once the shell has been
	// launched, while it starts: session.fork reads the source's state
	// meanwhile.
	StateFrom func() (*ShellState, error)
	// Parent is the id of the session this one was forked from.
	Parent string

	// cgroupVersion is where Limits are set (limitsVersion): 2 or 1.
	cgroupVersion int
}

// Command is one command to run in a session.
type Command struct {
	Text string
	// Env holds variables for this command only.
	Env map[string]string
	// Stdin, when non-nil, is fed to the command followed by end-of-file;
	// when nil the command's stdin is the terminal.
	Stdin *string
	// Done, when set, is called once the command has ended and all its
	// output has reached its sink, right after the job's Done channel
	// closes, on the session's reader goroutine with no lock held. It
	// must not block for long: the session's next completion waits.
	Done func()
}

// Stream names an output stream.
type Stream uint8

const (
	Stdout Stream = iota
	Stderr
)

func (s Stream) String() string {
	switch s {
	case Stderr:
		return "stderr"
	case Input:
		return "input"
	case CommandStart:
		return "command-start"
	case CommandEnd:
		return "command-end"
	case ScreenReset:
		return "screen-reset"
	case Resized:
		return "resized"
	}
	return "stdout"
}

// Sink receives a command's output in the order the kernel delivered it.
// Output is never called concurrently for one command, must not block, and
// must not keep p after it returns.
type Sink interface {
	Output(s Stream, p []byte)
}

// Status is how a command ended.
type Status struct {
	ExitCode int
	// Cwd is the shell's working directory after the command.
	Cwd string
	// Exited is set when the shell itself ended during the command.
	Exited bool
	// OOMKilled is set when the kernel's OOM killer ended a process of the
	// session's memory-limited group while the command ran.
	OOMKilled bool
}
