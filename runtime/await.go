package runtime

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/trl-project/trl/exec"
	"github.com/trl-project/trl/internal/termwait"
	"github.com/trl-project/trl/protocol"
	"github.com/trl-project/trl/render"
	"github.com/trl-project/trl/session"
)

// Input-wait sampling (SPEC §8): the terminal is inspected only once a
// command's output has been quiet for firstProbe, then at growing
// intervals up to maxProbe while it stays quiet, so a busy command and an
// idle session cost nothing and a prompt is told within about 250 ms.
const (
	firstProbe = 2 * time.Millisecond
	maxProbe   = 200 * time.Millisecond
	// afterInput is how long after typing the terminal is not sampled
	// unless output came: the program may not have read the input yet.
	afterInput = 40 * time.Millisecond
	// tuiConfirm is how long a full-screen program must go on waiting,
	// silent, to count as waiting for input.
	tuiConfirm = 100 * time.Millisecond
	// unseenConfirm is how long any other program seen waiting with no
	// prompt must go on waiting to count. What a program writes to its
	// terminal reaches the master through a kernel worker, so the prompt
	// it wrote just before it began to read may not yet be readable (nor
	// counted as unread) at the first sample; on a loaded machine that
	// showed as a wait with no prompt. A wait whose prompt is seen counts
	// at once.
	unseenConfirm = 10 * time.Millisecond
	// pollLoop: a program whose wait on the terminal has a timeout
	// shorter than this must be seen waiting at every sample until that
	// timeout has passed to count (see check); vim's (4 s) and top's
	// (3 s) need not.
	pollLoop = time.Second
	// pollMargin is how long after such a timeout the last sample is
	// taken; pollEvery is how often it is sampled until then.
	pollMargin = 50 * time.Millisecond
	pollEvery  = 40 * time.Millisecond
	// multiTick is how often a wait on several commands looks at them.
	multiTick = 20 * time.Millisecond
)

// until is the set of events that end a wait besides the exit.
type until struct {
	input bool
	match *regexp.Regexp
	quiet time.Duration
}

// parseUntil reads until: nil means the default, ["input"].
func parseUntil(list *[]string) (until, error) {
	if list == nil {
		return until{input: true}, nil
	}
	var u until
	for _, ev := range *list {
		switch {
		case ev == "input":
			u.input = true
		case strings.HasPrefix(ev, "match:"):
			re, err := regexp.Compile(ev[len("match:"):])
			if err != nil {
				return u, protocol.Errorf(protocol.CodeInvalidParams, "until %q: not an RE2 regular expression: %v", clip(ev, 64), err)
			}
			u.match = re
		case strings.HasPrefix(ev, "quiet:"):
			ms, err := strconv.ParseInt(ev[len("quiet:"):], 10, 64)
			if err != nil || ms < 1 || ms > 3_600_000 {
				return u, protocol.Errorf(protocol.CodeInvalidParams, "until %q: quiet takes milliseconds from 1 to 3600000, e.g. \"quiet:500\"", clip(ev, 64))
			}
			u.quiet = time.Duration(ms) * time.Millisecond
		default:
			return u, protocol.Errorf(protocol.CodeInvalidParams, "until %q is not an event; use \"input\", \"match:<RE2>\" or \"quiet:<ms>\"", clip(ev, 64))
		}
	}
	return u, nil
}

// yieldDuration reads yield_ms: nil means def; the bound is ten minutes.
func yieldDuration(ms *int64, def time.Duration) (time.Duration, error) {
	if ms == nil {
		return def, nil
	}
	if *ms < 0 || *ms > 600_000 {
		return 0, protocol.Errorf(protocol.CodeInvalidParams, "yield_ms must be between 0 and 600000 (0: no yield)")
	}
	return time.Duration(*ms) * time.Millisecond, nil
}

// event is why a wait ended.
type event struct {
	reason string // protocol.Reason*; "" means nothing happened yet
	input  *protocol.InputWait
}

// probe keeps the sampling schedule of one command during one wait.
type probe struct {
	last  time.Time // output time the schedule started from
	every time.Duration
	at    time.Time // next sample
	seen  bool      // the last sample saw the program waiting, to be confirmed
	// polled is set when that wait had a short timeout: it counts only
	// if every sample until polledTill sees the program waiting.
	polled     bool
	polledTill time.Time
}

