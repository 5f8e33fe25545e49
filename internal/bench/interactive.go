package bench

import (
	"fmt"
	"io"
	osexec "os/exec"
	"time"
)

// Interactive measures SPEC §8 through the daemon: the time from a
// command's start to exec.run answering waiting_input at its prompt (the
// prompt is printed at once, so this is the time to tell it), and a
// python3 REPL's round trip (exec.input of an expression to the answer
// with the next prompt), where python3 is installed.
type Interactive struct {
	ToWaiting *Stats `json:"to_waiting_input,omitempty"`
	REPL      *Stats `json:"repl_round_trip,omitempty"`
	// REPLSkipped says why the REPL was not measured.
	REPLSkipped string `json:"repl_skipped,omitempty"`
	Error       string `json:"error,omitempty"`
}

type waitStatus struct {
	State string `json:"state"`
	Input *struct {
		Kind string `json:"kind"`
	} `json:"input"`
	Stdout string `json:"stdout"`
}

func (r *runner) interactive() *Interactive {
	out := &Interactive{}
	c, id, done, err := r.dialSession()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer done()
	n := max(r.plan.latencyN/10, 20)
	var st waitStatus
	// Each prompt is answered outside the timing, so the next sample
	// starts from an idle session.
	toWaiting := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := c.Call("exec.run", map[string]any{"session_id": id, "command": `printf 'Continue? [Y/n] '; read answer`}, &st); err != nil {
			out.Error = "to waiting_input: " + err.Error()
			return out
		}
		toWaiting = append(toWaiting, time.Since(start))
		if st.State != "waiting_input" {
			out.Error = fmt.Sprintf("read answered state %q, not waiting_input", st.State)
			return out
		}
		if err := c.Call("exec.input", map[string]any{"session_id": id, "input": "y\r"}, &st); err != nil {
			out.Error = "answer: " + err.Error()
			return out
		}
	}
	s := Summarize(toWaiting)
	out.ToWaiting = &s

	if _, err := osexec.LookPath("python3"); err != nil {
		out.REPLSkipped = "python3 is not installed"
		return out
	}
	if err := c.Call("exec.run", map[string]any{"session_id": id, "command": "python3 -q"}, &st); err != nil || st.State != "waiting_input" {
		out.Error = fmt.Sprintf("python3: %v (state %q)", err, st.State)
		return out
	}
	repl, err := sample(3, n, func() error {
		if err := c.Call("exec.input", map[string]any{"session_id": id, "input": "6*7\r"}, &st); err != nil {
			return err
		}
		if st.State != "waiting_input" || st.Stdout != "6*7\n42\n>>> " {
			return fmt.Errorf("REPL answered %q in state %q", st.Stdout, st.State)
		}
		return nil
	})
	_ = c.Call("exec.input", map[string]any{"session_id": id, "input": []any{map[string]any{"eof": true}}}, &st)
	if err != nil {
		out.Error = "REPL: " + err.Error()
		return out
	}
	rs := Summarize(repl)
	out.REPL = &rs
	return out
}

func interactiveTable(w io.Writer, in *Interactive) {
	if in == nil {
		return
	}
	fmt.Fprintf(w, "\ninteractive commands (SPEC §8)\t\t\t\t\t\n")
	if in.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", in.Error)
	}
	if l := in.ToWaiting; l != nil {
		fmt.Fprintf(w, "  exec.run to waiting_input at a prompt (n=%d)\tp50 %s\tp95 %s\t\t\t\n", l.N, fmtUS(l.P50US), fmtUS(l.P95US))
	}
	if l := in.REPL; l != nil {
		fmt.Fprintf(w, "  python3 REPL round trip, exec.input to answer (n=%d)\tp50 %s\tp95 %s\t\t\t\n", l.N, fmtUS(l.P50US), fmtUS(l.P95US))
	}
	if in.REPLSkipped != "" {
		fmt.Fprintf(w, "  python3 REPL round trip\tskipped: %s\t\t\t\t\n", in.REPLSkipped)
	}
}
