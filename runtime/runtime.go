package runtime

import (
	"context"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/approval"
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/files"
	"github.com/trl-project/trl/internal/callbacks"
	"github.com/trl-project/trl/internal/procs"
	"github.com/trl-project/trl/policy"
	"github.com/trl-project/trl/session"
)

// Version is trl's version, set at build time with -ldflags.
var Version = "0.1.0-dev"

// Options configure a Runtime. Zero values mean the documented defaults.
type Options struct {
	Sessions session.Options
	// Policy, when it holds a policy, checks every command line before it
	// runs (SPEC §16); Approvals holds the commands a person must decide.
	Policy    *policy.Evaluator
	Approvals *approval.Registry
	// NoApprover, when set, says why no one can ever approve a command
	// here (trl stdio, or a daemon without an approver's way in): a
	// command the policy asks about is then denied at once, with this
	// reason, rather than held until its approval times out.
	NoApprover string
	// Commands configure the registry of commands: each stream's window,
	// how long and how many finished commands stay addressable.
	Commands exec.RegistryOptions
	// MaxOutputBytes caps what a caller may ask for in max_output_bytes;
	// 0 means 64 MiB.
	MaxOutputBytes int64
	Logger         zerolog.Logger
	// Audit receives one event per command; the zero value means Logger.
	Audit *zerolog.Logger
	// TransportLimits are the transports' limits (message size, requests
	// in flight), reported by system.stats next to the runtime's own.
	TransportLimits map[string]int64
	// Files is the file tree fs.* works on (--fs-root); nil: all of it.
	Files *files.FS
	// Procs, when set, narrows the process to one P while calls come one
	// at a time (internal/procs). The daemon sets it; a runtime inside
	// another program (a test, the bench's in-process layer) must not,
	// since it changes the whole process's GOMAXPROCS.
	Procs *procs.Governor
}

// Runtime is the method table.
type Runtime struct {
	opts     Options
	log      zerolog.Logger
	audit    zerolog.Logger
	sessions *session.Manager
	// jobs is the one registry of commands (exec.Job) by exec_id, while
	// they run and for a while after, and the one each session runs.
	jobs    *exec.Registry
	started time.Time
	ended   callbacks.List[func(CommandEnd)] // OnCommandEnd's

	mu      sync.Mutex
	closing bool
	calls   sync.WaitGroup

	// typed is what was typed under a policy where a shell would run it,
	// per command, that the shell has not run yet (typed.go).
	typedMu sync.Mutex
	typed   map[*exec.Job]typedText
	// inputLocks: lockInput's, by command.
	inputLocks sync.Map
}

// New returns a Runtime with no sessions.
func New(opts Options) *Runtime {
	if opts.MaxOutputBytes <= 0 {
		opts.MaxOutputBytes = 64 << 20
	}
	opts.Sessions.Logger = opts.Logger
	rt := &Runtime{
		opts:     opts,
		log:      opts.Logger,
		audit:    opts.Logger,
		sessions: session.NewManager(opts.Sessions),
		jobs:     exec.NewRegistry(opts.Commands),
		started:  time.Now(),
		typed:    map[*exec.Job]typedText{},
	}
	if opts.Audit != nil {
		rt.audit = *opts.Audit
	}
	return rt
}

// Shutdown refuses new calls, ends every session (and so every running
// command, whose callers get their results), and waits for in-flight calls
// until ctx ends.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.BeginShutdown()
	rt.opts.Procs.Stop() // ending every session at once is parallel work
	if rt.opts.Approvals != nil {
		// Commands awaiting a person end denied: nobody will decide now.
		rt.opts.Approvals.Close()
	}
	rt.sessions.CloseAll()
	done := make(chan struct{})
	go func() {
		rt.calls.Wait()
		rt.jobs.Wait() // every command's end recorded (audit, metrics)
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// BeginShutdown refuses new calls and makes every call in flight answer
// SHUTTING_DOWN, without ending anything yet. A daemon calls it before it
// drains its transports, so a request whose connection is being closed for
// reading is told the daemon is stopping rather than handed a yield status.
func (rt *Runtime) BeginShutdown() {
	rt.mu.Lock()
	rt.closing = true
	rt.mu.Unlock()
}

func (rt *Runtime) shuttingDown() bool {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.closing
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
