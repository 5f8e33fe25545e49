package gateway

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/protocol"
)

// Defaults of Options.
const (
	DefaultTimeout        = 15 * time.Second  // seed 000 §7
	DefaultMaxTimeout     = 180 * time.Second // seed 000 §7
	DefaultIdleTimeout    = 30 * time.Minute
	DefaultResultTTL      = 30 * time.Minute
	DefaultMaxResults     = 4096
	DefaultMaxResultBytes = 64 << 20
	DefaultMaxOutputBytes = 512 << 10
	DefaultMaxBodyBytes   = 16 << 20
	// DefaultMaxPendingBytes bounds the request bodies of the calls in
	// progress together.
	DefaultMaxPendingBytes = 256 << 20
	// updateInterval merges one stream's chunks that come closer together
	// than this into one update; output spread over less time than this
	// is answered without updates.
	updateInterval = 100 * time.Millisecond
)

// Options configure a Gateway. Zero values mean the defaults above.
type Options struct {
	// DefaultTimeout is a call's timeout when the request gives none in
	// call.args.timeoutMs or ctx.timeoutMs. Set it to the gateway's
	// execution_targets config.timeoutMs, which the gateway does not send.
	DefaultTimeout time.Duration
	// MaxTimeout caps any call's timeout.
	MaxTimeout time.Duration
	// IdleTimeout: a session no call has used for this long is destroyed.
	IdleTimeout time.Duration
	// ResultTTL is how long a finished call's answer is returned to a
	// repeated POST with its ctx.toolCallId; MaxResults and
	// MaxResultBytes bound how many answers, and how many bytes of them,
	// are remembered (the oldest go first).
	ResultTTL      time.Duration
	MaxResults     int
	MaxResultBytes int64
	// MaxOutputBytes is how much of each of stdout and stderr a result
	// keeps: the first and the last half, with a note of what was left out.
	MaxOutputBytes int
	// MaxBodyBytes caps a request body (413 beyond).
	MaxBodyBytes int64
	// MaxPendingBytes caps the bodies of the calls in progress together:
	// a call goes on when its client hangs up, holding its body (up to
	// MaxBodyBytes of stdin) while it waits for its session, so clients
	// that post and leave grew the daemon without bound (40 calls of 15
	// MiB: 2 GB). Past it a call is answered 503 LIMIT_EXCEEDED.
	MaxPendingBytes int64
	// Shell runs the sessions; "" means bash when it is on PATH, else
	// /bin/sh. WorkingDir is where they start; "" means the runtime's
	// default.
	Shell      string
	WorkingDir string
	Logger     zerolog.Logger

	// now is the clock, for tests.
	now func() time.Time
}

func (o *Options) defaults() {
	if o.DefaultTimeout <= 0 {
		o.DefaultTimeout = DefaultTimeout
	}
	if o.MaxTimeout <= 0 {
		o.MaxTimeout = DefaultMaxTimeout
	}
	o.DefaultTimeout = min(o.DefaultTimeout, o.MaxTimeout)
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	if o.ResultTTL <= 0 {
		o.ResultTTL = DefaultResultTTL
	}
	if o.MaxResults <= 0 {
		o.MaxResults = DefaultMaxResults
	}
	if o.MaxResultBytes <= 0 {
		o.MaxResultBytes = DefaultMaxResultBytes
	}
	if o.MaxOutputBytes <= 0 {
		o.MaxOutputBytes = DefaultMaxOutputBytes
	}
	if o.MaxPendingBytes <= 0 {
		o.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Shell == "" {
		o.Shell = "/bin/sh"
		if _, err := exec.LookPath("bash"); err == nil {
			o.Shell = "bash"
		}
	}
	if o.now == nil {
		o.now = time.Now
	}
}

// ErrClosed is the cause with which Close ends the calls in progress.
var ErrClosed = errors.New("gateway: closed")

// Gateway answers docker-runner POSTs (seed 000) by calling the method
// table. It is an http.Handler; authentication is the caller's (the HTTP
// transport's) business.
type Gateway struct {
	api     protocol.API
	opts    Options
	log     zerolog.Logger
	results *memoStore
	// ctx is the parent of every call's work, independent of the HTTP
	// request that started it: a client that hangs up does not stop a
	// command half-way, and its retry still gets the answer.
	ctx    context.Context
	cancel context.CancelCauseFunc
	reaped chan struct{}

	mu      sync.Mutex
	slots   map[string]*slot
	closed  bool
	pending int64 // bytes of the bodies of the calls in progress
	calls   sync.WaitGroup
}

// New returns a Gateway that runs tools through h, and starts its reaper of
// idle sessions; Close stops it.
func New(api protocol.API, opts Options) *Gateway {
	opts.defaults()
	g := &Gateway{
		api:     api,
		opts:    opts,
		log:     opts.Logger,
		results: newMemoStore(opts.ResultTTL, opts.MaxResults, opts.MaxResultBytes),
		slots:   map[string]*slot{},
		reaped:  make(chan struct{}),
	}
	g.ctx, g.cancel = context.WithCancelCause(context.Background())
	go g.reap()
	return g
}

// Close stops the reaper, ends the calls in progress (their waiters are
// answered SHUTTING_DOWN) and waits for them. It leaves the sessions to the
// method table, whose own shutdown ends them.
func (g *Gateway) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	g.cancel(ErrClosed)
	<-g.reaped
	g.calls.Wait()
}

