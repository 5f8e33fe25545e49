package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/internal/rawio"
	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/protocol"
)

// DefaultMaxInFlight is how many requests one connection may have running
// at once when ConnOptions.MaxInFlight is zero.
const DefaultMaxInFlight = 64

// DefaultBacklog is how many requests may wait for a slot when
// ConnOptions.Backlog is zero.
const DefaultBacklog = 1024

// ConnOptions configure one connection. The zero value is usable.
type ConnOptions struct {
	// MaxMessageBytes caps one request; 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
	// MaxInFlight caps the requests running at once on the connection
	// (a running Follow counts); 0 means DefaultMaxInFlight. Requests over
	// the cap wait in a backlog of Backlog requests, in order; while the
	// backlog is full the connection is not read (the client's writes
	// block: TCP-style back-pressure), so a client that pipelines
	// thousands of requests gets every one answered. exec.cancel never
	// waits in the backlog: it runs at once, so it overtakes what it
	// cancels (unless the backlog is full and the reader waits); nor do
	// quick methods (ping, session.info, session.destroy…) while a few
	// extra slots of their own are free (quickMethod).
	MaxInFlight int
	// Backlog is how many requests may wait for a slot; 0 means
	// DefaultBacklog.
	Backlog int
	// Actor is passed to every Call, for the audit log.
	Actor string
	// Sequential handles requests one at a time in arrival order, each
	// finished with its notifications before the next starts (stdio's
	// contract), and every request read is answered before the end.
	// MaxInFlight does not apply. Messages are read ahead meanwhile, so
	// that an exec.input or exec.cancel naming its command's exec_id is
	// handled as it is read (atOnce; those run one at a time in their own
	// order): a command waiting for input would otherwise hold up the
	// very request that answers it, for ever.
	Sequential bool
	// Logger receives handler panics and write failures; the zero value
	// logs nothing.
	Logger zerolog.Logger
	// Transport names the transport in the metrics ("unix", "stdio").
	Transport string
}

// Causes with which a connection's context ends; handlers can tell them
// apart with context.Cause.
var (
	// ErrPeerClosed: the client closed its side (end of input).
	ErrPeerClosed = errors.New("transport: the client closed the connection")
	// ErrServerStopped: the server is shutting down (the cause UnixServer
	// ends its connections with; ServeConn passes on its ctx's cause).
	ErrServerStopped = errors.New("transport: the server is shutting down")
)

// ServeConn answers the requests read from rw until the client closes it,
// reading fails, or ctx ends; then it cancels the connection's context (so
// Follow functions return), waits for every request it started, closes rw
// and returns. Ending ctx closes rw at once, abandoning unanswered requests.
//
// On a unix connection, end of input is not the client leaving: a client
// that shut down its write side (`echo request | socat - UNIX-CONNECT:…`)
// still waits to read, so every request read is answered (streams to their
// end) before rw is closed. Only a peer that closed the connection or its
// read side, or a failed read or write, cancels what is in flight. Other
// connections (net.Pipe in tests) cannot tell the two apart: for them end
// of input means gone.
//
// A unix connection is read and written with raw system calls on the
// poller (rawio.Conn), as every call of a command's round trip is.
func ServeConn(ctx context.Context, rw io.ReadWriteCloser, h protocol.Handler, opts ConnOptions) {
	var hangup hangupFunc
	var r io.Reader = rw
	var w io.Writer = rw
	if uc, ok := rw.(*net.UnixConn); ok {
		hangup = func() (<-chan struct{}, func(), bool) { return watchHangup(uc) }
		if rc, err := uc.SyscallConn(); err == nil {
			raw := rawio.NewConn(rc)
			r, w = raw, raw
		}
	}
	_ = serve(ctx, r, w, rw.Close, hangup, h, opts)
}

// hangupFunc starts watching whether a half-closed connection's peer is
// still there to read: gone is closed once it is not; stop ends the watch.
// ok false: the connection cannot be watched.
type hangupFunc func() (gone <-chan struct{}, stop func(), ok bool)

