package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"
	"github.com/trl-project/trl/console"
	"github.com/trl-project/trl/gateway"
	"github.com/trl-project/trl/mcpserver"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/transport"
)

// httpFlags are serve's HTTP and gateway flags.
type httpFlags struct {
	addr           string
	headerTimeout  time.Duration
	gatewayTimeout time.Duration
	gatewayIdle    time.Duration
	// probes and metrics are served on the HTTP listener when set.
	probes, metrics http.Handler

	// The web console (SPEC §11).
	console, consoleWrite, consoleApprove bool
	record                                string
	// files serves GET and PUT /files.
	files transport.FileStore
}

func (f *httpFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "http", "", "also serve HTTP on ADDR (e.g. 127.0.0.1:8765): POST /rpc, the gateway's POST /execute, GET /healthz; needs TRL_AUTH_TOKEN")
	fs.DurationVar(&f.headerTimeout, "http-header-timeout", transport.DefaultHTTPReadHeaderTimeout, "HTTP clients must send their request headers within this")
	fs.DurationVar(&f.gatewayTimeout, "gateway-timeout", gateway.DefaultTimeout, "a gateway call's timeout when the request sets none; match the gateway's config.timeoutMs (at most 180s)")
	fs.DurationVar(&f.gatewayIdle, "gateway-idle", gateway.DefaultIdleTimeout, "destroy a gateway session after this long without a call")
	fs.BoolVar(&f.console, "console", false, "with --http: serve the web console on /console/ (read-only; log in with the one-time URL this logs, or `trl console`)")
	fs.BoolVar(&f.consoleWrite, "console-write", false, "let a person logged into the console type into sessions (audited as actor console); implies --console-approve")
	fs.BoolVar(&f.consoleApprove, "console-approve", false, "let a person logged into the console approve or deny commands the --policy holds for approval")
	fs.StringVar(&f.record, "record", "", "record each session's terminal (asciicast v2) and commands (JSON lines) into this directory, with or without --http; the console replays them, and so does `asciinema play`")
}

// check refuses the console's flags without --http: the console is
// served over HTTP, and a daemon started with --console alone had none
// and said nothing.
func (f *httpFlags) check() error {
	if f.addr != "" {
		return nil
	}
	var given []string
	for _, c := range []struct {
		name string
		on   bool
	}{{"--console", f.console}, {"--console-write", f.consoleWrite}, {"--console-approve", f.consoleApprove}} {
		if c.on {
			given = append(given, c.name)
		}
	}
	if len(given) == 0 {
		return nil
	}
	return fmt.Errorf("%s: the web console is served over HTTP; add --http ADDR (e.g. --http 127.0.0.1:8765, with TRL_AUTH_TOKEN set)", strings.Join(given, ", "))
}

// noApprover says why no one can approve a command the policy asks about
// on this daemon, or "" when someone can: an approver's token over HTTP
// (TRL_APPROVER_TOKEN), or a console that may approve.
func (f *httpFlags) noApprover() string {
	switch {
	case f.addr == "":
		return "this daemon serves no HTTP; approval is given over HTTP (--http ADDR with TRL_APPROVER_TOKEN) or in the web console (--console-approve)"
	case secretEnv("TRL_APPROVER_TOKEN") == "" && !f.consoleApprove && !f.consoleWrite:
		return "this daemon has no approver; start it with TRL_APPROVER_TOKEN set (exec.approve over HTTP) or with --console-approve"
	}
	return ""
}

// httpServing is the HTTP server and its gateway; a nil one (no --http)
// does nothing.
type httpServing struct {
	srv    *transport.HTTPServer
	gw     *gateway.Gateway
	served chan error
}

// listen checks the token and binds the HTTP address; nil when --http was
// not given. The token is read here and nowhere else in the daemon (through
// secretEnv, since hideSecrets has moved TRL_* out of the environment).
func (f *httpFlags) listen(log zerolog.Logger, rt *runtime.Runtime, maxBody int) (*httpServing, error) {
	if f.addr == "" {
		return nil, nil
	}
	token := secretEnv("TRL_AUTH_TOKEN")
	if token == "" {
		return nil, errors.New("--http needs a bearer token: set TRL_AUTH_TOKEN (e.g. export TRL_AUTH_TOKEN=$(openssl rand -hex 32)); refusing to serve HTTP without one")
	}
	approverToken := secretEnv("TRL_APPROVER_TOKEN")
	var con *console.Console
	if f.console || f.consoleWrite || f.consoleApprove {
		con = console.New(console.Options{API: rt, Sessions: rt, Write: f.consoleWrite, Approve: f.consoleWrite || f.consoleApprove, ApproverToken: approverToken, BearerToken: token,
			RecordDir: f.record, Logger: log})
	}
	gw := gateway.New(rt, gateway.Options{DefaultTimeout: f.gatewayTimeout, IdleTimeout: f.gatewayIdle, MaxBodyBytes: int64(maxBody), Logger: log})
	srv, err := transport.ListenHTTP(f.addr, transport.HTTPOptions{
		Console:           consoleHandler(con),
		MCP:               mcpHandler(rt),
		Token:             token,
		ApproverToken:     approverToken,
		Gateway:           gw,
		MaxBodyBytes:      int64(maxBody),
		ReadHeaderTimeout: f.headerTimeout,
		Logger:            log,
		Probes:            f.probes,
		Metrics:           f.metrics,
		Files:             f.files,
	})
	if err != nil {
		gw.Close()
		return nil, err
	}
	hs := &httpServing{srv: srv, gw: gw, served: make(chan error, 1)}
	if con != nil {
		log.Info().Str("url", con.LoginURL("http://"+srv.Addr().String())).Bool("write", f.consoleWrite).
			Msg("web console: open this one-time login URL (or run `trl console` for another)")
	}
	return hs, nil
}

