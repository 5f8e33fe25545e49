package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteJSON writes the report as indented JSON.
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(rep)
}

// WriteTable writes the report as a table for people: each measurement
// beside its floor, then the goals.
func WriteTable(w io.Writer, rep *Report) error {
	var b strings.Builder
	m := rep.Machine
	fmt.Fprintf(&b, "trl bench: %d CPUs, %s, Linux %s, %s, trl %s, load average %s at start", m.CPUs, m.CPUModel, m.Kernel, m.Go, m.TRLVersion, m.LoadAvg)
	if rep.Config.Quick {
		b.WriteString(" (--quick: proves it runs, measures nothing worth keeping)")
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	latencyTable(tw, rep.Latency, rep.Config.Iterations)
	streamTable(tw, rep.Stream, rep.LargeRun)
	sessionsTable(tw, rep.Sessions)
	parallelTable(tw, rep.Parallel)
	cancelTable(tw, rep.Cancel)
	screenTable(tw, rep.Screen)
	interactiveTable(tw, rep.Interactive)
	policyTable(tw, rep.Policy)
	filesTable(tw, rep.Files)
	stateTable(tw, rep.State)
	maskingTable(tw, rep.Masking)
	goalsTable(tw, rep.Goals)
	tw.Flush()
	_, err := io.WriteString(w, b.String())
	return err
}

func latencyTable(w io.Writer, l *Latency, n int) {
	if l == nil {
		return
	}
	fmt.Fprintf(w, "\nexec.run `true` and its floors (n=%d each)\tp50\tp90\tp99\tvs ping\tvs fork/exec\n", n)
	if l.ForkExec != nil {
		fmt.Fprintf(w, "  fork/exec /bin/true in-process (floor)\t%s\t%s\t%s\t\t\n", fmtUS(l.ForkExec.P50US), fmtUS(l.ForkExec.P90US), fmtUS(l.ForkExec.P99US))
	}
	if l.Shell != nil {
		fmt.Fprintf(w, "  persistent /bin/sh over pipes in-process (floor)\t%s\t%s\t%s\t\t\n", fmtUS(l.Shell.P50US), fmtUS(l.Shell.P90US), fmtUS(l.Shell.P99US))
	}
	if s := l.SessionLine; s != nil {
		fmt.Fprintf(w, "  trl's command line in a /bin/sh session, in-process (layer)\t%s\t%s\t%s\t\t\n", fmtUS(s.P50US), fmtUS(s.P90US), fmtUS(s.P99US))
	}
	if s := l.InProcess; s != nil {
		fmt.Fprintf(w, "  exec.run through the runtime, in-process (layer)\t%s\t%s\t%s\t\t\n", fmtUS(s.P50US), fmtUS(s.P90US), fmtUS(s.P99US))
	}
	for _, p := range []struct {
		name string
		p    Path
	}{{"unix socket", l.Unix}, {"JSON-RPC 2.0, unix socket", l.JSONRPC}, {"HTTP keep-alive", l.HTTP}} {
		switch {
		case p.p.Skipped != "":
			fmt.Fprintf(w, "  %s: %s\n", p.name, p.p.Skipped)
			continue
		case p.p.Error != "":
			fmt.Fprintf(w, "  %s: error: %s\n", p.name, p.p.Error)
			continue
		}
		s := p.p.Ping
		fmt.Fprintf(w, "  %s: system.ping (transport floor)\t%s\t%s\t%s\t\t\n", p.name, fmtUS(s.P50US), fmtUS(s.P90US), fmtUS(s.P99US))
		s = p.p.ExecRun
		fmt.Fprintf(w, "  %s: exec.run true\t%s\t%s\t%s\t%.2f×\t%.2f×\n", p.name, fmtUS(s.P50US), fmtUS(s.P90US), fmtUS(s.P99US), p.p.ExecOverPing, p.p.ExecOverFork)
	}
	if l.OverheadP50US != 0 {
		fmt.Fprintf(w, "  trl's own share of exec.run p50 (unix exec.run − ping − shell floor)\t%s\t\t\t\t\n", fmtUS(l.OverheadP50US))
		if l.SessionLine != nil && l.InProcess != nil {
			// The share by layer (layers.go): what trl's command line costs
			// the shell, what the runtime adds in-process, and what is left,
			// which only the socket path pays.
			line := l.SessionLine.P50US - l.Shell.P50US
			rt := l.InProcess.P50US - l.SessionLine.P50US
			fmt.Fprintf(w, "    of which the command line in the shell (session line − shell floor)\t%s\t\t\t\t\n", fmtUS(line))
			fmt.Fprintf(w, "    of which the runtime in-process (exec.run in-process − session line)\t%s\t\t\t\t\n", fmtUS(rt))
			fmt.Fprintf(w, "    of which the rest, paid over the socket only\t%s\t\t\t\t\n", fmtUS(l.OverheadP50US-line-rt))
		}
	}
	if l.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", l.Error)
	}
}

