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
	// fullScreenStep is how often the wait looks whether a full-screen
	// program holds the terminal; one still on the alternate screen a
	// step after it was first seen there is waiting (an editor run with
	// -c wq comes and goes sooner).
	fullScreenStep = time.Second
	// stopStep is how long each signal of the ladder is given before the
	// next: INT, then TERM, then KILL. Programs that wait for keys often
	// ignore SIGINT (less, vi), and the session takes no call until the
	// command has ended.
	stopStep = 300 * time.Millisecond
)

// awaitInput waits, until ctx ends, ms pass or the command exits, for
// the command to wait for terminal input, and says what it waits for
// (nil: it does not). Besides the kernel's evidence (exec.wait until
// "input"), a full-screen program still on the alternate screen a step
// after it was seen there is waiting: the gateway feeds a command the
// request's stdin, so an editor a command starts (EDITOR=vi git commit)
// reads that, not the terminal, and is never seen reading the terminal;
// it waits all the same. (The wait goes in steps, each a status: a
// "match" event on the escape sequence would scan the output at every
// write.)
func (g *Gateway) awaitInput(ctx context.Context, id string, ms int64) *protocol.InputWait {
	deadline := time.Now().Add(time.Duration(ms) * time.Millisecond)
	altSeen := false
	for {
		step := min(time.Until(deadline), fullScreenStep).Milliseconds()
		if step <= 0 {
			return nil
		}
		st, err := g.api.ExecWait(ctx, protocol.ExecWaitParams{ExecID: id, Until: &[]string{"input"}, TimeoutMS: &step})
		if err != nil || ctx.Err() != nil {
			return nil
		}
		switch {
		case st.State == protocol.StateWaitingInput:
			return st.Input
		case st.State != protocol.StateRunning:
			return nil
		case st.AltScreen && altSeen:
			return &protocol.InputWait{Kind: "tui", Confidence: "heuristic"}
		}
		altSeen = st.AltScreen
	}
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
