package transport

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/protocol"
)

// ServeHTTP applies, in order, the checks every request goes through — Host
// (on a loopback bind), then the health check that needs no token, then the
// token, route, method, in-flight cap and body cap — and hands the request
// to /rpc or the gateway. It implements http.Handler for the server's own
// http.Server; use Serve rather than mounting it elsewhere.
func (s *HTTPServer) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	h, ok := s.enter()
	if !ok {
		rw.Header().Set("Connection", "close")
		writeEnvelope(rw, http.StatusServiceUnavailable, protocol.CodeShuttingDown, "the daemon is shutting down; retry against a running daemon")
		return
	}
	defer s.requests.Done()
	if s.opts.Console != nil && (r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/") || r.URL.Path == "/favicon.ico") {
		if s.loopback && !isLoopbackHost(r.Host) {
			writeEnvelope(rw, http.StatusForbidden, protocol.CodeAuthFailed,
				"this daemon listens on loopback and answers only requests addressed to localhost, 127.0.0.1 or [::1]")
			return
		}
		if r.URL.Path == "/console" {
			http.Redirect(rw, r, "/console/", http.StatusMovedPermanently)
			return
		}
		s.opts.Console.ServeHTTP(rw, r)
		return
	}
	w := newStallWriter(rw, s.opts.WriteStallTimeout)
	defer w.finish()
	defer func() {
		if p := recover(); p != nil {
			if p == http.ErrAbortHandler {
				panic(p)
			}
			s.opts.Logger.Error().Str("path", r.URL.Path).Str("actor", actor(r)).
				Interface("panic", p).Bytes("stack", debug.Stack()).Msg("HTTP handler panicked")
			if !w.started {
				writeEnvelope(w, http.StatusInternalServerError, protocol.CodeInternal, "internal error; the daemon log has details")
			}
		}
	}()

	hdr := w.Header()
	hdr.Set("Cache-Control", "no-store")
	hdr.Set("X-Content-Type-Options", "nosniff")

	if s.loopback && !isLoopbackHost(r.Host) {
		s.opts.Logger.Warn().Str("host", clipString(r.Host, 128)).Str("actor", actor(r)).
			Msg("refused an HTTP request whose Host is not a loopback name (DNS rebinding?)")
		writeEnvelope(w, http.StatusForbidden, protocol.CodeAuthFailed,
			"this daemon listens on loopback and answers only requests addressed to localhost, 127.0.0.1 or [::1]")
		return
	}
	if r.URL.Path == "/healthz" {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, "GET, HEAD")
			return
		}
		_ = writeMessage(w, http.StatusOK, protocol.Line([]byte(`{"ok":true}`+"\n")))
		return
	}
	if s.opts.Probes != nil && (r.URL.Path == "/livez" || r.URL.Path == "/readyz") {
		s.opts.Probes.ServeHTTP(w, r)
		return
	}
	agent := s.auth.check(r)
	approver := !agent && s.approver != nil && s.approver.check(r)
	if approver && r.URL.Path != "/rpc" {
		writeEnvelope(w, http.StatusForbidden, protocol.CodeAuthFailed, "the approver token may only call exec.approve and exec.list on POST /rpc")
		return
	}
	if !agent && !approver {
		msg := "missing or wrong bearer token; send the header 'Authorization: Bearer <TRL_AUTH_TOKEN>'"
		if r.URL.RawQuery != "" {
			msg += " (a token in the URL is never accepted)"
		}
		s.opts.Logger.Warn().Str("path", clipString(r.URL.Path, 128)).Str("actor", actor(r)).Msg("refused an HTTP request: bad token")
		metrics.Get().Request("http", "", string(protocol.CodeAuthFailed))
		hdr.Set("WWW-Authenticate", `Bearer realm="trl"`)
		writeEnvelope(w, http.StatusUnauthorized, protocol.CodeAuthFailed, msg)
		return
	}

	if s.opts.MCP != nil && r.URL.Path == "/mcp" {
		s.opts.MCP.ServeHTTP(w.ResponseWriter, r)
		return
	}
	if s.opts.Metrics != nil && r.URL.Path == "/metrics" {
		s.opts.Metrics.ServeHTTP(w, r)
		return
	}
	if s.opts.Files != nil && r.URL.Path == "/files" {
		s.serveFiles(w, r)
		return
	}
	var serve func(*stallWriter, *http.Request, []byte)
	switch {
	case r.URL.Path == "/rpc":
		serve = func(w *stallWriter, r *http.Request, body []byte) { s.serveRPC(w, r, body, h, approver) }
	case r.URL.Path == "/execute" && s.opts.Gateway != nil:
		serve = func(w *stallWriter, r *http.Request, body []byte) {
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			s.opts.Gateway.ServeHTTP(w, r)
		}
	default:
		paths := "POST /rpc, GET /healthz"
		if s.opts.Probes != nil {
			paths += ", GET /livez and /readyz"
		}
		if s.opts.Metrics != nil {
			paths += ", GET /metrics"
		}
		if s.opts.Gateway != nil {
			paths += ", POST /execute"
		}
		if s.opts.Files != nil {
			paths += ", GET and PUT /files"
		}
		if s.opts.MCP != nil {
			paths += ", /mcp"
		}
		if s.opts.Console != nil {
			paths += ", /console/"
		}
		writeEnvelope(w, http.StatusNotFound, protocol.CodeInvalidParams,
			fmt.Sprintf("no such path %q; the paths are %s", clipString(r.URL.Path, 64), paths))
		return
	}
	if r.Method != http.MethodPost {
		methodNotAllowed(w, "POST")
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		hdr.Set("Retry-After", "1")
		writeEnvelope(w, http.StatusServiceUnavailable, protocol.CodeLimitExceeded,
			fmt.Sprintf("too many HTTP requests in flight (limit %d); retry shortly", s.opts.MaxInFlight))
		return
	}
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	serve(w, r, body)
}

