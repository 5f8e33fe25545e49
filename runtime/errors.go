package runtime

import (
	"errors"
	"strings"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// wireError maps a domain error to the error a client sees. It is the only
// place where package errors meet wire codes.
func wireError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	code := protocol.CodeInternal
	switch {
	case errors.Is(err, session.ErrNotFound), errors.Is(err, exec.ErrStreamNotFound):
		if errors.Is(err, exec.ErrStreamNotFound) {
			code = protocol.CodeStreamNotFound
		} else {
			code = protocol.CodeSessionNotFound
		}
	case errors.Is(err, session.ErrBusy):
		code = protocol.CodeSessionBusy
	case errors.Is(err, session.ErrExited):
		code = protocol.CodeSessionExited
	case errors.Is(err, session.ErrLimit), errors.Is(err, exec.ErrLimit):
		code = protocol.CodeLimitExceeded
	case errors.Is(err, session.ErrInvalid), errors.Is(err, session.ErrNameTaken), errors.Is(err, exec.ErrInvalid):
		code = protocol.CodeInvalidParams
	case errors.Is(err, session.ErrShuttingDown):
		code = protocol.CodeShuttingDown
	case errors.Is(err, session.ErrStart):
		code = protocol.CodeInvalidParams
	}
	msg := err.Error()
	// Sentinels only classify; the message after them is the one written
	// for a person.
	for _, sentinel := range []error{session.ErrNotFound, session.ErrBusy, session.ErrExited, session.ErrLimit,
		session.ErrInvalid, session.ErrNameTaken, session.ErrStart, exec.ErrInvalid, exec.ErrStreamNotFound, exec.ErrLimit} {
		if rest, ok := strings.CutPrefix(msg, sentinel.Error()+": "); ok {
			msg = rest
			break
		}
	}
	if code == protocol.CodeShuttingDown {
		msg = "the daemon is shutting down; retry against a running daemon"
	}
	return &protocol.Error{Code: code, Message: msg}
}
