package bench

import (
	"fmt"
	"time"

	"github.com/trl-project/trl/protocol"
)

// Cancel is exec.cancel of a running `sleep`, from sending the cancel to
// receiving the stream's exec.exit.
type Cancel struct {
	Latency *Stats `json:"latency,omitempty"`
	Error   string `json:"error,omitempty"`
}

func (r *runner) cancel() *Cancel {
	out := &Cancel{}
	c, id, done, err := r.dialSession()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer done()
	const warm = 2
	var times []time.Duration
	for i := range warm + r.plan.cancelN {
		d, err := cancelTimed(c, id)
		if err != nil {
			out.Error = err.Error()
			return out
		}
		if i >= warm {
			times = append(times, d)
		}
	}
	s := Summarize(times)
	out.Latency = &s
	return out
}

// cancelTimed returns the time from sending exec.cancel to reading the
// stream's exec.exit.
func cancelTimed(c *Conn, session string) (time.Duration, error) {
	var st protocol.ExecStreamStarted
	if err := c.Call(protocol.MethodExecStream, execParams{SessionID: session, Command: "sleep 30"}, &st); err != nil {
		return 0, fmt.Errorf("exec.stream: %w", err)
	}
	// The shell needs about a millisecond to fork and exec sleep; cancel a
	// command that is surely running, not one still starting.
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	var res protocol.ExecCancelResult
	if err := c.Call(protocol.MethodExecCancel, protocol.ExecCancelParams{SessionID: session}, &res); err != nil {
		return 0, fmt.Errorf("exec.cancel: %w", err)
	}
	if !res.Canceled {
		return 0, fmt.Errorf("exec.cancel answered canceled:false while sleep ran")
	}
	for {
		n, err := c.Next()
		if err != nil {
			return 0, err
		}
		if n.StreamID == st.StreamID && n.Method == "exec.exit" {
			if !n.Canceled {
				return 0, fmt.Errorf("exec.exit without canceled:true (exit code %d)", n.ExitCode)
			}
			return n.At.Sub(start), nil
		}
	}
}
