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

func (rt *Runtime) sessionScreen(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.SessionScreenParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	if p.Format != "" && p.Format != "text" && p.Format != "ansi" {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "format must be \"text\" or \"ansi\", got %q", clip(p.Format, 32))
	}
	if p.ScrollbackLines < 0 || p.ScrollbackLines > maxScrollback {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "scrollback_lines must be between 0 and %d", maxScrollback)
	}
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return nil, err
	}
	snap := s.Screen().Snapshot(screen.SnapshotOptions{ScrollbackLines: p.ScrollbackLines, Format: p.Format})
	return &protocol.Reply{Data: wireScreen(snap)}, nil
}

// wireScreen is a snapshot as the protocol carries it.
func wireScreen(s screen.Snapshot) protocol.Screen {
	return protocol.Screen{
		Rows: s.Rows, Cols: s.Cols, Lines: s.Lines,
		Cursor:    protocol.ScreenCursor{Row: s.Cursor.Row, Col: s.Cursor.Col, Visible: s.Cursor.Visible},
		AltScreen: s.AltScreen, Title: s.Title,
	}
}

func (rt *Runtime) sessionResize(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.SessionResizeParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	if p.Rows == nil || p.Cols == nil {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "rows and cols are required, e.g. {\"rows\": 40, \"cols\": 120}")
	}
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return nil, err
	}
	if err := s.Resize(*p.Rows, *p.Cols); err != nil {
		return nil, err
	}
	return &protocol.Reply{Data: info(s)}, nil
}

func (rt *Runtime) sessionOutput(_ context.Context, call *protocol.Call) (*protocol.Reply, error) {
	var p protocol.SessionOutputParams
	if err := protocol.DecodeParams(call.Params, &p); err != nil {
		return nil, err
	}
	if p.Offset < 0 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "offset must not be negative")
	}
	if p.Limit == 0 {
		p.Limit = 64 << 10
	}
	if p.Limit < 0 || p.Limit > 1<<20 {
		return nil, protocol.Errorf(protocol.CodeInvalidParams, "limit must be between 1 and %d bytes", 1<<20)
	}
	if err := checkRender(p.Render); err != nil {
		return nil, err
	}
	s, err := rt.lookup(p.SessionID)
	if err != nil {
		return nil, err
	}
	c := s.Output(p.Offset, p.Limit)
	data, _ := renderOutput(p.Render, c.Data)
	return &protocol.Reply{Data: protocol.SessionOutput{
		SessionID: s.ID(), Data: data, Offset: c.Offset, Next: c.Next, LostBytes: c.Lost,
	}}, nil
}
