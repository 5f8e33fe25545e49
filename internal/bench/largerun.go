package bench

import (
	"fmt"
	"time"
)

// LargeRun is exec.run of a command printing far more than
// max_output_bytes: the daemon reads everything and keeps head and tail.
type LargeRun struct {
	Bytes     int     `json:"bytes"`
	Command   string  `json:"command"`
	Wall      *Stats  `json:"wall,omitempty"`
	MBps      float64 `json:"mb_s"`
	Truncated bool    `json:"truncated"`
	// RawPTY is the same command read raw from a PTY in this process.
	RawPTY *Stats `json:"raw_pty,omitempty"`
	Error  string `json:"error,omitempty"`
}

func (r *runner) largeRun() *LargeRun {
	p := r.plan
	out := &LargeRun{Bytes: p.largeRunBytes, Command: outputCommand(p.largeRunBytes)}
	c, id, done, err := r.dialSession()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer done()

	params := execParams{SessionID: id, Command: out.Command}
	walls, err := sample(1, p.largeRunN, func() error {
		var res execResult
		if err := c.Call("exec.run", params, &res); err != nil {
			return err
		}
		if res.ExitCode != 0 || res.StdoutBytes != int64(p.largeRunBytes) {
			return fmt.Errorf("exit %d, %d bytes of stdout, want 0 and %d", res.ExitCode, res.StdoutBytes, p.largeRunBytes)
		}
		out.Truncated = res.Truncated
		return nil
	})
	if err != nil {
		out.Error = "exec.run: " + err.Error()
		return out
	}
	w := Summarize(walls)
	out.Wall = &w
	out.MBps = mbps(p.largeRunBytes, time.Duration(w.P50US*float64(time.Microsecond)))

	raws, err := sample(1, p.largeRunN, func() error {
		_, n, err := rawPTY(out.Command)
		if err == nil && n != int64(p.largeRunBytes) {
			err = fmt.Errorf("read %d bytes, want %d", n, p.largeRunBytes)
		}
		return err
	})
	if err != nil {
		out.Error = "raw PTY: " + err.Error()
		return out
	}
	rs := Summarize(raws)
	out.RawPTY = &rs
	return out
}
