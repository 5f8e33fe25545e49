package console

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// DefaultRecordLimit bounds one session's recording; past it the file
// ends with a note that says so.
const DefaultRecordLimit = 64 << 20

// Recorder writes, for every session, an asciicast v2 file of its
// terminal (<session>.cast: `asciinema play` replays it) and its commands
// as JSON lines (<session>.commands.jsonl), each bounded in size. It finds
// new sessions by looking at the session list every poll interval.
type Recorder struct {
	dir      string
	limit    int64
	api      protocol.API
	sessions Sessions
	log      zerolog.Logger
	poll     time.Duration

	mu   sync.Mutex
	recs map[string]*recording
}

// NewRecorder records into dir (made 0700 if missing).
func NewRecorder(dir string, limit int64, api protocol.API, s Sessions, log zerolog.Logger) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recordings directory: %w", err)
	}
	if limit <= 0 {
		limit = DefaultRecordLimit
	}
	return &Recorder{dir: dir, limit: limit, api: api, sessions: s, log: log, poll: 500 * time.Millisecond, recs: map[string]*recording{}}, nil
}

// Run records until ctx ends, then closes every file.
func (r *Recorder) Run(ctx context.Context) {
	t := time.NewTicker(r.poll)
	defer t.Stop()
	defer r.closeAll()
	for {
		r.scan(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (r *Recorder) scan(ctx context.Context) {
	list, err := r.api.SessionList(recorderCtx(ctx), protocol.SessionListParams{})
	if err != nil {
		return
	}
	infos := list.Sessions
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, in := range infos {
		if _, ok := r.recs[in.SessionID]; ok || in.State == "exited" {
			continue
		}
		s, err := r.sessions.Session(in.SessionID)
		if err != nil {
			continue
		}
		rec, err := r.start(s, in)
		if err != nil {
			r.log.Warn().Err(err).Str("session", in.SessionID).Msg("recording not started")
			continue
		}
		r.recs[in.SessionID] = rec
	}
	for id, rec := range r.recs {
		rec.transcript(ctx, r.api)
		s, err := r.sessions.Session(id)
		if errors.Is(err, session.ErrNotFound) {
			rec.close()
			delete(r.recs, id)
		} else if err == nil {
			rec.resized(s)
		}
	}
}

func (r *Recorder) closeAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, rec := range r.recs {
		rec.close()
		delete(r.recs, id)
	}
}

// recording is one session's two files.
type recording struct {
	mu      sync.Mutex
	start   time.Time
	cast    *os.File
	buf     *bufio.Writer
	size    int64
	limit   int64
	cut     bool
	cmds    *os.File
	written map[string]bool
	unsub   func()

	rows, cols int // the size last recorded; only the recorder's scan uses them
}

type castHeader struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp"`
	Title     string            `json:"title,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

func (r *Recorder) start(s *session.Session, in protocol.SessionInfo) (*recording, error) {
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(r.dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	}
	cast, err := open(in.SessionID + ".cast")
	if err != nil {
		return nil, err
	}
	cmds, err := open(in.SessionID + ".commands.jsonl")
	if err != nil {
		cast.Close()
		return nil, err
	}
	rows, cols := s.Screen().Size()
	rec := &recording{start: time.Now(), rows: rows, cols: cols, cast: cast, buf: bufio.NewWriterSize(cast, 32<<10), limit: r.limit, cmds: cmds, written: map[string]bool{}}
	hdr, _ := json.Marshal(castHeader{Version: 2, Width: cols, Height: rows, Timestamp: rec.start.Unix(),
		Title: castTitlePrefix + cmp.Or(in.Name, in.SessionID), Env: map[string]string{"SHELL": in.Shell, "TERM": "xterm-256color"}})
	rec.line(hdr)
	// What the session showed before the recorder found it (it looks
	// every poll interval) starts the recording as a painted screen.
	s.HoldOutput(func() {
		rec.unsub = s.Subscribe(func(st session.Stream, p []byte) {
			switch st {
			case session.Input:
				rec.event("i", p) // typed input; secrets arrive masked
			case session.CommandStart: // markers: asciinema can jump to them
				rec.event("m", append([]byte("$ "), p...))
			case session.CommandEnd:
				rec.event("m", append([]byte("exit "), p...))
			case session.ScreenReset: // the screen changed without a byte
				rec.event("o", paint(s.Screen()))
			default:
				rec.event("o", onlcr(nil, p)) // what a terminal with ONLCR gets
			}
		})
		if in.CommandsRun > 0 {
			rec.event("o", paint(s.Screen()))
		}
	})
	return rec, nil
}

// event appends one [time, code, data] line; past the limit a last "m"
// (marker) event says the recording was cut.
func (rec *recording) event(code string, p []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.cut || rec.buf == nil {
		return
	}
	line, _ := json.Marshal([]any{time.Since(rec.start).Seconds(), code, string(p)})
	if rec.size+int64(len(line))+1 > rec.limit {
		rec.cut = true
		note, _ := json.Marshal([]any{time.Since(rec.start).Seconds(), "m", fmt.Sprintf("recording cut at its limit of %d bytes", rec.limit)})
		rec.lineLocked(note)
		_ = rec.buf.Flush()
		return
	}
	rec.lineLocked(line)
}

func (rec *recording) line(p []byte) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.lineLocked(p)
}

func (rec *recording) lineLocked(p []byte) {
	n, _ := rec.buf.Write(append(p, '\n'))
	rec.size += int64(n)
	if rec.buf.Buffered() > 16<<10 {
		_ = rec.buf.Flush()
	}
}

// recorderCtx marks the recorder's calls for the metrics and the audit log.
func recorderCtx(ctx context.Context) context.Context {
	return protocol.WithCaller(ctx, protocol.Caller{Transport: "recorder", Actor: "recorder"})
}

// resized records a change of the session's size (session.resize, which
// writes no byte): an "r" event with the new size, then the screen
// painted afresh, as the bytes before were laid out for the old size.
func (rec *recording) resized(s *session.Session) {
	rows, cols := s.Screen().Size()
	if rows == rec.rows && cols == rec.cols {
		return
	}
	rec.rows, rec.cols = rows, cols
	s.HoldOutput(func() {
		rec.event("r", []byte(strconv.Itoa(cols)+"x"+strconv.Itoa(rows)))
		rec.event("o", paint(s.Screen()))
	})
}

// transcript appends the commands that ended since the last look. The
// method table is asked with no lock held: exec.list looks at the
// terminal (is a command waiting for input) under the session's output
// lock, which the session holds while it hands output to rec.event.
func (rec *recording) transcript(ctx context.Context, api protocol.API) {
	rec.mu.Lock()
	if rec.buf != nil {
		_ = rec.buf.Flush()
	}
	closed := rec.cmds == nil
	rec.mu.Unlock()
	if closed {
		return
	}
	id := rec.cast.Name()
	id = filepath.Base(id[:len(id)-len(".cast")])
	list, err := api.ExecList(recorderCtx(ctx), protocol.ExecListParams{SessionID: id})
	if err != nil {
		return
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.cmds == nil {
		return
	}
	for _, c := range list.Commands {
		if c.State != "exited" || rec.written[c.ExecID] {
			continue
		}
		rec.written[c.ExecID] = true
		line, _ := json.Marshal(c)
		_, _ = rec.cmds.Write(append(line, '\n'))
	}
}

func (rec *recording) close() {
	if rec.unsub != nil {
		rec.unsub()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.buf != nil {
		_ = rec.buf.Flush()
		rec.buf = nil
	}
	rec.cast.Close()
	rec.cmds.Close()
	rec.cmds = nil
}

var castName = regexp.MustCompile(`^[A-Za-z0-9_.-]+\.cast$`)

// castTitlePrefix starts a recording's title; the session's name (its id
// when it has none) follows.
const castTitlePrefix = "trl session "

// recordingInfo is one recording in the console's list.
type recordingInfo struct {
	File      string `json:"name"` // the file, as /console/api/recordings/<name> serves it
	SessionID string `json:"session_id"`
	// SessionName is the session's name; empty when it had none.
	SessionName string `json:"session_name,omitempty"`
	// Started is when the recording began (the header's timestamp).
	Started  string `json:"started,omitempty"`
	Bytes    int64  `json:"bytes"`
	Modified string `json:"modified"`
}

// recordings lists the recordings the console can replay, newest first,
// each with its session's name and start time read from its header.
func (c *Console) recordings(w http.ResponseWriter, _ *http.Request) {
	out := []recordingInfo{}
	if c.opts.RecordDir != "" {
		entries, _ := os.ReadDir(c.opts.RecordDir)
		for _, e := range entries {
			if !castName.MatchString(e.Name()) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue
			}
			r := recordingInfo{File: e.Name(), SessionID: strings.TrimSuffix(e.Name(), ".cast"), Bytes: info.Size(),
				Modified: info.ModTime().UTC().Format(time.RFC3339)}
			if hdr, ok := readCastHeader(filepath.Join(c.opts.RecordDir, e.Name())); ok {
				if name, found := strings.CutPrefix(hdr.Title, castTitlePrefix); found && name != r.SessionID {
					r.SessionName = name
				}
				if hdr.Timestamp > 0 {
					r.Started = time.Unix(hdr.Timestamp, 0).UTC().Format(time.RFC3339)
				}
			}
			out = append(out, r)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Modified > out[j].Modified })
	}
	writeJSON(w, http.StatusOK, struct {
		Recordings []recordingInfo `json:"recordings"`
	}{out})
}

// readCastHeader reads a recording's first line (at most 8 KiB).
func readCastHeader(path string) (castHeader, bool) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return castHeader{}, false
	}
	defer f.Close()
	line, err := bufio.NewReaderSize(io.LimitReader(f, 8<<10), 8<<10).ReadSlice('\n')
	if err != nil {
		return castHeader{}, false
	}
	var h castHeader
	return h, json.Unmarshal(line, &h) == nil
}

// recording serves one asciicast file for the replay view.
func (c *Console) recording(w http.ResponseWriter, r *http.Request, name string) {
	if c.opts.RecordDir == "" || !castName.MatchString(name) {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such recording"})
		return
	}
	f, err := os.OpenFile(filepath.Join(c.opts.RecordDir, name), os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such recording"})
		return
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "no such recording"})
		return
	}
	w.Header().Set("Content-Type", "application/x-asciicast")
	http.ServeContent(w, r, name, info.ModTime(), f)
}
