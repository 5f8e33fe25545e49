package session

import "bytes"

// Observer receives every byte a session's terminal and stderr pipe
// produce, in arrival order, whether a command runs or not. It is called
// on the session's output path with the output lock held: it must copy
// what it keeps and never block.
type Observer func(stream Stream, p []byte)

// Subscribe adds f to the session's observers until cancel is called.
func (s *Session) Subscribe(f Observer) (cancel func()) { return s.obs.Add(f) }

// observe hands p to the screen, the idle log and the observers. Called
// with ioMu held.
func (s *Session) observe(stream Stream, p []byte) {
	if s.scr != nil {
		_, _ = s.scr.Write(p)
	}
	for _, f := range s.obs.Load() {
		(*f)(stream, p)
	}
}

// Input is the Stream observers see for what was typed on the terminal
// (WriteInput; a secret arrives masked, as one '*' per byte). It never
// reaches a command's output.
const Input Stream = 2

// CommandStart and CommandEnd are the Streams observers see at a
// command's boundaries, in order with the terminal's bytes: the bytes
// after CommandStart and before CommandEnd are that command's. With
// CommandStart p is the command's text; with CommandEnd it is the exit
// code in decimal. Neither is terminal output: an observer that draws
// the terminal must not draw them.
const (
	CommandStart Stream = 3
	CommandEnd   Stream = 4
)

// ScreenReset is the Stream observers see (p empty) when the screen model
// changed without a byte: a program killed on the alternate screen (vi at
// its timeout) never wrote the sequence that leaves it, and the model
// left it before the next command. An observer that draws the terminal
// must redraw it from Screen.
const ScreenReset Stream = 5

// Resized is the Stream observers see when the terminal's size was set
// (session.resize, which writes no byte); p is the new size as
// COLSxROWS, as an asciicast "r" event has it. The screen model has the
// new size already.
const Resized Stream = 6

// announce hands a command boundary to the observers. Called with ioMu
// held, so it falls between the bytes before and after it.
func (s *Session) announce(kind Stream, p []byte) {
	for _, f := range s.obs.Load() {
		(*f)(kind, p)
	}
}

// observeInput hands typed input to the observers (a recording's "i"
// events). Secrets are masked here, before any observer sees them.
func (s *Session) observeInput(p []byte, secret bool) {
	l := s.obs.Load()
	if l == nil {
		return
	}
	if secret {
		p = bytes.Repeat([]byte{'*'}, len(p))
	}
	for _, f := range l {
		(*f)(Input, p)
	}
}

// HoldOutput runs f while no output is handed over: the screen holds
// every byte observers were given before f and none they will be given
// after. A viewer subscribes and paints the screen inside it, so no byte
// is drawn twice or lost between the painted screen and the stream that
// follows. f must be quick and must not write to the session; it runs
// with the output path stopped.
func (s *Session) HoldOutput(f func()) {
	s.ioMu.Lock()
	defer s.ioMu.Unlock()
	f()
}
