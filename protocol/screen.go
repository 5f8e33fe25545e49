package protocol

// The screen methods (SPEC §9).
const (
	MethodSessionScreen = "session.screen"
	MethodSessionResize = "session.resize"
	MethodSessionOutput = "session.output"
)

// SessionScreenParams are session.screen's parameters: ScrollbackLines
// lines of history before the screen's rows (0: none), Format "text"
// (the default) or "ansi".
type SessionScreenParams struct {
	SessionID       string `json:"session_id"`
	ScrollbackLines int    `json:"scrollback_lines"`
	Format          string `json:"format"`
}

// ScreenCursor is the cursor: 0-based, Row counted from the screen's top
// row; Col equals Cols right after the last column was written.
type ScreenCursor struct {
	Row     int  `json:"row"`
	Col     int  `json:"col"`
	Visible bool `json:"visible"`
}

// Screen is session.screen's result, and the screen a status carries.
type Screen struct {
	Rows      int          `json:"rows"`
	Cols      int          `json:"cols"`
	Lines     []string     `json:"lines"`
	Cursor    ScreenCursor `json:"cursor"`
	AltScreen bool         `json:"alt_screen"`
	Title     string       `json:"title"`
}

// SessionResizeParams are session.resize's parameters.
type SessionResizeParams struct {
	SessionID string `json:"session_id"`
	Rows      *int   `json:"rows"`
	Cols      *int   `json:"cols"`
}

// SessionOutputParams are session.output's parameters: the log of output
// written while no command ran, from Offset (bytes since the session
// started), at most Limit bytes (0: 64 KiB).
type SessionOutputParams struct {
	SessionID string `json:"session_id"`
	Offset    int64  `json:"offset"`
	Limit     int    `json:"limit"`
	Render    string `json:"render"`
}

// SessionOutput is session.output's result. LostBytes are bytes between
// the asked offset and Offset that the bounded log no longer holds; Next
// is the offset to read from next.
type SessionOutput struct {
	SessionID string `json:"session_id"`
	Data      string `json:"data"`
	Offset    int64  `json:"offset"`
	Next      int64  `json:"next"`
	LostBytes int64  `json:"lost_bytes"`
}
