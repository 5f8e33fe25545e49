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

// queue is a viewer's bounded queue of terminal bytes, carriage returns
// added (onlcr). The session's output path pushes (never blocking); the
// viewer's writer pops.
type queue struct {
	mu     sync.Mutex
	chunks [][]byte
	bytes  int
	behind bool // chunks were dropped: repaint from the screen
	wake   chan struct{}
	lim    viewerLimits
}

func (q *queue) push(p []byte) {
	q.mu.Lock()
	if q.behind || len(q.chunks) >= q.lim.chunks || q.bytes+len(p) > q.lim.bytes {
		q.behind = true
		q.chunks, q.bytes = nil, 0
	} else {
		c := onlcr(make([]byte, 0, len(p)+len(p)/16), p)
		q.chunks = append(q.chunks, c)
		q.bytes += len(c)
	}
	q.mu.Unlock()
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop takes what is queued, and whether the viewer fell behind.
func (q *queue) pop() (chunks [][]byte, behind bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	chunks, behind = q.chunks, q.behind
	q.chunks, q.bytes, q.behind = nil, 0, false
	return chunks, behind
}

// control is a text frame: the console's JSON control messages.
type control struct {
	Type      string `json:"type"`
	SessionID string `json:"session_id,omitempty"`
	Rows      int    `json:"rows,omitempty"`
	Cols      int    `json:"cols,omitempty"`
	Write     bool   `json:"write,omitempty"`
	Data      string `json:"data,omitempty"`
	Message   string `json:"message,omitempty"`
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
	conn.SetReadLimit(maxInputFrame)
	metrics.Get().ConsoleViewers(1)
	defer metrics.Get().ConsoleViewers(-1)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	q := &queue{wake: make(chan struct{}, 1), lim: c.viewer}
	var unsubscribe func()
	var first []byte
	s.HoldOutput(func() {
		unsubscribe = s.Subscribe(func(st session.Stream, p []byte) {
			if st != session.Input { // the terminal echoes what it shows
				q.push(p)
			}
		})
		first = paint(s.Screen())
	})
	defer unsubscribe()

	rows, cols := s.Screen().Size()
	hello, _ := json.Marshal(control{Type: "hello", SessionID: s.ID(), Rows: rows, Cols: cols, Write: c.opts.Write})
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
	defer wg.Wait()

	for {
		select {
		case <-ctx.Done():
			conn.Close(websocket.StatusNormalClosure, "")
			return
		case <-q.wake:
		}
		chunks, behind := q.pop()
		if behind {
			// What was queued since is in the screen already.
			var repaint []byte
			s.HoldOutput(func() { q.pop(); repaint = paint(s.Screen()) })
			if err := c.send(ctx, conn, websocket.MessageBinary, repaint); err != nil {
				return
			}
			continue
		}
		for _, p := range chunks {
			if err := c.send(ctx, conn, websocket.MessageBinary, p); err != nil {
				return
			}
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
		err = s.WriteInput([]byte(m.Data))
		c.opts.Audit.Info().Str("event", "input").Str("actor", "console").Str("session", s.ID()).
			Int("bytes", len(m.Data)).Bool("ok", err == nil).Msg("input")
	}
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
