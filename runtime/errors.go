package runtime

import (
	"errors"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/files"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// errorCodes is the one table from the kinds of the packages' errors to
// wire codes (SPEC §3). An error of no kind here is INTERNAL_ERROR.
var errorCodes = []struct {
	kind error
	code protocol.Code
}{
	{session.ErrNotFound, protocol.CodeSessionNotFound},
	{exec.ErrStreamNotFound, protocol.CodeStreamNotFound},
	{session.ErrBusy, protocol.CodeSessionBusy},
	{session.ErrExited, protocol.CodeSessionExited},
	{session.ErrLimit, protocol.CodeLimitExceeded},
	{exec.ErrLimit, protocol.CodeLimitExceeded},
	{session.ErrInvalid, protocol.CodeInvalidParams},
	{session.ErrNameTaken, protocol.CodeInvalidParams},
	{session.ErrNotShell, protocol.CodeInvalidParams},
	{exec.ErrInvalid, protocol.CodeInvalidParams},
	{session.ErrShuttingDown, protocol.CodeShuttingDown},
	{session.ErrStart, protocol.CodeInternal},
	{files.ErrNotFound, protocol.CodeFileNotFound},
	{files.ErrPermission, protocol.CodePermissionDenied},
	{files.ErrConflict, protocol.CodeConflict},
	{files.ErrIsDir, protocol.CodeIsADirectory},
	{files.ErrNotDir, protocol.CodeNotADirectory},
	{files.ErrOutsideRoot, protocol.CodeOutsideRoot},
	{files.ErrLimit, protocol.CodeLimitExceeded},
	{files.ErrInvalid, protocol.CodeInvalidParams},
}

// wireError maps a domain error to the error a client sees. It is the only
// place where package errors meet wire codes: the kind picks the code, and
// the message is the error's own, written for a person (a session.Error,
// which session and exec return, carries no kind text in it).
func wireError(err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	code := protocol.CodeInternal
	for _, e := range errorCodes {
		if errors.Is(err, e.kind) {
			code = e.code
			break
		}
	}
	msg := err.Error()
	switch {
	case code == protocol.CodeShuttingDown:
		msg = "the daemon is shutting down; retry against a running daemon"
	case code == protocol.CodeInternal && !errors.Is(err, session.ErrStart):
		msg = "internal error: " + msg
	}
	return &protocol.Error{Code: code, Message: msg}
}
