package transport

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/protocol"
)

// ErrServerClosed is returned by Serve when the server was already closed.
var ErrServerClosed = errors.New("transport: server closed")

// UnixOptions configure a UnixServer. The zero value serves only peers of
// the daemon's own uid (and root), with the default limits.
type UnixOptions struct {
	// MaxMessageBytes and MaxInFlight apply to each connection; see
	// ConnOptions for their defaults.
	MaxMessageBytes int
	MaxInFlight     int
	// AllowUIDs lets peers with these uids in as well, and AllowAnyUID
	// every local user. The socket is still created 0600, so other users
	// reach it only once the operator widens its mode or directory; this
	// check is the second lock, not the first.
	AllowUIDs   []uint32
	AllowAnyUID bool
	// Logger receives connection refusals and accept errors; the zero
	// value logs nothing.
	Logger zerolog.Logger
}

// UnixServer serves the protocol on a unix socket (SPEC §5).
type UnixServer struct {
	path string
	opts UnixOptions
	ln   *net.UnixListener
	// file is the socket as bound; Close removes the path only if it is
	// still this file.
	file fs.FileInfo
	euid uint32

	mu          sync.Mutex // held for the whole of Close
	closed      bool
	listening   bool // until the listener is closed and the socket removed
	draining    bool // Shutdown is letting connections finish
	serving     bool
	cancelConns context.CancelCauseFunc
	live        map[*net.UnixConn]struct{}
	conns       sync.WaitGroup
}

// ListenUnix creates the socket at path with mode 0600. An existing socket
// is replaced only when no daemon answers on it; a live daemon's socket, a
// symlink, or any other file at path is refused and left in place.
func ListenUnix(path string, opts UnixOptions) (*UnixServer, error) {
	ln, fi, err := bindSocket(path)
	if err != nil {
		return nil, err
	}
	opts.Logger.Info().Str("socket", path).Msg("listening on unix socket")
	return &UnixServer{path: path, opts: opts, ln: ln, file: fi, euid: uint32(os.Geteuid()),
		listening: true, live: map[*net.UnixConn]struct{}{}}, nil
}

// Path returns the socket's path.
func (s *UnixServer) Path() string { return s.path }

// Serve accepts connections and answers each in its own goroutine until ctx
// ends or Close is called; then it closes every connection, waits for them
// to end, and returns nil. Ending ctx closes the server as Close does.
func (s *UnixServer) Serve(ctx context.Context, h protocol.Handler) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrServerClosed
	}
	if s.serving {
		s.mu.Unlock()
		return errors.New("transport: Serve called twice on one UnixServer")
	}
	s.serving = true
	// Connections end through Close (which ending ctx calls), so that they
	// all see the one cause ErrServerStopped.
	connCtx, cancelConns := context.WithCancelCause(context.WithoutCancel(ctx))
	s.cancelConns = cancelConns
	s.mu.Unlock()
	defer cancelConns(ErrServerStopped)

	// Close takes s.mu for its whole run, so our own Close below waits for
	// one started here before Serve returns.
	stop := context.AfterFunc(ctx, func() { s.Close() })
	defer stop()

	var backoff time.Duration
	var err error
	for {
		c, aerr := s.ln.AcceptUnix()
		if aerr != nil {
			if s.isClosed() || errors.Is(aerr, net.ErrClosed) {
				break
			}
			if !isTemporary(aerr) {
				err = fmt.Errorf("accepting on %s: %w", s.path, aerr)
				break
			}
			// Out of fds or memory: wait for some to be freed, as
			// net/http does, instead of spinning or giving up.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			s.opts.Logger.Warn().Err(aerr).Dur("retry_in", backoff).Msg("accept failed")
			select {
			case <-time.After(backoff):
			case <-connCtx.Done():
			}
			continue
		}
		backoff = 0
		if !s.track(c) {
			c.Close()
			continue
		}
		go func() {
			defer s.conns.Done()
			defer s.untrack(c)
			s.serveConn(connCtx, c, h)
		}()
	}
	if !s.isDraining() {
		s.Close()
	}
	s.conns.Wait()
	s.Close()
	return err
}

// track registers a new connection and counts it in conns; false when
// the server is stopping. The count is taken under mu, as draining is
// set: Shutdown's wait for conns then never races a connection being
// added (a WaitGroup's Add from zero must not run beside its Wait).
func (s *UnixServer) track(c *net.UnixConn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.draining {
		return false
	}
	s.live[c] = struct{}{}
	s.conns.Add(1)
	return true
}

