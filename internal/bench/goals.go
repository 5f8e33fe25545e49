package bench

import "fmt"

// Goal is one of PERFORMANCE.md's goals with what this run measured.
type Goal struct {
	Goal     string `json:"goal"`
	Measured string `json:"measured"`
	// Met is nil when the run did not measure it (an error, a skipped
	// step, or --sessions below 1,000).
	Met *bool `json:"met"`
}

const (
	goalRunP50US        = 300
	goalRunOverFork     = 0.5
	goalRunP99US        = 1000
	goalStreamRatio     = 0.8
	goalCreateP50US     = 3000
	goalIdleRSS         = 15 << 20
	goalPerSession      = 64 << 10
	goalSessions        = 1000
	goalParallelClients = 8
	goalParallelRate    = 4000
	goalScreenP50US     = 200
	goalWaitingP95US    = 500_000
	goalRenderRatio     = 10
	goalRunOverFloors   = 2.0
	goalREPLP50US       = 5000
	goalEncodeP50US     = 300
	goalPolicyP50US     = 50
	goalPolicyRatio     = 1.2
	goalMaskRatio       = 1.05
	goalFSReadP50US     = 500
	goalHTTPOverDisk    = 0.5
	goalForkOverCreate  = 2
	goalStateP50US      = 5000
)

