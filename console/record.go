package console

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/runtime"
	"github.com/trl-project/trl/session"
)

// DefaultRecordLimit bounds one session's recording; past it the file
// ends with a note that says so.
const DefaultRecordLimit = 64 << 20

// Recorder writes, for every session, an asciicast v2 file of its
// terminal (<session>.cast: `asciinema play` replays it) and its commands
// as JSON lines (<session>.commands.jsonl: each the console transcript's
// entry, with its output), each bounded in size. It is told of each
// session as the session is created, before any request reaches it, and
// of each command as it ends: nothing is polled, so a session that lives
// for a moment is recorded whole.
type Recorder struct {
	dir   string
	limit int64
	src   Source
	log   zerolog.Logger

	mu      sync.Mutex
	recs    map[string]*recording
	stopped bool
	keepers sync.WaitGroup // one keep per recording
}

// Source is what the recorder records: the runtime.
type Source interface {
	// SessionList and Session find the sessions live when Run starts.
	SessionList(ctx context.Context, p protocol.SessionListParams) (protocol.SessionListResult, error)
	Session(ref string) (*session.Session, error)
	// OnSessionCreate calls f with each new session before any request
	// reaches it.
	OnSessionCreate(f func(*session.Session)) (remove func())
	// OnCommandEnd calls f as each command ends; f must not block.
	OnCommandEnd(f func(runtime.CommandEnd)) (remove func())
}

// NewRecorder records into dir (made 0700 if missing).
func NewRecorder(dir string, limit int64, src Source, log zerolog.Logger) (*Recorder, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("recordings directory: %w", err)
	}
	if limit <= 0 {
		limit = DefaultRecordLimit
	}
	return &Recorder{dir: dir, limit: limit, src: src, log: log, recs: map[string]*recording{}}, nil
}

// Run records every session created from now on, and those already
// live, until ctx ends; then it writes the rows of the commands that
// ended and closes every file.
func (r *Recorder) Run(ctx context.Context) {
	removeCreate := r.src.OnSessionCreate(func(s *session.Session) { r.record(ctx, s) })
	removeEnd := r.src.OnCommandEnd(r.commandEnded)
	if list, err := r.src.SessionList(recorderCtx(ctx), protocol.SessionListParams{}); err == nil {
		for _, in := range list.Sessions {
			if in.State == "exited" {
				continue
			}
			if s, err := r.src.Session(in.SessionID); err == nil {
				r.record(ctx, s)
			}
		}
	}
	<-ctx.Done()
	removeCreate()
	removeEnd()
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.keepers.Wait()
}

// record starts s's recording unless it has one, and its keep.
func (r *Recorder) record(ctx context.Context, s *session.Session) {
	id := s.ID()
	r.mu.Lock()
	if r.stopped || r.recs[id] != nil {
		r.mu.Unlock()
		return
	}
	rec := &recording{id: id, wake: make(chan struct{}, 1)}
	r.recs[id] = rec // claimed: a second record of s stops above
	r.keepers.Add(1) // under mu, so a stopping Run waits for it
	r.mu.Unlock()
	if err := r.start(s, rec); err != nil {
		r.log.Warn().Err(err).Str("session", id).Msg("recording not started")
		r.mu.Lock()
		delete(r.recs, id)
		r.mu.Unlock()
		r.keepers.Done()
		return
	}
	go r.keep(ctx, s, rec)
}

// commandEnded hands an ended command to its session's keep.
func (r *Recorder) commandEnded(e runtime.CommandEnd) {
	r.mu.Lock()
	rec := r.recs[e.Summary.SessionID]
	r.mu.Unlock()
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.ended = append(rec.ended, e)
	if e.Ran {
		rec.ranEnded++
	}
	rec.mu.Unlock()
	select {
	case rec.wake <- struct{}{}:
	default: // a wake is pending: it writes every row due
	}
}

// keep owns a recording's commands file, from the session's start until
// it ends (or the recorder stops): each command that ends is written as
// one row. A session that ends takes its running command with it; the
// end of that command comes after the session's (a command that ended
// the shell, such as `exit 3`, may even be registered after it), and is
// waited for, up to endedWait. A recorder that stops waits for nothing.
func (r *Recorder) keep(ctx context.Context, s *session.Session, rec *recording) {
	defer r.keepers.Done()
	for {
		select {
		case <-rec.wake:
			r.writeRows(ctx, rec)
			continue
		case <-s.Ended():
			r.awaitLast(ctx, rec)
		case <-ctx.Done():
		}
		break
	}
	// The last rows are written with the recorder's context ended too.
	r.writeRows(context.WithoutCancel(ctx), rec)
	r.mu.Lock()
	delete(r.recs, rec.id)
	r.mu.Unlock()
	rec.close()
}

// awaitLast writes rows until every command the recording saw start has
// ended, for at most endedWait.
func (r *Recorder) awaitLast(ctx context.Context, rec *recording) {
	t := time.NewTimer(endedWait)
	defer t.Stop()
	for {
		rec.mu.Lock()
		done := rec.ranEnded >= rec.starts
		rec.mu.Unlock()
		if done {
			return
		}
		select {
		case <-rec.wake:
			r.writeRows(ctx, rec)
		case <-t.C:
			r.log.Warn().Str("session", rec.id).Msg("recording closed before its last command's end was told")
			return
		case <-ctx.Done():
			return
		}
	}
}

