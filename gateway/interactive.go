package gateway

import (
	"context"
	"fmt"
	"time"

	"github.com/trl-project/trl/protocol"
)

// The gateway cannot answer a program that waits for keys; these bound
// how it finds one and how it stops it (issue 24 item 17).
const (
	// altScreenMatch is the until event that sees a full-screen program
	// start: it switches to the alternate screen.
	altScreenMatch = `match:\x1b\[\?(1049|1047|47)h`
	// fullScreenConfirm is how long such a program must go on to count as
	// waiting: an editor run with -c wq comes and goes sooner.
	fullScreenConfirm = time.Second
	// stopStep is how long each signal of the ladder is given before the
	// next: INT, then TERM, then KILL. Programs that wait for keys often
	// ignore SIGINT (less, vi), and the session takes no call until the
	// command has ended.
	stopStep = 300 * time.Millisecond
)

// awaitInput waits, until ctx ends or the command exits, for the command
// to wait for terminal input, and says what it waits for (nil: it does
// not). Besides the kernel's evidence (exec.wait until "input"), a
// full-screen program that is still running a moment after it took the
// screen is waiting: the gateway feeds a command the request's stdin, so
// an editor a command starts (EDITOR=vi git commit) reads that, not the
// terminal, and is never seen reading the terminal; it waits all the same.
func (g *Gateway) awaitInput(ctx context.Context, id string, ms int64) *protocol.InputWait {
	st, err := g.api.ExecWait(ctx, protocol.ExecWaitParams{ExecID: id, Until: &[]string{"input", altScreenMatch}, TimeoutMS: &ms})
	if err != nil || ctx.Err() != nil {
		return nil
	}
	switch {
	case st.State == protocol.StateWaitingInput:
		return st.Input
	case st.State != protocol.StateRunning || st.Reason != protocol.ReasonMatch:
		return nil
	}
	confirm := fullScreenConfirm.Milliseconds()
	st, err = g.api.ExecWait(ctx, protocol.ExecWaitParams{ExecID: id, Until: &[]string{"input"}, TimeoutMS: &confirm})
	if err != nil || ctx.Err() != nil {
		return nil
	}
	switch st.State {
	case protocol.StateWaitingInput:
		return st.Input
	case protocol.StateRunning:
		if st.AltScreen {
			return &protocol.InputWait{Kind: "tui", Confidence: "heuristic"}
		}
	}
	return nil
}

// stop ends a command the gateway gave up on, as a person would: SIGINT,
// then, if it is still running stopStep later, SIGTERM, then SIGKILL,
// all through exec.cancel; it returns once the command has ended or the
// ladder is done.
func (g *Gateway) stop(ctx context.Context, id string) {
	step := stopStep.Milliseconds()
	for _, sig := range []protocol.Signal{"SIGINT", "SIGTERM", "SIGKILL"} {
		if _, err := g.api.ExecCancel(ctx, protocol.ExecCancelParams{ExecID: id, Signal: sig}); err != nil {
			return
		}
		st, err := g.api.ExecWait(ctx, protocol.ExecWaitParams{ExecID: id, Until: &[]string{}, TimeoutMS: &step})
		if err != nil || st.State == protocol.StateExited {
			return
		}
	}
}

// waitingMessage is the text of COMMAND_WAITING_INPUT.
func waitingMessage(in *protocol.InputWait) string {
	if in.Prompt == "" && in.Kind == "tui" {
		return "the command runs a full-screen program that waits for keys, which a gateway call cannot send; it was stopped. Make the command non-interactive (for git: -m \"message\" or GIT_EDITOR=true; for a pager: --no-pager or PAGER=cat)"
	}
	return fmt.Sprintf("the command waits for %s input at the prompt %q, which a gateway call cannot answer; it was interrupted. Pass the answer on stdin or use a non-interactive flag (such as -y)", in.Kind, in.Prompt)
}
