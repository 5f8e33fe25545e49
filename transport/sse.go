package transport

import (
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/trl-project/trl/protocol"
)

// Content types of a streamed /rpc response.
const (
	contentNDJSON = "application/x-ndjson"
	contentSSE    = "text/event-stream"
)

// eventStream writes a streamed response: the response message, then one
// message per notification, each flushed to the client as it is sent. As
// NDJSON every message is one line; as server-sent events every message is
// one event, "data: <json>\n\n" (JSON never holds a raw newline, so one
// data line suffices).
type eventStream struct {
	mu  sync.Mutex
	w   *stallWriter
	sse bool
	err error
}

// newEventStream picks the format from the request's Accept header and
// writes the headers.
func newEventStream(w *stallWriter, r *http.Request) *eventStream {
	st := &eventStream{w: w, sse: acceptsSSE(r.Header.Values("Accept"))}
	h := w.Header()
	if st.sse {
		h.Set("Content-Type", contentSSE)
	} else {
		h.Set("Content-Type", contentNDJSON)
	}
	// Tell buffering proxies (nginx) to pass chunks through as they come.
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return st
}

// send writes one message (ending in "\n") and flushes it. After the
// first failure every send returns that failure.
func (st *eventStream) send(m *protocol.Message) error {
	return st.put(func() error {
		_, err := m.WriteTo(st.w)
		return err
	})
}

// sendLine is send for an encoded line (a notification).
func (st *eventStream) sendLine(line []byte) error {
	return st.put(func() error {
		_, err := st.w.Write(line)
		return err
	})
}

// put frames what write writes as one message of the stream: as an event
// it is "data: " + the message + "\n" (the message ends in its own "\n").
func (st *eventStream) put(write func() error) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.err != nil {
		return st.err
	}
	if st.sse {
		_, st.err = st.w.Write([]byte("data: "))
	}
	if st.err == nil {
		st.err = write()
	}
	if st.err == nil && st.sse {
		_, st.err = st.w.Write([]byte("\n"))
	}
	if st.err == nil {
		st.err = st.w.FlushError()
	}
	return st.err
}

// acceptsSSE reports whether an Accept header asks for text/event-stream
// (with a non-zero quality).
func acceptsSSE(values []string) bool {
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != contentSSE {
				continue
			}
			if q, ok := params["q"]; ok && strings.Trim(q, "0.") == "" {
				continue
			}
			return true
		}
	}
	return false
}
