package transport

import (
	"net/http"
	"strconv"

	"github.com/trl-project/trl/protocol"
)

// serveRPC answers one request read from a POST /rpc body. The HTTP status
// says whether the transport understood the request (400 for a body that is
// not a request); the envelope says how the method went, so a method's
// error is 200 with ok:false, as on the socket.
func (s *HTTPServer) serveRPC(w *stallWriter, r *http.Request, body []byte, h protocol.Handler, approver bool) {
	req, perr := protocol.Decode(body)
	if perr != nil {
		_ = writeMessage(w, http.StatusBadRequest, protocol.ErrorMessage(req, perr))
		return
	}
	if approver && !approverMethods[req.Method] {
		_ = writeMessage(w, http.StatusForbidden, protocol.ErrorMessage(req, protocol.Errorf(protocol.CodeAuthFailed,
			"the approver token may only call exec.approve and exec.list; use TRL_AUTH_TOKEN for %s", clipString(req.Method, 64))))
		return
	}
	who := caller{transport: "http", actor: actor(r), log: s.opts.Logger, approver: approver}
	if approver {
		who.actor = "approver " + who.actor
	}
	out := &httpReplier{w: w, r: r}
	answer(r.Context(), h, who, req, out)
	if !out.replied {
		// JSON-RPC: a notification runs and gets no answer.
		w.WriteHeader(http.StatusNoContent)
	}
}

// httpReplier answers a request with a JSON body, or, when notifications
// follow, with an event stream whose first message is the response. When
// the client disconnects the request's context ends; Follow then returns
// and the command goes on, to be resumed by exec.attach.
type httpReplier struct {
	w       *stallWriter
	r       *http.Request
	st      *eventStream
	replied bool
}

func (h *httpReplier) reply(m *protocol.Message, follows bool) error {
	h.replied = true
	if !follows {
		return writeMessage(h.w, http.StatusOK, m)
	}
	h.st = newEventStream(h.w, h.r)
	return h.st.send(m)
}

func (h *httpReplier) notify(line []byte) error { return h.st.sendLine(line) }

// writeMessage answers with one message as application/json. A small
// message gets a Content-Length; a large streamed result goes out chunked.
func writeMessage(w http.ResponseWriter, status int, m *protocol.Message) error {
	w.Header().Set("Content-Type", "application/json")
	if n := m.Len(); n >= 0 {
		w.Header().Set("Content-Length", strconv.Itoa(n))
	}
	w.WriteHeader(status)
	_, err := m.WriteTo(w)
	return err
}
