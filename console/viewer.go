package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"
	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/screen"
	"github.com/trl-project/trl/session"
)

// viewerLimits bound what one browser may hold up: a viewer whose queue
// is full is dropped behind and repainted from the screen.
type viewerLimits struct {
	chunks int           // queued chunks
	bytes  int           // queued bytes
	write  time.Duration // one frame's write
}

var defaultViewerLimits = viewerLimits{chunks: 256, bytes: 1 << 20, write: 10 * time.Second}

// maxInputFrame bounds one frame of typed input.
const maxInputFrame = 64 << 10

// queue is a viewer's bounded queue of frames: terminal bytes (carriage
// returns added, see onlcr) and command boundaries. The session's output
// path pushes (never blocking); the viewer's writer pops.
type queue struct {
	mu     sync.Mutex
	frames []frame
	bytes  int
	behind bool // terminal bytes were dropped: repaint from the screen
	wake   chan struct{}
	lim    viewerLimits
}

// frame is one WebSocket message: terminal bytes, or (text) a control
// message.
type frame struct {
	text bool
	p    []byte
}

// maxKeptControls bounds the boundaries a viewer that fell behind keeps.
const maxKeptControls = 64

func (q *queue) push(p []byte) {
	q.mu.Lock()
	if q.behind || len(q.frames) >= q.lim.chunks || q.bytes+len(p) > q.lim.bytes {
		q.fallBehindLocked()
	} else {
		c := onlcr(make([]byte, 0, len(p)+len(p)/16), p)
		q.frames = append(q.frames, frame{p: c})
		q.bytes += len(c)
	}
	q.mu.Unlock()
	q.signal()
}

// redraw drops the queued bytes: the viewer is repainted from the
// screen, which changed without a byte (session.ScreenReset).
func (q *queue) redraw() {
	q.mu.Lock()
	q.fallBehindLocked()
	q.mu.Unlock()
	q.signal()
}

// fallBehindLocked drops the queued bytes (the viewer is repainted from
// the screen); the command boundaries are kept, as the page's list of
// commands needs them.
func (q *queue) fallBehindLocked() {
	q.behind = true
	kept := q.frames[:0]
	for _, f := range q.frames {
		if f.text && len(kept) < maxKeptControls {
			kept = append(kept, f)
		}
	}
	q.frames, q.bytes = kept, 0
}

// pushControl queues a control message (a command boundary).
func (q *queue) pushControl(p []byte) {
	q.mu.Lock()
	if len(q.frames) < q.lim.chunks+maxKeptControls {
		q.frames = append(q.frames, frame{text: true, p: p})
	}
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop takes what is queued, and whether the viewer fell behind.
func (q *queue) pop() (frames []frame, behind bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	frames, behind = q.frames, q.behind
	q.frames, q.bytes, q.behind = nil, 0, false
	return frames, behind
}

// control is a text frame: the console's JSON control messages.
type control struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id,omitempty"`
	Name      string `json:"name,omitempty"`
	Rows      int    `json:"rows,omitempty"`
	Cols      int    `json:"cols,omitempty"`
	Write     bool   `json:"write,omitempty"`
	Data      string `json:"data,omitempty"`
	Message   string `json:"message,omitempty"`
	// Command and ExitCode are a command boundary's ("command-start",
	// "command-end"): the bytes between the two are the command's.
	Command  string `json:"command,omitempty"`
	ExitCode *int   `json:"exit_code,omitempty"`
	Duration string `json:"duration,omitempty"`
}

