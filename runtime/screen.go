package runtime

import (
	"context"

	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/render"
	"github.com/trl-project/trl/screen"
)

// renderOutput applies a request's render option to output bytes: "raw"
// or "" keeps them, "text" gives them as a reader sees them (SPEC §9).
// Every method with a render option goes through here.
func renderOutput(mode string, b []byte) (string, error) {
	switch mode {
	case "", "raw":
		// No copy: every caller passes bytes made for this answer alone,
		// never written again.
		return bytesView(b), nil
	case "text":
		return render.Text(b), nil
	}
	return "", protocol.Errorf(protocol.CodeInvalidParams, "render must be \"raw\" or \"text\", got %q", clip(mode, 32))
}

// checkRender validates a render option before any work is done.
func checkRender(mode string) error {
	_, err := renderOutput(mode, nil)
	return err
}

// maxScrollback bounds scrollback_lines: more than any screen keeps.
const maxScrollback = 100000

// SessionScreen is the typed sessionScreen.
func (rt *Runtime) SessionScreen(ctx context.Context, p protocol.SessionScreenParams) (protocol.Screen, error) {
	return serve(rt, ctx, protocol.MethodSessionScreen, func() (protocol.Screen, error) { return rt.sessionScreen(ctx, p) })
}

func (rt *Runtime) sessionScreen(ctx context.Context, p protocol.SessionScreenParams) (protocol.Screen, error) {
	if p.Format != "" && p.Format != "text" && p.Format != "ansi" {
		return protocol.Screen{}, protocol.Errorf(protocol.CodeInvalidParams, "format must be \"text\" or \"ansi\", got %q", clip(p.Format, 32))
	}
	if p.ScrollbackLines < 0 || p.ScrollbackLines > maxScrollback {
		return protocol.Screen{}, protocol.Errorf(protocol.CodeInvalidParams, "scrollback_lines must be between 0 and %d", maxScrollback)
	}
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return protocol.Screen{}, err
	}
	snap := s.Screen().Snapshot(screen.SnapshotOptions{ScrollbackLines: p.ScrollbackLines, Format: p.Format})
	return wireScreen(snap), nil
}

// wireScreen is a snapshot as the protocol carries it.
func wireScreen(s screen.Snapshot) protocol.Screen {
	return protocol.Screen{
		Rows: s.Rows, Cols: s.Cols, Lines: s.Lines,
		Cursor:    protocol.ScreenCursor{Row: s.Cursor.Row, Col: s.Cursor.Col, Visible: s.Cursor.Visible},
		AltScreen: s.AltScreen, Title: s.Title,
	}
}

// SessionResize is the typed sessionResize.
func (rt *Runtime) SessionResize(ctx context.Context, p protocol.SessionResizeParams) (protocol.SessionInfo, error) {
	return serve(rt, ctx, protocol.MethodSessionResize, func() (protocol.SessionInfo, error) { return rt.sessionResize(ctx, p) })
}

func (rt *Runtime) sessionResize(ctx context.Context, p protocol.SessionResizeParams) (protocol.SessionInfo, error) {
	if p.Rows == nil || p.Cols == nil {
		return protocol.SessionInfo{}, protocol.Errorf(protocol.CodeInvalidParams, "rows and cols are required, e.g. {\"rows\": 40, \"cols\": 120}")
	}
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return protocol.SessionInfo{}, err
	}
	if err := s.Resize(*p.Rows, *p.Cols); err != nil {
		return protocol.SessionInfo{}, err
	}
	return rt.info(s), nil
}

// SessionOutput is the typed sessionOutput.
func (rt *Runtime) SessionOutput(ctx context.Context, p protocol.SessionOutputParams) (protocol.SessionOutput, error) {
	return serve(rt, ctx, protocol.MethodSessionOutput, func() (protocol.SessionOutput, error) { return rt.sessionOutput(ctx, p) })
}

func (rt *Runtime) sessionOutput(ctx context.Context, p protocol.SessionOutputParams) (protocol.SessionOutput, error) {
	if p.Offset < 0 {
		return protocol.SessionOutput{}, protocol.Errorf(protocol.CodeInvalidParams, "offset must not be negative")
	}
	if p.Limit == 0 {
		p.Limit = 64 << 10
	}
	if p.Limit < 0 || p.Limit > 1<<20 {
		return protocol.SessionOutput{}, protocol.Errorf(protocol.CodeInvalidParams, "limit must be between 1 and %d bytes", 1<<20)
	}
	if err := checkRender(p.Render); err != nil {
		return protocol.SessionOutput{}, err
	}
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return protocol.SessionOutput{}, err
	}
	c := s.Output(p.Offset, p.Limit)
	data, _ := renderOutput(p.Render, c.Data)
	return protocol.SessionOutput{
		SessionID: s.ID(), Data: data, Offset: c.Offset, Next: c.Next, LostBytes: c.Lost,
	}, nil
}
