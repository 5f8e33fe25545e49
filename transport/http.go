package transport

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/protocol"
)

// Defaults of HTTPOptions.
const (
	DefaultHTTPMaxInFlight       = 256
	DefaultHTTPReadHeaderTimeout = 10 * time.Second
	DefaultHTTPReadBodyTimeout   = 60 * time.Second
	DefaultHTTPIdleTimeout       = 2 * time.Minute
	DefaultHTTPWriteStallTimeout = 2 * time.Minute
)

// HTTPOptions configure an HTTPServer. Only Token is required; the other
// zero values mean the defaults above.
type HTTPOptions struct {
	// Token is the bearer token every request but GET /healthz must
	// carry. ListenHTTP refuses an empty one.
	Token string
	// ApproverToken, when set, is a second token that may only decide
	// approvals (exec.approve) and list commands (exec.list) on /rpc: a
	// person's, never the agent's (SPEC §16). It must differ from Token.
	ApproverToken string
	// Gateway, when set, serves POST /execute (behind the same token,
	// Host check, body cap and in-flight cap as /rpc). The request it
	// sees has its body already read into memory.
	Gateway http.Handler
	// MaxBodyBytes caps a request body; larger ones get 413. 0 means
	// DefaultMaxMessageBytes.
	MaxBodyBytes int64
	// MaxInFlight caps the /rpc and /execute requests running at once
	// (a stream counts until it ends); over it a request gets 503 with
	// LIMIT_EXCEEDED.
	MaxInFlight int
	// ReadHeaderTimeout and ReadBodyTimeout bound how long a client may
	// take to send its headers and its body; IdleTimeout closes a
	// keep-alive connection with no request. There is deliberately no
	// overall write timeout: a request runs as long as its command does.
	ReadHeaderTimeout time.Duration
	ReadBodyTimeout   time.Duration
	IdleTimeout       time.Duration
	// WriteStallTimeout ends a request when one write to its client makes
	// no progress for this long (a client that stopped reading). A
	// stream's command goes on and can be resumed with exec.attach.
	WriteStallTimeout time.Duration
	// Logger receives refusals, warnings and net/http's own errors; the
	// zero value logs nothing.
	Logger zerolog.Logger
	// Probes, when set, answers GET /livez and /readyz without a token
	// (the orchestrator's probes carry none), like /healthz.
	Probes http.Handler
	// Console, when set, serves /console/ (SPEC §11). It authenticates
	// its own requests (a cookie from a one-time login URL, or the bearer
	// token) and upgrades WebSockets, so it gets the request before the
	// token check and the response writer unwrapped.
	Console http.Handler
	// MCP, when set, serves /mcp (Streamable HTTP, SPEC §10) behind the
	// token and the Host check.
	MCP http.Handler
	// Metrics, when set, answers GET /metrics behind the token.
	Metrics http.Handler
	// Files, when set, serves GET and PUT /files behind the token and
	// the Host check (see serveFiles).
	Files FileStore
}

func (o *HTTPOptions) defaults() {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxMessageBytes
	}
	if o.MaxInFlight <= 0 {
		o.MaxInFlight = DefaultHTTPMaxInFlight
	}
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = DefaultHTTPReadHeaderTimeout
	}
	if o.ReadBodyTimeout <= 0 {
		o.ReadBodyTimeout = DefaultHTTPReadBodyTimeout
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = DefaultHTTPIdleTimeout
	}
	if o.WriteStallTimeout <= 0 {
		o.WriteStallTimeout = DefaultHTTPWriteStallTimeout
	}
}

// HTTPServer serves the method table over HTTP (SPEC §5): POST /rpc, the
// gateway's POST /execute, and GET /healthz.
type HTTPServer struct {
	opts     HTTPOptions
	ln       net.Listener
	loopback bool
	auth     bearer
	approver *bearer // nil: no approver token
	srv      *http.Server
	slots    chan struct{}
	// ctx is the base of every request's context; cancelled by Close so
	// that streams end even when their connections linger.
	ctx    context.Context
	cancel context.CancelCauseFunc

	mu       sync.Mutex
	h        protocol.Handler
	serving  bool
	stopping bool // no new request enters; set before waiting for them
	closed   bool
	requests sync.WaitGroup
}