// check looks at c once: exited, or one of u's events, or nothing; next
// is when to look again without new output (zero: only on output).
func (rt *Runtime) check(c *exec.Job, u until, pr *probe, now time.Time) (ev event, next time.Time) {
	select {
	case <-c.Done():
		return event{reason: protocol.ReasonExit}, time.Time{}
	default:
	}
	last := c.Watch().Last()
	m := c.Marks()
	inputAt, sent := m.InputAt, m.Sent
	if u.match != nil && rt.matches(c, u.match, sent) {
		return event{reason: protocol.ReasonMatch}, time.Time{}
	}
	if u.quiet > 0 {
		q := last.Add(u.quiet)
		if inputAt.After(last) {
			q = inputAt.Add(u.quiet)
		}
		if !now.Before(q) {
			return event{reason: protocol.ReasonQuiet}, time.Time{}
		}
		next = q
	}
	if u.input && !c.Awaiting() {
		if !last.Equal(pr.last) || pr.at.IsZero() {
			pr.last, pr.every, pr.seen, pr.polled = last, firstProbe, false, false
			pr.at = last.Add(firstProbe)
			if t := inputAt.Add(afterInput); inputAt.After(last) && t.After(pr.at) {
				pr.at = t
			}
		}
		if !now.Before(pr.at) {
			in, timeout := rt.inputWait(c)
			tui := in != nil && in.Kind == string(termwait.KindTUI)
			switch {
			case in != nil && timeout > 0 && timeout < pollLoop && !pr.polled:
				// A wait with a short timeout may be a loop that looks
				// for a key between pieces of work (select for 0.5 s,
				// then sleep): it counts only if the program is seen
				// waiting at every sample until that timeout has passed,
				// so that the work between two waits is seen.
				pr.polled, pr.seen = true, true
				pr.polledTill = now.Add(timeout + pollMargin)
				pr.at = now.Add(pollEvery)
			case in != nil && pr.polled && now.Before(pr.polledTill):
				pr.at = now.Add(pollEvery)
				if pr.polledTill.Before(pr.at) {
					pr.at = pr.polledTill
				}
			case in != nil && (pr.seen || !tui && in.Prompt != ""):
				return event{reason: protocol.ReasonInput, input: in}, time.Time{}
			case in != nil:
				// Confirmed by a second sample with no output between
				// (output restarts the schedule): a full-screen program
				// also reads the terminal, with a timeout, while it
				// redraws or exits, so it must still wait tuiConfirm
				// later; a wait with no prompt yet, unseenConfirm later.
				pr.seen = true
				pr.at = now.Add(unseenConfirm)
				if tui {
					pr.at = now.Add(tuiConfirm)
				}
			default:
				pr.seen, pr.polled = false, false
				pr.every = min(pr.every*2, maxProbe)
				pr.at = now.Add(pr.every)
			}
		}
		if next.IsZero() || pr.at.Before(next) {
			next = pr.at
		}
	}
	return event{}, next
}

// inputWait samples c's terminal: nil unless its foreground job waits
// for terminal input. timeout is the reader's own timeout on that wait
// (0: none).
func (rt *Runtime) inputWait(c *exec.Job) (in *protocol.InputWait, timeout time.Duration) {
	s := c.Session()
	if s == nil {
		return nil, 0
	}
	st, err := s.InputWait()
	if err != nil || !st.Waiting {
		return nil, 0
	}
	act := c.Watch().Activity()
	if rows, _ := s.Screen().Size(); st.Kind == termwait.KindRaw && act.SinceHome >= 0 && act.SinceHome >= rows-2 {
		// It placed the cursor and painted down to the last row: a
		// full-screen program without the alternate screen (top with a
		// TERM that has none) is a full-screen program all the same.
		st.Kind = termwait.KindTUI
	}
	return &protocol.InputWait{
		Kind:       string(st.Kind),
		Prompt:     promptOf(st, act.Line),
		Reader:     protocol.Reader{PID: st.Reader.Pid, Comm: st.Reader.Comm},
		Confidence: string(st.Confidence),
	}, st.Timeout
}

// waitingNow reports whether c waits for terminal input at this instant.
func (rt *Runtime) waitingNow(c *exec.Job) bool {
	in, _ := rt.inputWait(c)
	return in != nil
}

