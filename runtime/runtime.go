package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// Version is trl's version, set at build time with -ldflags.
var Version = "0.1.0-dev"

// Options configure a Runtime. Zero values mean the documented defaults.
type Options struct {
	Sessions session.Options
	Streams  exec.StreamOptions
	// MaxOutputBytes caps what a caller may ask for in max_output_bytes;
	// 0 means 64 MiB.
	MaxOutputBytes int64
	Logger         zerolog.Logger
	// Audit receives one event per command; the zero value means Logger.
	Audit *zerolog.Logger
	// TransportLimits are the transports' limits (message size, requests
	// in flight), reported by system.stats next to the runtime's own.
	TransportLimits map[string]int64
}

// Runtime is the method table.
type Runtime struct {
	opts     Options
	log      zerolog.Logger
	audit    zerolog.Logger
	sessions *session.Manager
	streams  *exec.Streams
	started  time.Time
	commands atomic.Int64

	mu sync.Mutex
	// The registry of commands (see command) by exec_id, while they run
	// and for a while after. What runs in a session is its job
	// (session.Running hands back the command).
	cmds     map[string]*command
	finished []*command
	closing  bool
	calls    sync.WaitGroup
	// execs counts the executions whose end has not been recorded yet:
	// Shutdown waits for them too.
	execs sync.WaitGroup
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
		streams:  exec.NewStreams(opts.Streams),
		started:  time.Now(),
		cmds:     map[string]*command{},
	}
	if opts.Audit != nil {
		rt.audit = *opts.Audit
	}
	return rt
}

type handlerFunc func(rt *Runtime, ctx context.Context, call *protocol.Call) (*protocol.Reply, error)

var methods = map[string]handlerFunc{
	protocol.MethodSessionCreate:  (*Runtime).sessionCreate,
	protocol.MethodSessionList:    (*Runtime).sessionList,
	protocol.MethodSessionInfo:    (*Runtime).sessionInfo,
	protocol.MethodSessionDestroy: (*Runtime).sessionDestroy,
	protocol.MethodExecRun:        (*Runtime).execRun,
	protocol.MethodExecStream:     (*Runtime).execStream,
	protocol.MethodExecRead:       (*Runtime).execRead,
	protocol.MethodExecAttach:     (*Runtime).execAttach,
	protocol.MethodExecCancel:     (*Runtime).execCancel,
	protocol.MethodExecInput:      (*Runtime).execInput,
	protocol.MethodExecWait:       (*Runtime).execWait,
	protocol.MethodExecList:       (*Runtime).execList,
	protocol.MethodSessionScreen:  (*Runtime).sessionScreen,
	protocol.MethodSessionResize:  (*Runtime).sessionResize,
	protocol.MethodSessionOutput:  (*Runtime).sessionOutput,
	protocol.MethodSystemPing:     (*Runtime).systemPing,
	protocol.MethodSystemStats:    (*Runtime).systemStats,
	protocol.MethodSessionState:   (*Runtime).sessionState,
	protocol.MethodSessionFork:    (*Runtime).sessionFork,
}

// Handle implements protocol.Handler.
func (rt *Runtime) Handle(ctx context.Context, call *protocol.Call) (*protocol.Reply, error) {
	h, ok := methods[call.Method]
	if !ok {
		return nil, protocol.Errorf(protocol.CodeMethodNotFound, "unknown method %q; methods are session.create, session.list, session.info, session.destroy, session.screen, session.resize, session.output, session.state, session.fork, exec.run, exec.stream, exec.read, exec.attach, exec.cancel, exec.input, exec.wait, exec.list, system.ping, system.stats", clip(call.Method, 64))
	}
	rt.mu.Lock()
	if rt.closing {
		rt.mu.Unlock()
		return nil, wireError(session.ErrShuttingDown)
	}
	rt.calls.Add(1)
	rt.mu.Unlock()
	defer rt.calls.Done()
	reply, err := h(rt, ctx, call)
	if err != nil {
		return nil, wireError(err)
	}
	return reply, nil
}

// Shutdown refuses new calls, ends every session (and so every running
// command, whose callers get their results), and waits for in-flight calls
// until ctx ends.
func (rt *Runtime) Shutdown(ctx context.Context) error {
	rt.BeginShutdown()
	rt.sessions.CloseAll()
	rt.streams.Close()
	done := make(chan struct{})
	go func() {
		rt.calls.Wait()
		rt.execs.Wait()
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
