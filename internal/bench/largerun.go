package bench

import (
	"encoding/json"
	"io"
	"strings"

	"fmt"
	"github.com/trl-project/trl/protocol"
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
	// Encode512K is the encoding of an exec.run result holding 512 KiB
	// of output (the default max_output_bytes), in this process with the
	// daemon's encoder, written out in pieces.
	Encode512K *Stats `json:"encode_512k,omitempty"`
	Error      string `json:"error,omitempty"`
}

func (r *runner) largeRun() *LargeRun {
	p := r.plan
	out := &LargeRun{Bytes: p.largeRunBytes, Command: outputCommand(p.largeRunBytes)}
	if enc, err := encode512K(p.largeRunN * 10); err == nil {
		out.Encode512K = &enc
	}
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

// encode512K times the daemon's encoding of an exec.run result with
// 512 KiB of 80-column lines, written out in pieces as the transports
// send it: the goal's own measure (protocol's BenchmarkExecResult,
// "written"). Output full of characters JSON must escape (terminal
// escapes, quotes) takes longer: about 1 ms here.
func encode512K(n int) (Stats, error) {
	line := strings.Repeat("x", 79) + "\n"
	out := strings.Repeat(line, 512<<10/80)
	code := 0
	st := protocol.ExecStatus{ExecID: "x-0123456789abcdef", SessionID: "s-0123456789ab", State: protocol.StateExited,
		Reason: protocol.ReasonExit, ExitCode: &code, Stdout: out, StdoutBytes: int64(len(out))}
	req := &protocol.Request{ID: json.RawMessage(`1`), Method: protocol.MethodExecRun}
	ds, err := sample(3, max(n, 20), func() error {
		m, err := protocol.Result(req, st)
		if err != nil {
			return err
		}
		_, err = m.WriteTo(io.Discard)
		return err
	})
	if err != nil {
		return Stats{}, err
	}
	return Summarize(ds), nil
}