// readBody reads the whole body under the size cap and the body timeout,
// answering 413, 408 or 400 itself when it cannot.
func (s *HTTPServer) readBody(w *stallWriter, r *http.Request) ([]byte, bool) {
	limit := s.opts.MaxBodyBytes
	if r.ContentLength > limit {
		w.Header().Set("Connection", "close")
		writeEnvelope(w, http.StatusRequestEntityTooLarge, protocol.CodeLimitExceeded,
			fmt.Sprintf("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, limit))
		return nil, false
	}
	rc := http.NewResponseController(w.ResponseWriter)
	_ = rc.SetReadDeadline(time.Now().Add(s.opts.ReadBodyTimeout))
	buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0)+1, 1<<20)))
	_, err := buf.ReadFrom(http.MaxBytesReader(w.ResponseWriter, r.Body, limit))
	// No deadline afterwards: net/http keeps reading in the background
	// to notice a client that goes away, and a deadline there would end
	// the request's context in the middle of a long command.
	_ = rc.SetReadDeadline(time.Time{})
	if err == nil {
		return buf.Bytes(), true
	}
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		writeEnvelope(w, http.StatusRequestEntityTooLarge, protocol.CodeLimitExceeded,
			fmt.Sprintf("request body is larger than the limit of %d bytes", limit))
	case errors.As(err, &ne) && ne.Timeout():
		w.Header().Set("Connection", "close")
		writeEnvelope(w, http.StatusRequestTimeout, protocol.CodeInvalidParams,
			fmt.Sprintf("the request body did not arrive within %s", s.opts.ReadBodyTimeout))
	default:
		writeEnvelope(w, http.StatusBadRequest, protocol.CodeInvalidParams, "reading the request body: "+err.Error())
	}
	return nil, false
}

// writeEnvelope answers with a TRL error envelope, id null. Its shape,
// {"id":null,"ok":false,"error":{"code","message"}}, is also a ToolResult,
// so gateway clients can read it too.
func writeEnvelope(w http.ResponseWriter, status int, code protocol.Code, msg string) {
	_ = writeMessage(w, status, protocol.ErrorMessage(&protocol.Request{}, protocol.Errorf(code, "%s", msg)))
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeEnvelope(w, http.StatusMethodNotAllowed, protocol.CodeInvalidParams, "this path takes "+allow)
}

// actor names an HTTP client for the audit log.
func actor(r *http.Request) string { return "http " + r.RemoteAddr }

func clipString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// stallWriter bounds each write to the client, not the request: before
// every write and flush it moves the connection's write deadline to
// WriteStallTimeout from now, so a client that stops reading is dropped
// while a command that runs for an hour is not.
type stallWriter struct {
	http.ResponseWriter
	rc      *http.ResponseController
	stall   time.Duration
	armed   bool
	started bool // a header or body byte has been written
}

func newStallWriter(w http.ResponseWriter, stall time.Duration) *stallWriter {
	return &stallWriter{ResponseWriter: w, rc: http.NewResponseController(w), stall: stall}
}

func (w *stallWriter) arm() {
	_ = w.rc.SetWriteDeadline(time.Now().Add(w.stall))
	w.armed = true
}

func (w *stallWriter) WriteHeader(code int) {
	w.started = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *stallWriter) Write(p []byte) (int, error) {
	w.started = true
	w.arm()
	return w.ResponseWriter.Write(p)
}

// FlushError sends what is buffered to the client now;
// http.ResponseController.Flush calls it.
func (w *stallWriter) FlushError() error {
	w.arm()
	return w.rc.Flush()
}

// Flush implements http.Flusher.
func (w *stallWriter) Flush() { _ = w.FlushError() }

// Unwrap lets http.NewResponseController reach the real writer.
func (w *stallWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish flushes under the stall deadline, then clears the deadline so the
// next request on a kept-alive connection starts without one.
func (w *stallWriter) finish() {
	if !w.armed {
		return
	}
	_ = w.FlushError()
	_ = w.rc.SetWriteDeadline(time.Time{})
}