// record starts recording every session into dir (--record), with or
// without --http: the files are for the console's replays and for
// `asciinema play`. It returns the func that stops the recorder; it
// does nothing without --record.
func record(dir string, rt *runtime.Runtime, log zerolog.Logger) (stop func(), err error) {
	if dir == "" {
		return func() {}, nil
	}
	rec, err := console.NewRecorder(dir, 0, rt, log)
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); rec.Run(ctx) }()
	log.Info().Str("record", dir).Msg("recording every session's terminal and commands")
	return func() { cancel(); <-done }, nil
}

// mcpHandler serves MCP's Streamable HTTP on /mcp with trl's tools on api.
// The server, with its tools' JSON schemas, is built on the first /mcp
// request: building it costs about 1 MiB of short-lived heap and the
// schema code's pages, which a daemon nobody reaches over MCP should not
// keep resident from start-up (the idle RSS goal, PERFORMANCE.md).
func mcpHandler(api protocol.API) http.Handler {
	srv := sync.OnceValue(func() *mcp.Server {
		return newMCPServer(mcpserver.Options{API: api, Version: runtime.Version})
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv() },
		&mcp.StreamableHTTPOptions{SessionTimeout: mcpSessionIdle})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			// A request with no session starts one (initialize).
			max := maxMCPSessions
			if n := countSessions(srv(), max); n >= max {
				w.Header().Set("Retry-After", "60")
				http.Error(w, fmt.Sprintf("trl serves at most %d MCP sessions at once and all are in use; close one (DELETE with its Mcp-Session-Id), or wait: an idle one ends after %s", max, mcpSessionIdle), http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// maxMCPSessions bounds the MCP sessions /mcp holds at once: each keeps
// about 15 KB until it is closed or idle for mcpSessionIdle. A variable
// for tests.
var maxMCPSessions = 1024

// countSessions counts srv's initialized sessions, up to max. A client's
// stateless probe (server/discover, which the SDK's client sends before
// initialize) also makes a session for its one request; those are not
// counted.
func countSessions(srv *mcp.Server, max int) int {
	n := 0
	for ss := range srv.Sessions() {
		if ss.InitializeParams() == nil {
			continue
		}
		if n++; n >= max {
			break
		}
	}
	return n
}

// mcpSessionIdle is how long an MCP session over HTTP may go without a
// request before it is closed (a client then gets 404 and starts a new
// one, as the MCP spec has it). Without it every initialize kept about
// 15 KB for the daemon's life: 16,000 of them took 250 MB. A variable
// for tests.
var mcpSessionIdle = 30 * time.Minute

// newMCPServer is mcpserver.New; a test counts its calls.
var newMCPServer = mcpserver.New

// consoleHandler is con as an http.Handler, nil when there is none (a
// nil *Console in the interface would not be nil).
func consoleHandler(con *console.Console) http.Handler {
	if con == nil {
		return nil
	}
	return con
}

// serve starts answering with h.
func (s *httpServing) serve(h protocol.Handler) {
	if s == nil {
		return
	}
	go func() { s.served <- s.srv.Serve(context.Background(), h) }()
}

// failed delivers Serve's error if it returns before shutdown; never for nil.
func (s *httpServing) failed() <-chan error {
	if s == nil {
		return nil
	}
	return s.served
}

// shutdown starts draining (alongside the runtime's shutdown, which ends
// the commands the requests wait for) and returns a func that waits for it
// and closes the gateway.
func (s *httpServing) shutdown(ctx context.Context) (wait func()) {
	if s == nil {
		return func() {}
	}
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		s.srv.Shutdown(ctx)
		<-s.served
	}()
	return func() {
		<-drained
		s.gw.Close()
	}
}

// close ends a server that never got to serve.
func (s *httpServing) close() {
	if s == nil {
		return
	}
	s.srv.Close()
	s.gw.Close()
}
