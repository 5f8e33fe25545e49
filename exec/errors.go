package exec

import (
	"errors"
	"fmt"

	"github.com/trl-project/trl/session"
)

// Errors the method table maps to wire codes. They are the kinds of the
// errors this package returns, which are session.Error values: errors.Is
// finds the kind, and the message is written for a person.
var (
	ErrInvalid        = errors.New("invalid command parameters")
	ErrStreamNotFound = errors.New("stream not found")
	ErrLimit          = errors.New("limit reached")
)

func errorf(kind error, format string, args ...any) error {
	return &session.Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
