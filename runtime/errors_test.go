package runtime

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/files"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/session"
)

// TestErrorCodes: every kind of error the packages return maps to its
// wire code, with the message a person reads and no kind text cut off it;
// and the table holds nothing this test does not name, so a kind added
// without a decision fails here.
func TestErrorCodes(t *testing.T) {
	want := map[error]protocol.Code{
		session.ErrNotFound:     protocol.CodeSessionNotFound,
		session.ErrBusy:         protocol.CodeSessionBusy,
		session.ErrExited:       protocol.CodeSessionExited,
		session.ErrNameTaken:    protocol.CodeInvalidParams,
		session.ErrLimit:        protocol.CodeLimitExceeded,
		session.ErrInvalid:      protocol.CodeInvalidParams,
		session.ErrNotShell:     protocol.CodeInvalidParams,
		session.ErrStart:        protocol.CodeInternal,
		session.ErrShuttingDown: protocol.CodeShuttingDown,
		exec.ErrInvalid:         protocol.CodeInvalidParams,
		exec.ErrStreamNotFound:  protocol.CodeStreamNotFound,
		exec.ErrLimit:           protocol.CodeLimitExceeded,
		files.ErrNotFound:       protocol.CodeFileNotFound,
		files.ErrPermission:     protocol.CodePermissionDenied,
		files.ErrConflict:       protocol.CodeConflict,
		files.ErrIsDir:          protocol.CodeIsADirectory,
		files.ErrNotDir:         protocol.CodeNotADirectory,
		files.ErrOutsideRoot:    protocol.CodeOutsideRoot,
		files.ErrLimit:          protocol.CodeLimitExceeded,
		files.ErrInvalid:        protocol.CodeInvalidParams,
	}
	assert.Len(t, errorCodes, len(want), "the table and this test name the same kinds")
	for _, e := range errorCodes {
		_, ok := want[e.kind]
		assert.True(t, ok, "the table maps %v, which this test does not name", e.kind)
	}
	for kind, code := range want {
		for _, err := range []error{
			&session.Error{Kind: kind, Msg: "what happened, for a person"},
			fmt.Errorf("context: %w", &session.Error{Kind: kind, Msg: "what happened, for a person"}),
		} {
			got := wireError(err)
			assert.Equal(t, code, got.Code, "%v", kind)
			if code != protocol.CodeShuttingDown {
				assert.Contains(t, got.Message, "what happened, for a person", "%v", kind)
				assert.NotContains(t, got.Message, kind.Error()+":", "%v: the kind's text is not in the message", kind)
			}
		}
	}
	// No kind: INTERNAL_ERROR, saying so.
	got := wireError(errors.New("disk on fire"))
	assert.Equal(t, protocol.CodeInternal, got.Code)
	assert.Equal(t, "internal error: disk on fire", got.Message)
	// An error the method table built is passed through.
	pe := protocol.Errorf(protocol.CodeInvalidState, "x")
	assert.Same(t, pe, wireError(pe))
}