func (s *UnixServer) untrack(c *net.UnixConn) {
	s.mu.Lock()
	delete(s.live, c)
	s.mu.Unlock()
}

func (s *UnixServer) isDraining() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining
}

// Shutdown stops accepting and removes the socket, then lets every
// connection finish: its reader sees end of input, the requests it has in
// flight are answered (so a method table that is shutting down can still
// say so), and it closes. When ctx ends first the rest are closed as Close
// does. Serve returns once all connections are gone.
func (s *UnixServer) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	err := s.stopListening()
	for c := range s.live {
		c.CloseRead()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.conns.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
	}
	return errors.Join(err, s.Close())
}

// stopListening closes the listener and removes the socket file if it is
// still the one bound here. Called with s.mu held.
func (s *UnixServer) stopListening() error {
	if !s.listening {
		return nil
	}
	s.listening = false
	err := s.ln.Close()
	if rerr := removeIfSame(s.path, s.file); rerr != nil {
		err = errors.Join(err, fmt.Errorf("removing the socket %s: %w", s.path, rerr))
	}
	s.opts.Logger.Info().Str("socket", s.path).Msg("unix socket closed")
	return err
}

// Close stops accepting, closes every connection (Serve waits for them to
// end) and removes the socket file if it is still the one bound here. It
// does not wait for Serve to return.
func (s *UnixServer) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cancelConns != nil {
		s.cancelConns(ErrServerStopped)
	}
	return s.stopListening()
}

func (s *UnixServer) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// serveConn checks the peer's credentials and serves the connection.
func (s *UnixServer) serveConn(ctx context.Context, c *net.UnixConn, h protocol.Handler) {
	uid, pid, err := peerCred(c)
	actor := fmt.Sprintf("uid=%d pid=%d", uid, pid)
	switch {
	case err != nil && !s.opts.AllowAnyUID:
		s.opts.Logger.Warn().Err(err).Msg("refused a connection: cannot read the peer's credentials")
		refuse(c, "the daemon could not read this connection's credentials", s.opts.MaxMessageBytes)
		return
	case err != nil:
		actor = "uid=? pid=?"
	case !s.allowed(uid):
		s.opts.Logger.Warn().Uint32("uid", uid).Int32("pid", pid).Msg("refused a connection from another user")
		refuse(c, fmt.Sprintf("uid %d may not use this daemon, which runs as uid %d; the daemon's owner can allow it explicitly", uid, s.euid), s.opts.MaxMessageBytes)
		return
	}
	log := s.opts.Logger.With().Str("actor", actor).Logger()
	log.Debug().Msg("connection opened")
	ServeConn(ctx, c, h, ConnOptions{
		MaxMessageBytes: s.opts.MaxMessageBytes,
		MaxInFlight:     s.opts.MaxInFlight,
		Actor:           actor,
		Logger:          log,
		Transport:       "unix",
	})
	log.Debug().Msg("connection closed")
}

func (s *UnixServer) allowed(uid uint32) bool {
	return uid == s.euid || uid == 0 || s.opts.AllowAnyUID || slices.Contains(s.opts.AllowUIDs, uid)
}

// refuseWait is how long a refused connection may take to send its
// first request, which its AUTH_FAILED answers.
const refuseWait = 2 * time.Second

// refuse answers a connection's first request with AUTH_FAILED and closes
// it. The answer carries the request's id in the request's dialect, so a
// JSON-RPC 2.0 client reads the refusal as its call's error instead of an
// envelope it cannot parse and a closed connection (`trl call` from
// another user said only "connection closed"). A peer that sends nothing
// within refuseWait gets the TRL line; the deadlines keep a peer that
// neither writes nor reads from holding a goroutine.
func refuse(c *net.UnixConn, msg string, maxMessage int) {
	_ = c.SetDeadline(time.Now().Add(refuseWait))
	req := &protocol.Request{}
	if first, err := NewFramer(c, maxMessage).Next(); err == nil {
		req, _ = protocol.Decode(first)
	}
	_ = c.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.Write(protocol.EncodeError(req, protocol.Errorf(protocol.CodeAuthFailed, "%s", msg)))
	_ = c.Close()
}

// isTemporary reports accept errors worth retrying: resource exhaustion and
// a connection aborted before we took it.
func isTemporary(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM, syscall.ECONNABORTED} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