// ListenHTTP binds addr (host:port) for an HTTPServer. It refuses an empty
// token, and logs a warning when addr is not a loopback address: the token
// then crosses the network in clear text unless a TLS proxy is in front.
func ListenHTTP(addr string, opts HTTPOptions) (*HTTPServer, error) {
	if opts.Token == "" {
		return nil, errors.New("transport: refusing to serve HTTP without a bearer token")
	}
	if opts.ApproverToken != "" && opts.ApproverToken == opts.Token {
		return nil, errors.New("transport: TRL_APPROVER_TOKEN must differ from TRL_AUTH_TOKEN: the agent's token must never approve its own commands")
	}
	opts.defaults()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	s := &HTTPServer{
		opts:     opts,
		ln:       ln,
		loopback: isLoopbackAddr(ln.Addr()),
		auth:     newBearer(opts.Token),
		approver: newApprover(opts.ApproverToken),
		slots:    make(chan struct{}, opts.MaxInFlight),
	}
	s.ctx, s.cancel = context.WithCancelCause(context.Background())
	s.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          log.New(httpErrorLog{opts.Logger}, "", 0),
		ConnState:         metrics.HTTPConnState,
	}
	if !s.loopback {
		opts.Logger.Warn().Str("http", ln.Addr().String()).
			Msg("HTTP is bound to a non-loopback address: the bearer token and all traffic cross the network in clear text; put a TLS proxy in front or bind 127.0.0.1")
	}
	if len(opts.Token) < 16 {
		opts.Logger.Warn().Int("length", len(opts.Token)).Msg("the HTTP bearer token is short; use at least 32 random characters")
	}
	opts.Logger.Info().Str("http", ln.Addr().String()).Bool("gateway", opts.Gateway != nil).Msg("listening on HTTP")
	return s, nil
}

// Addr returns the address the server is bound to.
func (s *HTTPServer) Addr() net.Addr { return s.ln.Addr() }

// Serve answers requests with h until ctx ends or Shutdown or Close is
// called, then waits for every request it started to end and returns nil
// (or the listener's error). Ending ctx closes the server as Close does.
func (s *HTTPServer) Serve(ctx context.Context, h protocol.Handler) error {
	s.mu.Lock()
	if s.closed || s.stopping {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.serving {
		s.mu.Unlock()
		return errors.New("transport: Serve called twice on one HTTPServer")
	}
	s.serving, s.h = true, h
	s.mu.Unlock()
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()

	err := s.srv.Serve(s.ln)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	} else {
		s.Close()
	}
	s.mu.Lock()
	s.stopping = true
	s.mu.Unlock()
	s.requests.Wait()
	return err
}

// Shutdown stops accepting and closes idle connections, then waits for the
// requests in flight to finish (a stream finishes when its command ends;
// the method table's own shutdown ends them). When ctx ends first the rest
// are closed as Close does.
func (s *HTTPServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	serving := s.serving
	s.mu.Unlock()
	err := s.srv.Shutdown(ctx)
	if !serving {
		s.ln.Close()
	}
	if err != nil {
		err = errors.Join(err, s.Close())
	}
	s.opts.Logger.Info().Str("http", s.ln.Addr().String()).Msg("HTTP closed")
	return err
}

// Close stops accepting, closes every connection and ends every request's
// context with ErrServerStopped, so streams return. It does not wait for
// Serve to return.
func (s *HTTPServer) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	serving := s.serving
	s.mu.Unlock()
	s.cancel(ErrServerStopped)
	err := s.srv.Close()
	if !serving {
		// http.Server closes only listeners it has served on.
		if cerr := s.ln.Close(); cerr != nil && !errors.Is(cerr, net.ErrClosed) {
			err = errors.Join(err, cerr)
		}
	}
	return err
}

// enter counts a request in; false once the server is stopping.
func (s *HTTPServer) enter() (protocol.Handler, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopping || s.closed {
		return nil, false
	}
	s.requests.Add(1)
	return s.h, true
}

// httpErrorLog sends net/http's own log lines (bad requests, handler
// panics it caught) to the logger.
type httpErrorLog struct{ log zerolog.Logger }

func (l httpErrorLog) Write(p []byte) (int, error) {
	l.log.Debug().Str("source", "net/http").Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}