// conn is one connection's state. The reader loop (serve) owns it; request
// goroutines are counted in wg and all writes go through write.
type conn struct {
	h      protocol.Handler
	opts   ConnOptions
	ctx    context.Context
	cancel context.CancelCauseFunc
	slots  chan struct{}
	// quick holds the few extra slots of quick methods, taken only when
	// every slot is busy (quickMethod).
	quick chan struct{}
	wg    sync.WaitGroup
	// backlog holds requests waiting for a slot; its one consumer
	// (drain) ends when the reader closes it.
	backlog     chan queued
	backlogOnce sync.Once
	// urgent, in a sequential connection, holds the requests handled as
	// they are read (atOnce), for their one worker; closed with backlog.
	urgent chan *protocol.Request
	// idle hands a request to a worker waiting for one (start).
	idle    chan *protocol.Request
	drained chan struct{}
	// inputEnded is done when reading ends (endInput): what runs learns
	// that the client can type nothing more (protocol.Caller.InputEnded).
	inputEnded context.Context
	endInput   context.CancelFunc

	wmu  sync.Mutex
	w    io.Writer
	werr error

	closeOnce sync.Once
	closer    func() error
}

// serve runs the read loop in the calling goroutine. It returns nil at end
// of input or when ctx stopped it, and the read error otherwise. hangup,
// when not nil, tells a half-closed connection from a gone client (see
// ServeConn); without it end of input cancels what is in flight.
func serve(parent context.Context, r io.Reader, w io.Writer, closer func() error, hangup hangupFunc, h protocol.Handler, opts ConnOptions) error {
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.Backlog <= 0 {
		opts.Backlog = DefaultBacklog
	}
	metrics.Get().ConnOpened(opts.Transport)
	defer metrics.Get().ConnClosed(opts.Transport)
	ctx, cancel := context.WithCancelCause(parent)
	c := &conn{
		h:      h,
		opts:   opts,
		ctx:    ctx,
		cancel: cancel,
		slots:  make(chan struct{}, opts.MaxInFlight),
		quick:  make(chan struct{}, quickSlots),
		w:      w,
		closer: closer,
	}
	c.backlog, c.drained = make(chan queued, opts.Backlog), make(chan struct{})
	c.inputEnded, c.endInput = context.WithCancel(context.Background())
	defer c.endInput()
	c.idle = make(chan *protocol.Request)
	go c.drain()
	if opts.Sequential {
		// The requests handled as read (atOnce) run in their own order,
		// one at a time, beside the backlog's.
		c.urgent = make(chan *protocol.Request, opts.Backlog)
		c.wg.Go(func() {
			for req := range c.urgent {
				if c.ctx.Err() == nil {
					c.run(req)
				}
			}
		})
	}
	// The reader can only be woken from a blocked Read by closing, so a
	// server shutdown closes the connection rather than waiting for the
	// client. AfterFunc's goroutine exists only if parent ends first, and
	// closeOnce makes our final close wait for it.
	stop := context.AfterFunc(parent, c.close)
	defer stop()

	fr := NewFramer(r, opts.MaxMessageBytes)
	var readErr error
	for {
		msg, err := fr.Next()
		if errors.Is(err, ErrTooLarge) {
			c.answer(protocol.EncodeError(&protocol.Request{}, protocol.Errorf(protocol.CodeLimitExceeded,
				"message is larger than the limit of %d bytes; it was skipped up to the end of its line", opts.MaxMessageBytes)))
			continue
		}
		if err != nil {
			if err != io.EOF {
				readErr = err
			}
			break
		}
		c.dispatch(msg)
	}
	// Told at once: an exec.input read just before the end may still be
	// on its way (the follow gives it a moment, inputGrace), and waiting
	// here for it deadlocked when it waited for its command's exit.
	c.endInput()

	if opts.Sequential && parent.Err() == nil {
		// Every request read is answered, in order, before the end.
		c.endBacklog()
		<-c.drained
		c.wg.Wait()
	}
	switch {
	case parent.Err() != nil:
		// ctx already ended with the parent's cause (ErrServerStopped
		// from UnixServer); the read failed because we closed the conn.
		readErr = nil
	case readErr != nil:
		cancel(fmt.Errorf("transport: reading from the client: %w", readErr))
	default:
		c.finishHalfClosed(parent, hangup)
		cancel(ErrPeerClosed)
	}
	c.endBacklog()
	<-c.drained
	c.wg.Wait()
	c.close()
	c.wmu.Lock()
	werr := c.werr
	c.wmu.Unlock()
	if werr != nil && readErr != nil {
		// The read failed because the write failure closed the conn.
		return werr
	}
	return readErr
}

