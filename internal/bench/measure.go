package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Stats summarises latency samples. Durations are in microseconds in JSON
// so that the file reads without unit conversions.
type Stats struct {
	N      int     `json:"n"`
	P50US  float64 `json:"p50_us"`
	P90US  float64 `json:"p90_us"`
	P95US  float64 `json:"p95_us"`
	P99US  float64 `json:"p99_us"`
	MaxUS  float64 `json:"max_us"`
	MeanUS float64 `json:"mean_us"`
}

// Summarize computes nearest-rank percentiles over the samples. It sorts
// samples in place.
func Summarize(samples []time.Duration) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	slices.Sort(samples)
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return Stats{
		N:      len(samples),
		P50US:  us(percentile(samples, 0.50)),
		P90US:  us(percentile(samples, 0.90)),
		P95US:  us(percentile(samples, 0.95)),
		P99US:  us(percentile(samples, 0.99)),
		MaxUS:  us(samples[len(samples)-1]),
		MeanUS: us(sum / time.Duration(len(samples))),
	}
}

// percentile is the nearest-rank percentile of sorted samples: the
// smallest sample such that at least q of all samples are at or below it.
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func us(d time.Duration) float64 {
	return math.Round(float64(d)/float64(time.Microsecond)*10) / 10
}

// sample runs fn warm times unrecorded, then n times recorded, and returns
// the recorded durations. It stops at the first error.
func sample(warm, n int, fn func() error) ([]time.Duration, error) {
	for range warm {
		if err := fn(); err != nil {
			return nil, err
		}
	}
	out := make([]time.Duration, 0, n)
	for range n {
		t := time.Now()
		if err := fn(); err != nil {
			return out, err
		}
		out = append(out, time.Since(t))
	}
	return out, nil
}

// byTurns times several calls in rounds: warm unrecorded calls of each,
// then rounds of n/rounds recorded calls of each in turn, so that every
// series sees the same moments of the machine (a figure that moves with
// the host, such as which CPU a woken process lands on, moves all of them
// alike). It returns one series per fn, and stops at the first error.
func byTurns(warm, n, rounds int, fns ...func() error) ([][]time.Duration, error) {
	out := make([][]time.Duration, len(fns))
	for i, fn := range fns {
		for range warm {
			if err := fn(); err != nil {
				return out, err
			}
		}
		out[i] = make([]time.Duration, 0, n)
	}
	rounds = max(1, min(rounds, n))
	for r := range rounds {
		per := n / rounds
		if r < n%rounds {
			per++
		}
		for i, fn := range fns {
			for range per {
				t := time.Now()
				if err := fn(); err != nil {
					return out, err
				}
				out[i] = append(out[i], time.Since(t))
			}
		}
	}
	return out, nil
}

// ratio is a/b rounded to two decimals, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(a/b*100) / 100
}

// abExecRun runs command as exec.run on sessions a and b by turns (a, b,
// a, b, …), so that both see the same machine, and returns both
// summaries and b's p50 over a's. A run that exits non-zero is an error.
func (r *runner) abExecRun(a, b *Conn, ids [2]string, command string) (sa, sb Stats, ratio float64, err error) {
	conns := [2]*Conn{a, b}
	var samples [2][]time.Duration
	for k := 0; k < r.plan.warm+r.plan.latencyN; k++ {
		for i := range conns {
			t := time.Now()
			var res execResult
			if err := conns[i].Call("exec.run", execParams{SessionID: ids[i], Command: command}, &res); err != nil {
				return sa, sb, 0, fmt.Errorf("exec.run: %w", err)
			}
			if res.ExitCode != 0 {
				return sa, sb, 0, fmt.Errorf("exec.run exited %d", res.ExitCode)
			}
			if k >= r.plan.warm {
				samples[i] = append(samples[i], time.Since(t))
			}
		}
	}
	sa, sb = Summarize(samples[0]), Summarize(samples[1])
	if sa.P50US > 0 {
		ratio = sb.P50US / sa.P50US
	}
	return sa, sb, ratio, nil
}
