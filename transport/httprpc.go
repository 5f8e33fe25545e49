package transport

import (
	"context"
	"errors"
	"net/http"
	"runtime/debug"
	"strconv"

	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/protocol"
)

// serveRPC answers one request read from a POST /rpc body. The HTTP status
// says whether the transport understood the request (400 for a body that is
// not a request); the envelope says how the method went, so a method's
// error is 200 with ok:false, as on the socket.
func (s *HTTPServer) serveRPC(w *stallWriter, r *http.Request, body []byte, h protocol.Handler) {
	req, perr := protocol.Decode(body)
	if perr != nil {
		writeMessage(w, http.StatusBadRequest, protocol.EncodeError(req, perr))
		return
	}
	ctx := r.Context()
	reply, err := s.handle(ctx, h, req, actor(r))
	metrics.Get().Request("http", req.Method, metrics.Code(err))
	if req.IsNotification() {
		// JSON-RPC: a notification runs and gets no answer.
		followUnheard(ctx, reply, err)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if err != nil {
		writeMessage(w, http.StatusOK, protocol.EncodeError(req, protocol.AsError(err)))
		return
	}
	var data any
	if reply != nil {
		data = reply.Data
	}
	out, err := protocol.EncodeResult(req, data)
	if err != nil {
		followUnheard(ctx, reply, nil)
		writeMessage(w, http.StatusOK, protocol.EncodeError(req, protocol.Errorf(protocol.CodeInternal,
			"the result of %s could not be encoded: %v", req.Method, err)))
		return
	}
	if reply == nil || reply.Follow == nil {
		writeMessage(w, http.StatusOK, out)
		return
	}
	st := newEventStream(w, r)
	if err := st.send(out); err != nil {
		followUnheard(ctx, reply, nil)
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
		return st.send(note)
	}
	// ctx ends when the client disconnects (or the server closes); Follow
	// then returns and the command goes on, to be resumed by exec.attach.
	if err := reply.Follow(ctx, emit); err != nil && ctx.Err() == nil {
		s.opts.Logger.Debug().Err(err).Str("method", req.Method).Msg("notifications ended with an error")
	}
}

// handle calls the method table, turning a panic into INTERNAL_ERROR so one
// bad request cannot take the daemon down.
func (s *HTTPServer) handle(ctx context.Context, h protocol.Handler, req *protocol.Request, actor string) (reply *protocol.Reply, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.opts.Logger.Error().Str("method", req.Method).Str("actor", actor).
				Interface("panic", p).Bytes("stack", debug.Stack()).Msg("request handler panicked")
			reply, err = nil, protocol.Errorf(protocol.CodeInternal, "internal error while handling %s; the daemon log has details", req.Method)
		}
	}()
	return h.Handle(ctx, &protocol.Call{Method: req.Method, Params: req.Params, Actor: actor})
}

// followUnheard runs a reply's Follow with a context that has already
// ended, for a reply whose output no one will read: Follow may own
// clean-up, and returns at once.
func followUnheard(parent context.Context, reply *protocol.Reply, err error) {
	if err != nil || reply == nil || reply.Follow == nil {
		return
	}
	ctx, cancel := context.WithCancelCause(parent)
	cancel(errors.New("transport: no one reads this request's notifications"))
	_ = reply.Follow(ctx, func(string, any) error { return context.Cause(ctx) })
}

// writeMessage answers with one encoded message as application/json.
func writeMessage(w http.ResponseWriter, status int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(status)
	w.Write(msg)
}