// ServeHTTP answers POST /execute: a ToolResult, or 400 with a
// ToolResult-shaped error naming the field that is wrong.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, encode(failure(string(protocol.CodeInvalidParams), "/execute takes POST")))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, g.opts.MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeJSON(w, http.StatusRequestEntityTooLarge, encode(failure(string(protocol.CodeLimitExceeded),
				"request body is larger than the limit of %d bytes", g.opts.MaxBodyBytes)))
			return
		}
		writeJSON(w, http.StatusBadRequest, encode(failure(string(protocol.CodeInvalidParams), "reading the request body: %v", err)))
		return
	}
	req, err := parseRequest(body)
	if err != nil {
		g.log.Debug().Err(err).Str("remote", r.RemoteAddr).Msg("gateway: bad request")
		writeJSON(w, http.StatusBadRequest, encode(failure(string(protocol.CodeInvalidParams), "%s", err.Error())))
		return
	}
	arrived := g.opts.now()
	actor := fmt.Sprintf("gateway %s tenant=%q run=%q tool_call=%q", r.RemoteAddr, clip(req.TenantID, 64), clip(req.RunID, 64), clip(req.ToolCallID, 64))

	m, first := newMemo(), true
	var stored bool
	if req.ToolCallID != "" {
		var conflict bool
		m, first, conflict = g.results.begin(memoKey(req.TenantID, req.ToolCallID), req.fingerprint, arrived)
		if conflict {
			writeJSON(w, http.StatusConflict, encode(failure(codeConflict,
				"ctx.toolCallId %q was already used for a different call in the last %s; use a new id for a new call",
				clip(req.ToolCallID, 64), g.opts.ResultTTL)))
			return
		}
		stored = true
		if !first {
			g.log.Info().Str("tool_call", clip(req.ToolCallID, 64)).Msg("gateway: repeated toolCallId; answering with the first call's result")
		}
	}
	if first {
		err := g.start(int64(len(body)), func() {
			status, body, keep := g.run(req, actor, arrived)
			if stored {
				g.results.finish(m, status, body, keep, g.opts.now())
			} else {
				m.status, m.body = status, body
				close(m.done)
			}
		})
		if err != nil {
			res := encode(failure(string(protocol.CodeShuttingDown), "the daemon is shutting down; retry against a running daemon"))
			if err == errBusy {
				res = encode(failure(string(protocol.CodeLimitExceeded),
					"the calls in progress hold %d MiB of requests, the most this daemon takes; retry once some have ended", g.opts.MaxPendingBytes>>20))
				w.Header().Set("Retry-After", "1")
			}
			if stored {
				g.results.finish(m, http.StatusServiceUnavailable, res, false, g.opts.now())
			}
			writeJSON(w, http.StatusServiceUnavailable, res)
			return
		}
	}
	select {
	case <-m.done:
		writeJSON(w, m.status, m.body)
	case <-r.Context().Done():
		// The client went away; the call goes on and its answer waits
		// for a retry with the same toolCallId.
	}
}

// errBusy: the calls in progress hold MaxPendingBytes already.
var errBusy = errors.New("gateway: too many bytes in calls in progress")

// start runs f, a call whose request holds size bytes, in a goroutine
// Close waits for: ErrClosed once closed, errBusy past MaxPendingBytes.
func (g *Gateway) start(size int64, f func()) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return ErrClosed
	}
	if g.pending > 0 && g.pending+size > g.opts.MaxPendingBytes {
		return errBusy
	}
	g.pending += size
	g.calls.Go(func() {
		defer func() {
			g.mu.Lock()
			g.pending -= size
			g.mu.Unlock()
		}()
		f()
	})
	return nil
}

// run answers one validated request: HTTP status, body, and whether the
// answer may be remembered for repeats of its toolCallId.
func (g *Gateway) run(req *request, actor string, arrived time.Time) (int, []byte, bool) {
	switch req.Tool {
	case "bash.exec":
		body, keep := g.bashExec(req, actor, arrived)
		return http.StatusOK, body, keep
	}
	return http.StatusOK, encode(failure(codeToolNotFound, "unknown tool %q; this runner supports: bash.exec", clip(req.Tool, 64))), true
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
