package bench

import (
	"fmt"
	"time"
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
	var st struct {
		StreamID string `json:"stream_id"`
	}
	if err := c.Call("exec.stream", execParams{SessionID: session, Command: "sleep 30"}, &st); err != nil {
		return 0, fmt.Errorf("exec.stream: %w", err)
	}
	// The shell needs about a millisecond to fork and exec sleep; cancel a
	// command that is surely running, not one still starting.
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	var res struct {
		Canceled bool `json:"canceled"`
	}
	if err := c.Call("exec.cancel", map[string]any{"session_id": session}, &res); err != nil {
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