// finishHalfClosed runs at end of input: when the peer can be watched, the
// requests already read (running or in the backlog) are answered while the
// peer is still there to read them; the wait ends early when the peer goes,
// a write fails or the server stops (parent ends). Without a watch it
// returns at once, and the caller cancels what is in flight.
func (c *conn) finishHalfClosed(parent context.Context, hangup hangupFunc) {
	if hangup == nil {
		return
	}
	gone, stop, ok := hangup()
	if !ok {
		return
	}
	defer stop()
	// Nothing more will be read: drain starts what is left in the
	// backlog as slots free up, then ends.
	c.endBacklog()
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		<-c.drained
		c.wg.Wait()
	}()
	select {
	case <-finished:
	case <-gone:
		c.cancel(ErrPeerClosed)
	case <-c.ctx.Done(): // a write failed, or parent ended
	}
	<-finished
}

// endBacklog tells drain that no more requests come, once.
func (c *conn) endBacklog() {
	c.backlogOnce.Do(func() {
		close(c.backlog)
		if c.urgent != nil {
			close(c.urgent)
		}
	})
}

// close closes the connection once; later calls wait for the first.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		if c.closer != nil {
			_ = c.closer()
		}
	})
}

// dispatch decodes one message and starts its request.
func (c *conn) dispatch(msg []byte) {
	req, perr := protocol.Decode(msg)
	if perr != nil {
		c.answer(protocol.EncodeError(req, perr))
		return
	}
	if c.opts.Sequential && !atOnce(req) {
		c.queue(queued{req: req})
		return
	}
	if c.opts.Sequential {
		select { // atOnce: in order among themselves
		case c.urgent <- req:
		case <-c.ctx.Done():
		}
		return
	}
	if req.Method == protocol.MethodExecCancel {
		// A cancel must not wait in line behind what it cancels.
		c.wg.Go(func() { c.run(req) })
		return
	}
	select {
	case c.slots <- struct{}{}:
		c.start(req)
		return
	default:
	}
	if quickMethod(req.Method) {
		select {
		case c.quick <- struct{}{}:
			c.wg.Go(func() {
				defer func() { <-c.quick }()
				c.run(req)
			})
			return
		default: // those are busy too: it waits its turn
		}
	}
	// Blocks the reader while the backlog is full: back-pressure.
	c.queue(queued{req: req})
}

// quickSlots is how many quick methods may run at once on a connection
// beyond MaxInFlight.
const quickSlots = 16

// quickMethod reports whether method answers without waiting for a
// command (its longest wait is session.destroy's bounded reaping): with
// every slot taken by long calls (exec.run of sleep 1000, exec.wait),
// it runs in a quick slot rather than waiting for one of them to end,
// so a ping, a look at a session or a destroy still gets through.
func quickMethod(method string) bool {
	switch method {
	case protocol.MethodSystemPing, protocol.MethodSystemStats, protocol.MethodSessionList, protocol.MethodSessionInfo,
		protocol.MethodSessionDestroy, protocol.MethodSessionScreen, protocol.MethodSessionResize,
		protocol.MethodExecList, protocol.MethodExecApprove:
		return true
	}
	return false
}

// queued is a backlog's entry: a request, or (in a sequential
// connection) an answer already made, written in its turn.
type queued struct {
	req  *protocol.Request
	line []byte
}

// queue adds q to the backlog, blocking the reader while it is full
// (back-pressure), until the connection ends.
func (c *conn) queue(q queued) {
	select {
	case c.backlog <- q:
	case <-c.ctx.Done():
	}
}

