package transport

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	trlfiles "github.com/trl-project/trl/files"
	"github.com/trl-project/trl/protocol"
)

// FileStore is what GET and PUT /files need of the method table (SPEC §15):
// a file opened in a session's context, and a streamed atomic write.
type FileStore interface {
	// OpenFile opens a regular file as the session's user; the caller
	// closes it.
	OpenFile(ctx context.Context, sessionRef, path string) (*os.File, error)
	// PutFile writes r to path atomically, never holding it whole.
	// Who writes travels in ctx (protocol.Caller).
	PutFile(ctx context.Context, sessionRef, path string, r io.Reader, mode string, createDirs bool) (protocol.FSWriteResult, error)
	// FileServed counts the bytes one GET sent.
	FileServed(n int64)
}

// serveFiles answers GET /files?session=&path= (Range supported) and PUT
// /files?session=&path=&mode=&create_dirs=. Both stream between the
// connection and the disk through a small buffer: a file is never held in
// memory, whatever its size. A PUT body has no size cap (the disk is) and
// no overall deadline: each read must make progress within
// ReadBodyTimeout.
func (s *HTTPServer) serveFiles(w *stallWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodPut {
		methodNotAllowed(w, "GET, HEAD, PUT")
		return
	}
	q := r.URL.Query()
	for k := range q {
		switch k {
		case "session", "path", "mode", "create_dirs":
		default:
			if strings.HasPrefix(k, "_") {
				continue // a cache-buster (?_=1700000000)
			}
			writeEnvelope(w, http.StatusBadRequest, protocol.CodeInvalidParams, fmt.Sprintf(
				"unknown query parameter %q; /files takes session and path (and, to PUT, mode and create_dirs), e.g. /files?session=ID&path=/tmp/f", clipString(k, 64)))
			return
		}
	}
	p := q.Get("path")
	if p == "" {
		writeEnvelope(w, http.StatusBadRequest, protocol.CodeInvalidParams, "the query parameter path is required, e.g. /files?session=ID&path=/tmp/f")
		return
	}
	select {
	case s.slots <- struct{}{}:
		defer func() { <-s.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		writeEnvelope(w, http.StatusServiceUnavailable, protocol.CodeLimitExceeded,
			fmt.Sprintf("too many HTTP requests in flight (limit %d); retry shortly", s.opts.MaxInFlight))
		return
	}
	files := s.opts.Files
	if r.Method != http.MethodPut {
		f, err := files.OpenFile(r.Context(), q.Get("session"), p)
		if err != nil {
			fileError(w, err)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			fileError(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/octet-stream")
		cw := &countingResponse{stallWriter: w}
		if st.Size() == 0 || trlfiles.SizeUntold(f) {
			// Sent as read, to its end, with no length and no ranges:
			// ServeContent would seek for a size /proc refuses and /sys
			// gives as 4096 whatever the file holds, and it would send
			// nothing of a file that says 0 bytes and holds more (those
			// of tracefs, debugfs and cgroup2).
			cw.WriteHeader(http.StatusOK)
			_, _ = io.Copy(cw, f)
		} else {
			http.ServeContent(cw, r, path.Base(p), st.ModTime(), f)
		}
		files.FileServed(cw.n)
		return
	}
	createDirs := true
	switch q.Get("create_dirs") {
	case "", "true", "1":
	case "false", "0":
		createDirs = false
	default:
		writeEnvelope(w, http.StatusBadRequest, protocol.CodeInvalidParams, "create_dirs must be true or false")
		return
	}
	body := &progressReader{r: r.Body, rc: http.NewResponseController(w.ResponseWriter), stall: s.opts.ReadBodyTimeout}
	ctx := protocol.WithCaller(r.Context(), protocol.Caller{Transport: "http", Actor: actor(r)})
	res, err := files.PutFile(ctx, q.Get("session"), p, body, q.Get("mode"), createDirs)
	if err != nil {
		// Read the rest of the body before answering: a client still
		// sending (Python's http.client does not wait for 100 Continue)
		// would otherwise meet a reset and lose the answer.
		_, _ = io.Copy(io.Discard, body)
	}
	_ = body.rc.SetReadDeadline(time.Time{})
	if err != nil {
		fileError(w, err)
		return
	}
	b, _ := json.Marshal(map[string]any{"ok": true, "data": res})
	_ = writeMessage(w, http.StatusOK, protocol.Line(append(b, '\n')))
}

// fileStatus is the HTTP status of a file method's error code.
var fileStatus = map[protocol.Code]int{
	protocol.CodeFileNotFound:     http.StatusNotFound,
	protocol.CodeSessionNotFound:  http.StatusNotFound,
	protocol.CodePermissionDenied: http.StatusForbidden,
	protocol.CodeOutsideRoot:      http.StatusForbidden,
	protocol.CodeConflict:         http.StatusConflict,
	protocol.CodeIsADirectory:     http.StatusBadRequest,
	protocol.CodeNotADirectory:    http.StatusBadRequest,
	protocol.CodeInvalidParams:    http.StatusBadRequest,
	protocol.CodeLimitExceeded:    http.StatusRequestEntityTooLarge,
	protocol.CodeSessionExited:    http.StatusGone,
	protocol.CodeShuttingDown:     http.StatusServiceUnavailable,
}

func fileError(w http.ResponseWriter, err error) {
	e := protocol.AsError(err)
	status, ok := fileStatus[e.Code]
	if !ok {
		status = http.StatusInternalServerError
	}
	writeEnvelope(w, status, e.Code, e.Message)
}

// countingResponse counts the body bytes a GET sends.
type countingResponse struct {
	*stallWriter
	n int64
}

func (c *countingResponse) Write(p []byte) (int, error) {
	n, err := c.stallWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// sendPiece bounds what one ReadFrom sends between stall deadlines.
const sendPiece = 8 << 20

// ReadFrom lets http.ServeContent's copy reach net/http's own ReadFrom,
// which sends a file with sendfile(2) instead of through a buffer, in
// pieces with the stall deadline moved before each. The file is kept one
// io.LimitedReader deep: sendfile looks through one, not two.
func (c *countingResponse) ReadFrom(src io.Reader) (int64, error) {
	rf, ok := c.stallWriter.ResponseWriter.(io.ReaderFrom)
	if !ok {
		return io.Copy(struct{ io.Writer }{c}, src)
	}
	remain := int64(-1)
	if lr, ok := src.(*io.LimitedReader); ok {
		src, remain = lr.R, lr.N
	}
	var total int64
	for remain != 0 {
		piece := int64(sendPiece)
		if remain > 0 {
			piece = min(piece, remain)
		}
		c.stallWriter.started = true
		c.stallWriter.arm()
		n, err := rf.ReadFrom(&io.LimitedReader{R: src, N: piece})
		total += n
		c.n += n
		if remain > 0 {
			remain -= n
		}
		if err != nil || n < piece {
			return total, err
		}
	}
	return total, nil
}

// progressReader moves the connection's read deadline before each read,
// so an upload may take as long as it needs while it makes progress.
type progressReader struct {
	r     io.Reader
	rc    *http.ResponseController
	stall time.Duration
}

func (p *progressReader) Read(b []byte) (int, error) {
	_ = p.rc.SetReadDeadline(time.Now().Add(p.stall))
	return p.r.Read(b)
}
