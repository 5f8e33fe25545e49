package transport

import (
	"context"
	"errors"
	"runtime/debug"

	"github.com/rs/zerolog"

	"github.com/trl-project/trl/protocol"
)

// replier is what a transport supplies to answer one request: how the
// response is written, and how each notification after it is. It is all a
// transport adds to the request pipeline (the shape of the MCP go-sdk's
// Connection): the socket and stdio write lines to their connection, HTTP
// writes a body or an event stream.
type replier interface {
	// reply writes the request's one response; follows says that
	// notifications come after it.
	reply(m *protocol.Message, follows bool) error
	// notify writes one notification, a line valid until it returns.
	notify(line []byte) error
}

// caller is who asks, as every transport describes it.
type caller struct {
	transport string // for the metrics: "unix", "stdio", "http"
	actor     string // for the audit log
	log       zerolog.Logger
	// approver is set when the request carried the approver token.
	approver bool
	// inputEnded is done when the connection's input has ended.
	inputEnded context.Context
}

// answer runs one decoded request through h and answers it through out:
// who asks (in the context, for the method table's own metrics and
// audit), a panic guard for what the transport itself does, the encoding of the result or error, the
// reply's Follow with its notifications, and Follow's clean-up when no one
// will read them. It is the request pipeline of every transport. ctx ends
// when the client goes away; what Follow watches (a running command) goes
// on regardless.
func answer(ctx context.Context, h protocol.Handler, who caller, req *protocol.Request, out replier) {
	answered := false
	defer func() {
		if p := recover(); p != nil {
			who.log.Error().Str("method", req.Method).Str("actor", who.actor).
				Interface("panic", p).Bytes("stack", debug.Stack()).Msg("request handler panicked")
			if !answered && !req.IsNotification() {
				_ = out.reply(protocol.ErrorMessage(req, protocol.Errorf(protocol.CodeInternal,
					"internal error while handling %s; the daemon log has details", req.Method)), false)
			}
		}
	}()

	ctx = protocol.WithCaller(ctx, protocol.Caller{Transport: who.transport, Actor: who.actor, Approver: who.approver, InputEnded: who.inputEnded})
	reply, err := h.Handle(ctx, &protocol.Call{Method: req.Method, Params: req.Params})
	if req.IsNotification() {
		// JSON-RPC: a notification runs and gets no answer.
		answered = true
		followUnheard(ctx, reply, err)
		return
	}
	if err != nil {
		answered = true
		_ = out.reply(protocol.ErrorMessage(req, protocol.AsError(err)), false)
		return
	}
	var data any
	if reply != nil {
		data = reply.Data
	}
	m, err := protocol.Result(req, data)
	answered = true
	follows := reply != nil && reply.Follow != nil
	if err != nil {
		followUnheard(ctx, reply, nil)
		_ = out.reply(protocol.ErrorMessage(req, protocol.Errorf(protocol.CodeInternal,
			"the result of %s could not be encoded: %v", req.Method, err)), false)
		return
	}
	if err := out.reply(m, follows); err != nil {
		followUnheard(ctx, reply, nil)
		return
	}
	if !follows {
		return
	}
	notes := protocol.NewNotifier(req.Dialect)
	emit := func(method string, params any) error {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		note, err := notes.Encode(method, params)
		if err != nil {
			return err
		}
		return out.notify(note)
	}
	if err := reply.Follow(ctx, emit); err != nil && ctx.Err() == nil {
		who.log.Debug().Err(err).Str("method", req.Method).Msg("notifications ended with an error")
	}
}

// followUnheard runs a reply's Follow with a context that has already
// ended, for a reply whose output no one will read (a JSON-RPC
// notification, or a response that could not be written): Follow may own
// clean-up (a stream subscription), and returns at once.
func followUnheard(parent context.Context, reply *protocol.Reply, err error) {
	if err != nil || reply == nil || reply.Follow == nil {
		return
	}
	ctx, cancel := context.WithCancelCause(parent)
	cancel(errors.New("transport: no one reads this request's notifications"))
	_ = reply.Follow(ctx, func(string, any) error { return context.Cause(ctx) })
}