// serveViewer is one browser watching one session: binary frames carry
// terminal bytes, text frames JSON control. It starts from the screen and
// follows the output.
func (c *Console) serveViewer(w http.ResponseWriter, r *http.Request) {
	s, err := c.opts.Sessions.Session(r.URL.Query().Get("session"))
	if err != nil {
		writeError(w, err)
		return
	}
	// Accept checks that Origin is this host (cross-origin → 403).
	conn, err := websocket.Accept(w, r, nil)
	if err != nil {
		c.opts.Logger.Warn().Err(err).Str("remote", r.RemoteAddr).Msg("console: refused a viewer")
		return
	}
	// Every way out closes the connection: a viewer that left before its
	// first frames were written kept its socket for the daemon's life.
	defer conn.CloseNow()
	conn.SetReadLimit(maxInputFrame)
	metrics.Get().ConsoleViewers(1)
	defer metrics.Get().ConsoleViewers(-1)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	q := &queue{wake: make(chan struct{}, 1), lim: c.viewer}
	var unsubscribe func()
	var first []byte
	s.HoldOutput(func() {
		var started time.Time // observers are called one at a time
		unsubscribe = s.Subscribe(func(st session.Stream, p []byte) {
			switch st {
			case session.Stdout, session.Stderr:
				q.push(p)
			case session.CommandStart:
				started = time.Now()
				q.pushControl(boundary(st, p, 0))
			case session.ScreenReset:
				q.redraw()
			case session.CommandEnd:
				var took time.Duration
				if !started.IsZero() {
					took = time.Since(started)
				}
				q.pushControl(boundary(st, p, took))
			}
			// Input is not drawn: the terminal echoes what it shows.
		})
		first = paint(s.Screen())
	})
	defer unsubscribe()

	rows, cols := s.Screen().Size()
	hello, _ := json.Marshal(control{Type: "hello", SessionID: s.ID(), Name: s.Name(), Rows: rows, Cols: cols, Write: c.opts.Write})
	if err := c.send(ctx, conn, websocket.MessageText, hello); err != nil {
		return
	}
	if err := c.send(ctx, conn, websocket.MessageBinary, first); err != nil {
		return
	}

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		c.readInput(ctx, conn, s)
	}()
	defer func() {
		cancel()
		conn.CloseNow() // ends readInput's read, whatever ended the loop
		wg.Wait()
	}()

	// A resize (session.resize) sends no byte: the size is looked at on
	// every wake and every second.
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	ended := false
	for {
		select {
		case <-ctx.Done():
			conn.Close(websocket.StatusNormalClosure, "")
			return
		case <-s.Ended():
			// The shell's last bytes are delivered once it is reaped;
			// they are sent before the viewer is told.
			select {
			case <-s.Reaped():
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			ended = true
		case <-q.wake:
		case <-tick.C:
		}
		frames, behind := q.pop()
		if r, c := s.Screen().Size(); r != rows || c != cols {
			// The page's terminal takes the new size and is repainted:
			// what it held was laid out for the old one.
			rows, cols = r, c
			msg, _ := json.Marshal(control{Type: "resize", Rows: rows, Cols: cols})
			frames = append(frames, frame{text: true, p: msg})
			behind = true
		}
		if behind {
			// The boundaries kept go first; bytes queued since are in
			// the screen already, boundaries queued since follow.
			var repaint []byte
			s.HoldOutput(func() {
				more, _ := q.pop()
				repaint = paint(s.Screen())
				for _, f := range more {
					if f.text {
						frames = append(frames, f)
					}
				}
			})
			frames = append(frames, frame{p: repaint})
		}
		for _, f := range frames {
			typ := websocket.MessageBinary
			if f.text {
				typ = websocket.MessageText
			}
			if err := c.send(ctx, conn, typ, f.p); err != nil {
				return
			}
		}
		if ended {
			msg, _ := json.Marshal(control{Type: "ended", Message: "session ended: " + s.Info().EndCause})
			if c.send(ctx, conn, websocket.MessageText, msg) == nil {
				conn.Close(websocket.StatusNormalClosure, "session ended")
			}
			return
		}
	}
}

func (c *Console) send(ctx context.Context, conn *websocket.Conn, typ websocket.MessageType, p []byte) error {
	wctx, cancel := context.WithTimeout(ctx, c.viewer.write)
	defer cancel()
	return conn.Write(wctx, typ, p)
}

// readInput takes the viewer's text frames: typed input when the console
// may write, audited as actor "console".
func (c *Console) readInput(ctx context.Context, conn *websocket.Conn, s *session.Session) {
	for {
		typ, p, err := conn.Read(ctx)
		if err != nil {
			return
		}
		if typ != websocket.MessageText {
			continue
		}
		var m control
		if json.Unmarshal(p, &m) != nil || m.Type != "input" {
			continue
		}
		if !c.opts.Write {
			msg, _ := json.Marshal(control{Type: "error", Message: "this console is read-only; start the daemon with --console-write to type"})
			_ = c.send(ctx, conn, websocket.MessageText, msg)
			continue
		}
		// Through the runtime: at a password prompt what is typed is a
		// secret (masked in the output and in recordings' "i" events);
		// the runtime audits it as actor "console".
		tctx := protocol.WithCaller(ctx, protocol.Caller{Transport: "console", Actor: "console"})
		if err := c.opts.Sessions.TypeInto(tctx, s.ID(), []byte(m.Data)); err != nil {
			msg, _ := json.Marshal(control{Type: "error", Message: protocol.AsError(err).Message})
			_ = c.send(ctx, conn, websocket.MessageText, msg)
		}
	}
}

// boundary is the control message for a command's start or end.
func boundary(st session.Stream, p []byte, took time.Duration) []byte {
	m := control{Type: "command-start", Command: string(p)}
	if st == session.CommandEnd {
		code, _ := strconv.Atoi(string(p))
		m = control{Type: "command-end", ExitCode: &code}
		if took > 0 {
			m.Duration = humanDuration(took)
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// paint is the bytes that draw the screen as it is now on a fresh
// terminal: the main screen (its lines with their attributes, the
// cursor), and when a program such as vi has the alternate screen on,
// that screen over it, so that leaving it shows what was there before.
func paint(scr *screen.Screen) []byte {
	snap := scr.Snapshot(screen.SnapshotOptions{Format: "ansi"})
	var b strings.Builder
	b.WriteString("\x1b[?1049l\x1b[?25h\x1b[r")
	if snap.AltScreen {
		paintLines(&b, scr.Snapshot(screen.SnapshotOptions{Format: "ansi", MainScreen: true}))
		b.WriteString("\x1b[?1049h")
	}
	paintLines(&b, snap)
	return []byte(b.String())
}

func paintLines(b *strings.Builder, snap screen.Snapshot) {
	b.WriteString("\x1b[H\x1b[2J\x1b[0m")
	for i, l := range snap.Lines {
		if i > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString(l)
		b.WriteString("\x1b[0m")
	}
	b.WriteString("\x1b[" + strconv.Itoa(snap.Cursor.Row+1) + ";" + strconv.Itoa(snap.Cursor.Col+1) + "H")
	if !snap.Cursor.Visible {
		b.WriteString("\x1b[?25l")
	}
}
