package session

import (
	"errors"
	"fmt"
)

// Errors the method table maps to wire codes: the kinds of Error.
var (
	ErrNotFound  = errors.New("session not found")
	ErrBusy      = errors.New("session is busy")
	ErrExited    = errors.New("session has exited")
	ErrNameTaken = errors.New("session name is taken")
	ErrLimit     = errors.New("session limit reached")
	ErrInvalid   = errors.New("invalid session parameters")
	// ErrNotShell: the program given as the shell did not behave as one
	// (it exited during start-up, or printed no prompt record).
	ErrNotShell = errors.New("not a shell")
	// ErrStart: a shell could not be started for a reason of the
	// daemon's (no free uid, a known shell that did not come up in
	// time, a failed fork).
	ErrStart        = errors.New("shell did not start")
	ErrShuttingDown = errors.New("daemon is shutting down")
)

// Error is an error a client may see, of this package or of exec: Kind is
// one of the sentinels (errors.Is finds it) and says which wire code it
// gets; Error() is the message for a person, without the kind's own text.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind.
func (e *Error) Unwrap() error { return e.Kind }

// errorf returns an *Error of kind with a formatted message.
func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