// promptOf is the prompt of a waiting command (SPEC §8): the text a
// person sees before the cursor, whichever stream wrote it, but only what
// this command wrote (line is its output after the last newline, both
// streams in the order they came, so an earlier command's unfinished
// line is not in it, nor is the part of a wrapped prompt on earlier
// rows lost) and, of that, only as much as the waiting job's processes
// wrote (`printf 'Sure? '; cat` leaves cat no prompt). A full-screen
// program has no line prompt: its prompt is empty and its screen is in
// the status.
func promptOf(st termwait.Status, line string) string {
	if st.Kind == termwait.KindTUI || line == "" || st.Wrote == 0 {
		return ""
	}
	p := render.Text([]byte(line))
	if st.Wrote > 0 && int64(len(p)) > st.Wrote {
		// Keep the last Wrote characters (a byte count of what was
		// written bounds the characters it shows).
		n := int(st.Wrote)
		i := len(p)
		for ; i > 0 && n > 0; n-- {
			_, size := utf8.DecodeLastRuneInString(p[:i])
			i -= size
		}
		p = p[i:]
	}
	return p
}

// matches reports whether the output since the last status matches re.
func (rt *Runtime) matches(c *exec.Job, re *regexp.Regexp, sent [2]int64) bool {
	for _, s := range []session.Stream{session.Stdout, session.Stderr} {
		if re.Match(c.Store().Since(s, sent[s], 1<<20).Data) {
			return true
		}
	}
	return false
}

// await waits until c exits, one of u's events happens, yield passes
// (0: never) or ctx ends (the caller went away: the command goes on).
func (rt *Runtime) await(ctx context.Context, c *exec.Job, u until, yield time.Duration) event {
	var yieldAt time.Time
	if yield > 0 {
		yieldAt = time.Now().Add(yield)
	}
	var pr probe
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		out := c.Watch().Next() // taken before looking, so no output is missed
		now := time.Now()
		ev, next := rt.check(c, u, &pr, now)
		if ev.reason != "" {
			return ev
		}
		if !yieldAt.IsZero() {
			if !now.Before(yieldAt) {
				return event{reason: protocol.ReasonYield}
			}
			if next.IsZero() || yieldAt.Before(next) {
				next = yieldAt
			}
		}
		var tc <-chan time.Time
		if !next.IsZero() {
			timer.Reset(next.Sub(now))
			tc = timer.C
		}
		select {
		case <-c.Done():
		case <-out:
		case <-tc:
		case <-ctx.Done():
			return event{reason: protocol.ReasonYield}
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
	}
}

// watchInput returns the wait c begins, once it is not last: a wait
// last told (last.in set) counts again only once input was typed since,
// or the wait was seen to end. It returns a zero told once c ends or ctx
// does. Unlike await it is not woken by each piece of output, only by its
// probe schedule, at most every watchGap: a stream's watch costs a busy
// command little.
func (rt *Runtime) watchInput(ctx context.Context, c *exec.Job, last told) told {
	var pr probe
	fresh := last.in == nil
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		now := time.Now()
		if !fresh && (!c.Marks().InputAt.Equal(last.inputAt) || !rt.waitingNow(c)) {
			fresh, pr = true, probe{}
		}
		wait := maxProbe // while the last wait goes on, or none is due
		if fresh {
			ev, next := rt.check(c, until{input: true}, &pr, now)
			switch ev.reason {
			case protocol.ReasonInput:
				return told{in: ev.input, inputAt: c.Marks().InputAt}
			case protocol.ReasonExit:
				return told{}
			}
			if !next.IsZero() {
				wait = max(next.Sub(now), watchGap)
			}
		}
		timer.Reset(wait)
		select {
		case <-c.Done():
			return told{}
		case <-ctx.Done():
			return told{}
		case <-timer.C:
		}
	}
}

// watchGap is the least time between two looks of watchInput.
const watchGap = 25 * time.Millisecond

// awaitAny is await over several commands: the first to exit or reach an
// event wins; a command whose exit no status has carried yet wins at once.
func (rt *Runtime) awaitAny(ctx context.Context, cs []*exec.Job, u until, timeout time.Duration) (*exec.Job, event) {
	deadline := time.Now().Add(timeout)
	probes := make([]probe, len(cs))
	tick := time.NewTicker(multiTick)
	defer tick.Stop()
	for {
		now := time.Now()
		for i, c := range cs {
			if ev, _ := rt.check(c, u, &probes[i], now); ev.reason != "" {
				return c, ev
			}
		}
		if !now.Before(deadline) {
			return nil, event{reason: protocol.ReasonYield}
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return nil, event{reason: protocol.ReasonYield}
		}
	}
}
