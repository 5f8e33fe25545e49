package bench

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Parallel is exec.run of `true` from several clients at once, each on
// its own connection and its own session.
type Parallel struct {
	DurationS float64 `json:"duration_s"`
	Levels    []Level `json:"levels"`
	Error     string  `json:"error,omitempty"`
}

// Level is one number of parallel clients.
type Level struct {
	Clients    int     `json:"clients"`
	Calls      int     `json:"calls"`
	ExecPerSec float64 `json:"exec_per_s"`
	Latency    *Stats  `json:"latency,omitempty"`
	Errors     int     `json:"errors"`
	FirstError string  `json:"first_error,omitempty"`
}

func (r *runner) parallel() *Parallel {
	p := r.plan
	out := &Parallel{DurationS: p.parallelFor.Seconds(), Levels: []Level{}}
	for _, n := range p.parallelClients {
		if r.ctx.Err() != nil {
			out.Error = r.ctx.Err().Error()
			break
		}
		lv, err := r.level(n)
		if err != nil {
			out.Error = fmt.Sprintf("%d clients: %v", n, err)
			break
		}
		out.Levels = append(out.Levels, lv)
	}
	return out
}

type worker struct {
	c       *Conn
	session string
	samples []time.Duration
	errors  int
	first   error
}

// level runs n clients for the plan's duration after a warm-up.
func (r *runner) level(n int) (Level, error) {
	lv := Level{Clients: n}
	workers := make([]*worker, 0, n)
	defer func() {
		for _, w := range workers {
			destroySession(w.c, w.session)
			w.c.Close()
		}
	}()
	for range n {
		c, err := r.dial()
		if err != nil {
			return lv, err
		}
		id, err := newSession(c)
		if err != nil {
			c.Close()
			return lv, fmt.Errorf("session.create: %w", err)
		}
		workers = append(workers, &worker{c: c, session: id, samples: make([]time.Duration, 0, 1<<14)})
	}

	var wg, ready sync.WaitGroup
	ready.Add(n)
	start := make(chan struct{})
	var began time.Time
	for _, w := range workers {
		wg.Go(func() {
			params := execParams{SessionID: w.session, Command: "true"}
			call := func() error {
				var res execResult
				if err := w.c.Call("exec.run", params, &res); err != nil {
					return err
				}
				if res.ExitCode != 0 {
					return &CallError{Code: "EXIT", Message: fmt.Sprintf("true exited %d", res.ExitCode)}
				}
				return nil
			}
			for range 20 {
				call()
			}
			ready.Done()
			<-start
			end := began.Add(r.plan.parallelFor)
			for {
				t := time.Now()
				if t.After(end) {
					return
				}
				err := call()
				if err == nil {
					w.samples = append(w.samples, time.Since(t))
					continue
				}
				w.errors++
				if w.first == nil {
					w.first = err
				}
				var ce *CallError
				if !errors.As(err, &ce) {
					return // the connection is broken; this client is done
				}
			}
		})
	}
	// Every client finishes its warm-up before the clock starts.
	ready.Wait()
	began = time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)

	var all []time.Duration
	for _, w := range workers {
		all = append(all, w.samples...)
		lv.Errors += w.errors
		if w.first != nil && lv.FirstError == "" {
			lv.FirstError = w.first.Error()
		}
	}
	lv.Calls = len(all)
	lv.ExecPerSec = math.Round(float64(len(all)) / elapsed.Seconds())
	if len(all) > 0 {
		s := Summarize(all)
		lv.Latency = &s
	}
	return lv, nil
}