// writeRows writes a row for each command that ended since the last: the
// console transcript's entry, output included. The output is read with
// no lock held.
func (r *Recorder) writeRows(ctx context.Context, rec *recording) {
	rec.mu.Lock()
	ended := rec.ended
	rec.ended = nil
	rec.mu.Unlock()
	for _, e := range ended {
		line, _ := json.Marshal(transcriptEntryOf(recorderCtx(ctx), e.Summary, e.Read))
		_, _ = rec.cmds.Write(append(line, '\n'))
	}
}

// recording is one session's two files.
type recording struct {
	id    string
	wake  chan struct{} // a command ended
	unsub func()
	cmds  *os.File // the rows; keep's alone once start has returned

	mu sync.Mutex
	// ended are the commands that ended and have no row yet; starts and
	// ranEnded count the commands seen to start and, of those that ran,
	// to end.
	ended    []runtime.CommandEnd
	starts   int
	ranEnded int

	start time.Time
	cast  *os.File
	buf   *bufio.Writer
	size  int64
	limit int64
	cut   bool
	// flushing is armed while events wait in buf: a recording read while
	// its session runs (the console replays it) lags by flushDelay at most.
	flushing *time.Timer
}

// flushDelay is how long an event may wait in a recording's buffer.
const flushDelay = 100 * time.Millisecond

type castHeader struct {
	Version   int               `json:"version"`
	Width     int               `json:"width"`
	Height    int               `json:"height"`
	Timestamp int64             `json:"timestamp"`
	Title     string            `json:"title,omitempty"`
	Env       map[string]string `json:"env,omitempty"`
}

// start opens rec's files and subscribes it to s's terminal.
func (r *Recorder) start(s *session.Session, rec *recording) error {
	open := func(name string) (*os.File, error) {
		return os.OpenFile(filepath.Join(r.dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC|syscall.O_NOFOLLOW, 0o600)
	}
	cast, err := open(rec.id + ".cast")
	if err != nil {
		return err
	}
	cmds, err := open(rec.id + ".commands.jsonl")
	if err != nil {
		cast.Close()
		return err
	}
	in := s.Info()
	rows, cols := s.Screen().Size()
	rec.start, rec.limit = time.Now(), r.limit
	rec.cast, rec.buf, rec.cmds = cast, bufio.NewWriterSize(cast, 32<<10), cmds
	hdr, _ := json.Marshal(castHeader{Version: 2, Width: cols, Height: rows, Timestamp: rec.start.Unix(),
		Title: castTitlePrefix + cmp.Or(in.Name, in.ID), Env: map[string]string{"SHELL": in.Shell, "TERM": "xterm-256color"}})
	rec.line(hdr)
	// A session recorded from its creation has shown nothing yet; one
	// live when the recorder started begins as its painted screen.
	s.HoldOutput(func() {
		rec.unsub = s.Subscribe(func(st session.Stream, p []byte) {
			switch st {
			case session.Input:
				rec.event("i", p) // typed input; secrets arrive masked
			case session.CommandStart: // markers: asciinema can jump to them
				rec.event("m", append([]byte("$ "), p...))
				rec.mu.Lock()
				rec.starts++
				rec.mu.Unlock()
			case session.CommandEnd:
				rec.event("m", append([]byte("exit "), p...))
			case session.ScreenReset: // the screen changed without a byte
				rec.event("o", paint(s.Screen()))
			case session.Resized:
				// The bytes before were laid out for the old size: the
				// screen is painted afresh.
				rec.event("r", p)
				rec.event("o", paint(s.Screen()))
			default:
				rec.event("o", onlcr(nil, p)) // what a terminal with ONLCR gets
			}
		})
		if in.CommandsRun > 0 {
			rec.event("o", paint(s.Screen()))
		}
	})
	return nil
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
	switch {
	case rec.buf.Buffered() > 16<<10:
		_ = rec.buf.Flush()
	case rec.flushing == nil:
		rec.flushing = time.AfterFunc(flushDelay, rec.flush)
	}
}

// flush writes out what waits in the buffer.
func (rec *recording) flush() {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	rec.flushing = nil
	if rec.buf != nil {
		_ = rec.buf.Flush()
	}
}

// recorderCtx marks the recorder's calls for the metrics and the audit log.
func recorderCtx(ctx context.Context) context.Context {
	return protocol.WithCaller(ctx, protocol.Caller{Transport: "recorder", Actor: "recorder"})
}

// endedWait bounds how long the rows of an ended session wait for the
// end of the command it was running.
const endedWait = 10 * time.Second

func (rec *recording) close() {
	if rec.unsub != nil {
		rec.unsub()
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.flushing != nil {
		rec.flushing.Stop() // one that fired finds buf gone
	}
	if rec.buf != nil {
		_ = rec.buf.Flush()
		rec.buf = nil
	}
	rec.cast.Close()
	rec.cmds.Close()
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
