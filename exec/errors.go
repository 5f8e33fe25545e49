package exec

import (
	"errors"
	"fmt"
)

// Errors the method table maps to wire codes: the kinds of Error.
var (
	ErrInvalid        = errors.New("invalid command parameters")
	ErrStreamNotFound = errors.New("stream not found")
	ErrLimit          = errors.New("limit reached")
)

// Error is an error of this package a client may see: Kind is one of the
// sentinels above (errors.Is finds it); Error() is the message for a
// person, without the kind's own text.
type Error struct {
	Kind error
	Msg  string
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the kind.
func (e *Error) Unwrap() error { return e.Kind }

func errorf(kind error, format string, args ...any) error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