// answer writes an answer the reader made (a message that could not be
// read as a request); a sequential connection writes it in its turn.
func (c *conn) answer(line []byte) {
	if c.opts.Sequential {
		c.queue(queued{line: line})
		return
	}
	c.write(line)
}

// drain starts the backlog's requests, in order, as slots free up (in a
// sequential connection, runs them one after the other itself). Once
// the connection's context ends, what is left is dropped: nobody reads
// the answers.
func (c *conn) drain() {
	defer close(c.drained)
	for q := range c.backlog {
		if c.opts.Sequential {
			switch {
			case c.ctx.Err() != nil:
			case q.line != nil:
				c.write(q.line)
			default:
				c.run(q.req)
			}
			continue
		}
		req := q.req
		select {
		case c.slots <- struct{}{}:
		case <-c.ctx.Done():
			continue
		}
		c.start(req)
	}
}

// atOnce reports whether a sequential connection handles req as it is
// read: an exec.input or exec.cancel that names its command by exec_id
// (the client learnt it from that command's answer or notifications, so
// the command has started). One that names a session waits its turn.
func atOnce(req *protocol.Request) bool {
	if req.Method != protocol.MethodExecInput && req.Method != protocol.MethodExecCancel {
		return false
	}
	var p struct {
		ExecID string `json:"exec_id"`
	}
	return json.Unmarshal(req.Params, &p) == nil && p.ExecID != ""
}

// workerIdle is how long a connection's idle worker waits for another
// request before its goroutine ends.
const workerIdle = 10 * time.Second

// start runs req, which holds a slot, on an idle worker of the
// connection, or on a new one. A worker keeps its goroutine, and the
// stack the last request grew, for the next request: a fresh goroutine
// per request grew its stack from the start through several copies on
// every exec.run (runtime.copystack was 6% of the daemon's CPU in a
// latency run).
func (c *conn) start(req *protocol.Request) {
	select {
	case c.idle <- req:
	default:
		c.wg.Go(func() { c.work(req) })
	}
}

// work answers req and then whatever start hands it, releasing a slot
// after each, until it has waited workerIdle for one, no more requests
// can come (the input ended and the backlog is drained: a half-closed
// connection's answers are not held up), or the connection ends.
func (c *conn) work(req *protocol.Request) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		c.run(req)
		<-c.slots
		idle.Reset(workerIdle)
		select {
		case req = <-c.idle:
		case <-idle.C:
			return
		case <-c.drained:
			return
		case <-c.ctx.Done():
			return
		}
	}
}

// run answers req through the request pipeline (answer), the conn
// being its replier.
func (c *conn) run(req *protocol.Request) {
	who := caller{transport: c.opts.Transport, actor: c.opts.Actor, log: c.opts.Logger}
	if c.opts.Sequential {
		// Only stdio's end of input is the end of all input: on a socket,
		// another connection can still answer a command by exec_id.
		who.inputEnded = c.inputEnded
	}
	answer(c.ctx, c.h, who, req, c)
}

// reply implements replier: the response is one line like any other.
func (c *conn) reply(m *protocol.Message, _ bool) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if _, err := m.WriteTo(c.w); err != nil {
		return c.failed(err)
	}
	return nil
}

// notify implements replier.
func (c *conn) notify(line []byte) error { return c.write(line) }

// write sends one encoded message whole. After the first failure the
// connection is cancelled and closed (the client is gone), and every later
// write returns that failure.
func (c *conn) write(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	if _, err := c.w.Write(b); err != nil {
		return c.failed(err)
	}
	return nil
}

// failed records the first write failure, under wmu: the connection is
// cancelled and closed (the client is gone).
func (c *conn) failed(err error) error {
	c.werr = fmt.Errorf("transport: writing to the client: %w", err)
	c.cancel(c.werr)
	// Closing wakes the reader, which then winds the connection down.
	// No one closing holds wmu, so closing under it cannot deadlock.
	c.close()
	return c.werr
}