func streamTable(w io.Writer, s *Stream, lr *LargeRun) {
	if s != nil {
		fmt.Fprintf(w, "\noutput of %s MB\twall\tMB/s\tvs raw\tCPU\t\n", fmtMB(s.Bytes))
		if s.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", s.Error)
		} else {
			fmt.Fprintf(w, "  raw PTY read in-process (floor, median of %d)\t%.2f s\t%.1f\t\treader %.2f s\t\n", s.Runs, s.RawPTYSeconds, s.RawPTYMBps, s.RawReaderCPU)
			cpu := fmt.Sprintf("client %.2f s", s.ClientCPUSeconds)
			if s.DaemonCPUSeconds > 0 {
				cpu = fmt.Sprintf("daemon %.2f s, %s", s.DaemonCPUSeconds, cpu)
			}
			fmt.Fprintf(w, "  exec.stream to the client (%d notifications, %s lost in %d runs)\t%.2f s\t%.1f\t%.2f×\t%s\t\n", s.Notifications, fmtBytes(s.LostBytes), s.Runs, s.StreamSeconds, s.StreamMBps, s.Ratio, cpu)
		}
	}
	if lr != nil {
		fmt.Fprintf(w, "\nexec.run printing %s MB (truncated to 512 KiB: %v)\tp50\tmax\tMB/s\t\t\n", fmtMB(lr.Bytes), lr.Truncated)
		if lr.Error != "" {
			fmt.Fprintf(w, "  error: %s\n", lr.Error)
		}
		if lr.Wall != nil {
			fmt.Fprintf(w, "  exec.run, wall (n=%d)\t%s\t%s\t%.1f\t\t\n", lr.Wall.N, fmtUS(lr.Wall.P50US), fmtUS(lr.Wall.MaxUS), lr.MBps)
		}
		if lr.RawPTY != nil {
			fmt.Fprintf(w, "  raw PTY read in-process (floor)\t%s\t%s\t\t\t\n", fmtUS(lr.RawPTY.P50US), fmtUS(lr.RawPTY.MaxUS))
		}
	}
}