func goals(rep *Report) []Goal {
	var gs []Goal
	add := func(goal string, measured bool, met bool, format string, args ...any) {
		g := Goal{Goal: goal, Measured: "not measured"}
		if measured {
			g.Measured = fmt.Sprintf(format, args...)
			g.Met = &met
		}
		gs = append(gs, g)
	}

	var run *Stats
	var overFork float64
	if l := rep.Latency; l != nil {
		run, overFork = l.Unix.ExecRun, l.Unix.ExecOverFork
	}
	add("exec.run true p50 ≤ 300 µs", run != nil, run != nil && run.P50US <= goalRunP50US, "%s", fmtUS(p50(run)))
	add("exec.run true p50 ≤ 0.5× fork/exec", overFork > 0, overFork <= goalRunOverFork, "%.2f×", overFork)
	add("exec.run true p99 ≤ 1 ms", run != nil, run != nil && run.P99US <= goalRunP99US, "%s", fmtUS(p99(run)))
	// Round 3: against the floors measured in this run, which include the
	// machine's own wake-up costs, so the ratio holds on any VM.
	var floors float64
	if l := rep.Latency; l != nil && l.Unix.Ping != nil && l.Shell != nil {
		floors = l.Unix.Ping.P50US + l.Shell.P50US
	}
	add("exec.run true p50 ≤ 2.0× (system.ping p50 + persistent-shell floor p50)", run != nil && floors > 0,
		run != nil && floors > 0 && run.P50US <= goalRunOverFloors*floors, "%.2f× (%s against %s)", safeDiv(p50(run), floors), fmtUS(p50(run)), fmtUS(floors))

	st := rep.Stream
	add("exec.stream ≥ 0.8× raw PTY", st != nil && st.Ratio > 0, st != nil && st.Ratio >= goalStreamRatio, "%.2f×", ratioOf(st))

	s := rep.Sessions
	var create *Stats
	if s != nil {
		create = s.Create
	}
	add("session.create p50 ≤ 3 ms", create != nil, create != nil && create.P50US <= goalCreateP50US, "%s", fmtUS(p50(create)))
	add("idle daemon RSS ≤ 15 MiB", s != nil && s.IdleRSSBytes > 0, s != nil && s.IdleRSSBytes <= goalIdleRSS, "%s", fmtBytes(idleRSS(s)))
	// The larger of the fresh daemon's figure and the second round's, on
	// reused heap: a daemon that has been running pays the second.
	var last *SessionStep
	how := "fresh heap"
	if s != nil && len(s.Steps) > 0 {
		last = &s.Steps[len(s.Steps)-1]
		if s.Reused != nil && s.Reused.PerSessionBytes > last.PerSessionBytes {
			last, how = s.Reused, "reused heap"
		}
	}
	if last != nil {
		add("daemon RSS per idle session ≤ 64 KiB", true, last.PerSessionBytes <= goalPerSession,
			"%s (%d sessions, %s)", fmtBytes(last.PerSessionBytes), last.Sessions, how)
	} else {
		add("daemon RSS per idle session ≤ 64 KiB", false, false, "")
	}
	if s != nil && s.Target >= goalSessions {
		add("1,000 concurrent sessions work", true, s.Created >= goalSessions && s.ExecErrors == 0,
			"%d created, %d exec errors", s.Created, s.ExecErrors)
	} else {
		add("1,000 concurrent sessions work", false, false, "")
	}

	var lv *Level
	if p := rep.Parallel; p != nil {
		for i := range p.Levels {
			if p.Levels[i].Clients == goalParallelClients {
				lv = &p.Levels[i]
			}
		}
	}
	if lv != nil {
		add("8 clients ≥ 4,000 exec.run/s, 0 errors", true, lv.ExecPerSec >= goalParallelRate && lv.Errors == 0,
			"%.0f/s, %d errors", lv.ExecPerSec, lv.Errors)
	} else {
		add("8 clients ≥ 4,000 exec.run/s, 0 errors", false, false, "")
	}
	var scr *Stats
	var ratio float64
	if sc := rep.Screen; sc != nil {
		scr, ratio = sc.SnapshotLatency, sc.AptRatio
	}
	add("session.screen 80×24 p50 ≤ 200 µs", scr != nil, scr != nil && scr.P50US <= goalScreenP50US, "%s", fmtUS(p50(scr)))
	add("render text of an apt log ≥ 10× smaller", ratio > 0, ratio >= goalRenderRatio, "%.1f×", ratio)
	var prompt *Stats
	if in := rep.Interactive; in != nil {
		prompt = in.ToWaiting
	}
	add("waiting_input told p95 ≤ 500 ms after the prompt", prompt != nil, prompt != nil && prompt.P95US <= goalWaitingP95US, "p95 %s", fmtUS(p95(prompt)))
	var repl *Stats
	if in := rep.Interactive; in != nil {
		repl = in.REPL
	}
	add("REPL round trip through exec.input ≤ 5 ms", repl != nil, repl != nil && repl.P50US <= goalREPLP50US, "p50 %s", fmtUS(p50(repl)))
	var enc *Stats
	if lr := rep.LargeRun; lr != nil {
		enc = lr.Encode512K
	}
	add("a 512 KiB exec.run result encodes in ≤ 0.3 ms", enc != nil, enc != nil && enc.P50US <= goalEncodeP50US, "p50 %s", fmtUS(p50(enc)))
	var eval *Stats
	if p := rep.Policy; p != nil {
		eval = p.Evaluate
	}
	add("policy evaluation of a typical line, 20 rules, p50 ≤ 50 µs", eval != nil, eval != nil && eval.P50US <= goalPolicyP50US, "%s", fmtUS(p50(eval)))
	var polRatio float64
	if p := rep.Policy; p != nil {
		polRatio = p.Ratio
	}
	add("exec.run true with a 20-rule policy ≤ 1.2× without (same run)", polRatio > 0, polRatio > 0 && polRatio <= goalPolicyRatio, "%.2f×", polRatio)
	var fsRead, cat *Stats
	var httpOverDisk float64
	if f := rep.Files; f != nil {
		fsRead, cat, httpOverDisk = f.Read64K, f.Cat64K, f.HTTPOverDisk
	}
	add("fs.read 64 KiB p50 ≤ 0.5 ms", fsRead != nil, fsRead != nil && fsRead.P50US <= goalFSReadP50US, "%s", fmtUS(p50(fsRead)))
	add("fs.read 64 KiB faster than exec.run cat", fsRead != nil && cat != nil, fsRead != nil && cat != nil && fsRead.P50US < cat.P50US,
		"%s vs %s", fmtUS(p50(fsRead)), fmtUS(p50(cat)))
	add("GET /files ≥ 0.5× disk read", httpOverDisk > 0, httpOverDisk >= goalHTTPOverDisk, "%.2f×", httpOverDisk)
	var state *Stats
	var forkRatio float64
	if sb := rep.State; sb != nil {
		state, forkRatio = sb.State, sb.ForkOverCreate
	}
	add("session.fork p50 ≤ 2× session.create p50", forkRatio > 0, forkRatio <= goalForkOverCreate, "%.2f×", forkRatio)
	add("session.state p50 ≤ 5 ms (bash, 200 vars, 50 functions)", state != nil, state != nil && state.P50US <= goalStateP50US, "%s", fmtUS(p50(state)))
	var maskRatio, limitsRatio float64
	if m := rep.Masking; m != nil {
		maskRatio, limitsRatio = m.Ratio, m.LimitsRatio
	}
	add("secret masking costs exec.run ≤ 5% (a session with a secret vs without, same run)", maskRatio > 0, maskRatio > 0 && maskRatio <= goalMaskRatio, "%.2f×", maskRatio)
	add("per-session cgroup limits cost exec.run ≤ 5% (a session with limits vs without, same run; measurable only where limits can be set)", limitsRatio > 0, limitsRatio > 0 && limitsRatio <= goalMaskRatio, "%.2f×", limitsRatio)
	// Goals this bench does not measure yet are rows too, so a reader
	// sees every goal of PERFORMANCE.md and which ones are unproven here.
	for _, g := range []string{
		"daemon peak RSS ≤ 1.5× max_output_bytes above idle, whatever the bytes (TestResultMemoryBound asserts it)",
	} {
		add(g, false, false, "")
	}
	return gs
}

func p95(s *Stats) float64 {
	if s == nil {
		return 0
	}
	return s.P95US
}

func p50(s *Stats) float64 {
	if s == nil {
		return 0
	}
	return s.P50US
}

func p99(s *Stats) float64 {
	if s == nil {
		return 0
	}
	return s.P99US
}

func ratioOf(s *Stream) float64 {
	if s == nil {
		return 0
	}
	return s.Ratio
}

func idleRSS(s *Sessions) int64 {
	if s == nil {
		return 0
	}
	return s.IdleRSSBytes
}

func safeDiv(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}
