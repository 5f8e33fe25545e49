package bench

import (
	"fmt"
	"time"
)

// Sessions is session.create's latency and the daemon's memory: idle,
// and per idle session at two session counts.
type Sessions struct {
	IdleRSSBytes int64 `json:"idle_rss_bytes"`
	// Target is how many sessions were asked for; Created how many
	// the daemon made before the first error.
	Target  int           `json:"target"`
	Created int           `json:"created"`
	Create  *Stats        `json:"create,omitempty"`
	Steps   []SessionStep `json:"steps"`
	// ExecErrors counts failed exec.run calls when every session ran one
	// command, proving that all of them work at once.
	ExecErrors        int    `json:"exec_errors"`
	RSSAfterExecBytes int64  `json:"rss_after_exec_bytes"`
	Destroy           *Stats `json:"destroy,omitempty"`
	// Reused is the same number of sessions created again after the
	// first ones were destroyed. A fresh daemon's heap comes from
	// untouched zero pages that are not resident until written; the
	// second round gets the freed heap back, zeroed and resident, as a
	// daemon that has been running does.
	Reused *SessionStep `json:"reused,omitempty"`
	Error  string       `json:"error,omitempty"`
}

// SessionStep is the daemon's memory with Sessions idle sessions.
type SessionStep struct {
	Sessions        int   `json:"sessions"`
	RSSBytes        int64 `json:"rss_bytes"`
	PerSessionBytes int64 `json:"per_session_bytes"`
}

func (r *runner) sessions() *Sessions {
	p := r.plan
	out := &Sessions{Target: p.sessions, Steps: []SessionStep{}}
	c, err := r.dial()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer c.Close()
	if err := c.Call("system.ping", nil, nil); err != nil {
		out.Error = "system.ping: " + err.Error()
		return out
	}
	time.Sleep(p.settle)
	idle, err := r.rss()
	if err != nil {
		out.Error = "rss: " + err.Error()
		return out
	}
	out.IdleRSSBytes = idle

	ids, creates, err := r.createSessions(c, p.sessions, func(n int) error {
		if n != p.sessionsStep && n != p.sessions {
			return nil
		}
		st, err := r.step(n, idle)
		if err == nil {
			out.Steps = append(out.Steps, st)
		}
		return err
	})
	if err != nil {
		out.Error = err.Error()
	}
	out.Created = len(ids)
	if len(creates) > 0 {
		s := Summarize(creates)
		out.Create = &s
	}

	for _, id := range ids {
		if r.ctx.Err() != nil {
			break
		}
		var res execResult
		err := c.Call("exec.run", execParams{SessionID: id, Command: "true"}, &res)
		if err == nil && res.ExitCode != 0 {
			err = fmt.Errorf("true exited %d", res.ExitCode)
		}
		if err != nil {
			out.ExecErrors++
			if out.Error == "" {
				out.Error = "exec.run in every session: " + err.Error()
			}
		}
	}
	if rss, err := r.rss(); err == nil {
		out.RSSAfterExecBytes = rss
	}
	destroys, err := destroyAll(c, ids)
	if len(destroys) > 0 {
		s := Summarize(destroys)
		out.Destroy = &s
	}
	if err != nil {
		if out.Error == "" {
			out.Error = err.Error()
		}
		return out
	}

	if out.Error == "" {
		ids, _, err = r.createSessions(c, p.sessions, func(n int) error {
			if n != p.sessions {
				return nil
			}
			st, err := r.step(n, idle)
			if err == nil {
				out.Reused = &st
			}
			return err
		})
		if err != nil {
			out.Error = "second round: " + err.Error()
		}
		if _, err := destroyAll(c, ids); err != nil && out.Error == "" {
			out.Error = "second round: " + err.Error()
		}
	}
	return out
}

// createSessions creates up to n sessions, calling at(k) after the k-th,
// and returns the ids made (also on error, for the caller to destroy) and
// how long each create took.
func (r *runner) createSessions(c *Conn, n int, at func(k int) error) ([]string, []time.Duration, error) {
	var ids []string
	var times []time.Duration
	for len(ids) < n {
		if err := r.ctx.Err(); err != nil {
			return ids, times, err
		}
		t := time.Now()
		id, err := newSession(c)
		if err != nil {
			return ids, times, fmt.Errorf("session.create #%d: %w", len(ids)+1, err)
		}
		times = append(times, time.Since(t))
		ids = append(ids, id)
		if err := at(len(ids)); err != nil {
			return ids, times, fmt.Errorf("rss: %w", err)
		}
	}
	return ids, times, nil
}

// step lets the daemon settle and reads its memory with n sessions.
func (r *runner) step(n int, idle int64) (SessionStep, error) {
	time.Sleep(r.plan.settle)
	rss, err := r.rss()
	if err != nil {
		return SessionStep{Sessions: n}, err
	}
	return SessionStep{Sessions: n, RSSBytes: rss, PerSessionBytes: (rss - idle) / int64(n)}, nil
}

// destroyAll destroys every session, even after a failure (1,000 shells
// must not outlive the benchmark), and returns how long each took and the
// first error.
func destroyAll(c *Conn, ids []string) ([]time.Duration, error) {
	var times []time.Duration
	var first error
	for _, id := range ids {
		t := time.Now()
		if err := destroySession(c, id); err != nil && first == nil {
			first = fmt.Errorf("session.destroy: %w", err)
		}
		times = append(times, time.Since(t))
	}
	return times, first
}