func sessionsTable(w io.Writer, s *Sessions) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nsessions and daemon memory (RSS)\t\t\t\t\t\n")
	fmt.Fprintf(w, "  idle daemon RSS\t%s\t\t\t\t\n", fmtBytes(s.IdleRSSBytes))
	if c := s.Create; c != nil {
		fmt.Fprintf(w, "  session.create (n=%d)\tp50 %s\tp99 %s\t\t\t\n", c.N, fmtUS(c.P50US), fmtUS(c.P99US))
	}
	for _, st := range s.Steps {
		fmt.Fprintf(w, "  %d idle sessions, fresh daemon\tRSS %s\t%s/session\t\t\t\n", st.Sessions, fmtBytes(st.RSSBytes), fmtBytes(st.PerSessionBytes))
	}
	fmt.Fprintf(w, "  exec.run true in each of %d sessions\t%d errors\tRSS after %s\t\t\t\n", s.Created, s.ExecErrors, fmtBytes(s.RSSAfterExecBytes))
	if d := s.Destroy; d != nil {
		fmt.Fprintf(w, "  session.destroy (n=%d)\tp50 %s\tp99 %s\t\t\t\n", d.N, fmtUS(d.P50US), fmtUS(d.P99US))
	}
	if st := s.Reused; st != nil {
		fmt.Fprintf(w, "  %d idle sessions again, on the freed heap\tRSS %s\t%s/session\t\t\t\n", st.Sessions, fmtBytes(st.RSSBytes), fmtBytes(st.PerSessionBytes))
	}
	if s.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", s.Error)
	}
}

func parallelTable(w io.Writer, p *Parallel) {
	if p == nil {
		return
	}
	fmt.Fprintf(w, "\nparallel clients, exec.run true, own sessions (%.1f s each)\texec/s\tp50\tp99\terrors\t\n", p.DurationS)
	for _, lv := range p.Levels {
		var p50, p99 string
		if lv.Latency != nil {
			p50, p99 = fmtUS(lv.Latency.P50US), fmtUS(lv.Latency.P99US)
		}
		fmt.Fprintf(w, "  %d clients\t%.0f\t%s\t%s\t%d\t%s\n", lv.Clients, lv.ExecPerSec, p50, p99, lv.Errors, lv.FirstError)
	}
	if p.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", p.Error)
	}
}

func cancelTable(w io.Writer, c *Cancel) {
	if c == nil {
		return
	}
	fmt.Fprintf(w, "\nexec.cancel of a running sleep until exec.exit\tp50\tp90\tp99\t\t\n")
	if c.Latency != nil {
		fmt.Fprintf(w, "  n=%d\t%s\t%s\t%s\t\t\n", c.Latency.N, fmtUS(c.Latency.P50US), fmtUS(c.Latency.P90US), fmtUS(c.Latency.P99US))
	}
	if c.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", c.Error)
	}
}

func goalsTable(w io.Writer, gs []Goal) {
	fmt.Fprintf(w, "\ngoals (PERFORMANCE.md)\tmeasured\t\t\t\t\n")
	for _, g := range gs {
		mark := "n/a "
		if g.Met != nil {
			mark = "MISS"
			if *g.Met {
				mark = "met "
			}
		}
		fmt.Fprintf(w, "  %s %s\t%s\t\t\t\t\n", mark, g.Goal, g.Measured)
	}
}

// fmtUS formats microseconds as µs, ms or s with three significant digits.
func fmtUS(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%.0f µs", v)
	case v < 1e6:
		return fmt.Sprintf("%.3g ms", v/1e3)
	default:
		return fmt.Sprintf("%.3g s", v/1e6)
	}
}

func fmtBytes(n int64) string {
	switch {
	case n < 0:
		return "-" + fmtBytes(-n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	default:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
}

func fmtMB(n int) string { return fmt.Sprintf("%g", float64(n)/1e6) }

func screenTable(w io.Writer, s *Screen) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nthe screen (SPEC §9)\t\t\t\t\t\n")
	if s.Error != "" {
		fmt.Fprintf(w, "  error: %s\n", s.Error)
	}
	if l := s.SnapshotLatency; l != nil {
		fmt.Fprintf(w, "  session.screen of an 80×24 screen (n=%d)\tp50 %s\tp99 %s\t\t\t\n", l.N, fmtUS(l.P50US), fmtUS(l.P99US))
	}
	if s.AptRatio > 0 {
		fmt.Fprintf(w, "  apt-style install log, exec.run raw vs render text\t%s\t%s\t%.1f× smaller\t\t\n", fmtBytes(int64(s.AptRawBytes)), fmtBytes(int64(s.AptTextBytes)), s.AptRatio)
	}
}
