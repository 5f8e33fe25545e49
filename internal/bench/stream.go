package bench

import (
	"fmt"
	"slices"
	"time"
)

// Stream is exec.stream of a large output to the client beside the same
// command's output read raw from a PTY in the benchmark's process.
type Stream struct {
	Bytes   int    `json:"bytes"`
	Command string `json:"command"`
	Runs    int    `json:"runs"`
	// Medians over the runs, which alternate raw and stream. StreamMBps
	// counts only the bytes that reached the client: a client that falls
	// more than the stream window behind loses output (LostBytes, summed
	// over the runs), and lost bytes are not throughput.
	RawPTYSeconds float64 `json:"raw_pty_s"`
	RawPTYMBps    float64 `json:"raw_pty_mb_s"`
	StreamSeconds float64 `json:"stream_s"`
	StreamMBps    float64 `json:"stream_mb_s"`
	Ratio         float64 `json:"ratio"`
	// CPU seconds per streamed run: the daemon's, and the benchmark
	// client's (decoding the notifications); RawReaderCPU is the raw
	// reader's. On a 2-core machine they compete with the command.
	DaemonCPUSeconds float64 `json:"daemon_cpu_s,omitempty"`
	ClientCPUSeconds float64 `json:"client_cpu_s"`
	RawReaderCPU     float64 `json:"raw_reader_cpu_s"`
	Notifications    int     `json:"notifications"`
	LostBytes        int64   `json:"lost_bytes"`
	Error            string  `json:"error,omitempty"`
}

func (r *runner) stream() *Stream {
	p := r.plan
	out := &Stream{Bytes: p.streamBytes, Command: outputCommand(p.streamBytes), Runs: p.streamRuns}
	c, id, done, err := r.dialSession()
	if err != nil {
		out.Error = err.Error()
		return out
	}
	defer done()

	var raw, streamed []time.Duration
	var rates []float64
	var daemonCPU, clientCPU, rawCPU time.Duration
	for range p.streamRuns {
		cpu := selfCPU()
		d, n, err := rawPTY(out.Command)
		rawCPU += selfCPU() - cpu
		if err == nil && n != int64(p.streamBytes) {
			err = fmt.Errorf("read %d bytes, want %d", n, p.streamBytes)
		}
		if err != nil {
			out.Error = "raw PTY: " + err.Error()
			return out
		}
		raw = append(raw, d)

		dcpu, ccpu := r.daemonCPU(), selfCPU()
		d, got, err := r.streamOnce(c, id, out)
		daemonCPU += r.daemonCPU() - dcpu
		clientCPU += selfCPU() - ccpu
		if err != nil {
			out.Error = "exec.stream: " + err.Error()
			return out
		}
		streamed = append(streamed, d)
		rates = append(rates, mbps(int(got), d))
	}
	rawMed := median(raw)
	out.RawPTYSeconds, out.StreamSeconds = seconds(rawMed), seconds(median(streamed))
	out.RawPTYMBps = mbps(p.streamBytes, rawMed)
	slices.Sort(rates)
	out.StreamMBps = rates[len(rates)/2]
	out.Ratio = ratio(out.StreamMBps, out.RawPTYMBps)
	runs := time.Duration(p.streamRuns)
	if r.d != nil {
		out.DaemonCPUSeconds = seconds(daemonCPU / runs)
	}
	out.ClientCPUSeconds = seconds(clientCPU / runs)
	out.RawReaderCPU = seconds(rawCPU / runs)
	return out
}

// streamOnce runs one exec.stream and reads it to its exec.exit, checking
// that every byte came in order or was reported lost. It returns the time
// and the bytes received.
func (r *runner) streamOnce(c *Conn, session string, out *Stream) (time.Duration, int64, error) {
	start := time.Now()
	var started struct {
		StreamID string `json:"stream_id"`
	}
	if err := c.Call("exec.stream", execParams{SessionID: session, Command: out.Command}, &started); err != nil {
		return 0, 0, err
	}
	var got, lost, seq int64
	notes := 0
	for {
		n, err := c.Next()
		if err != nil {
			return 0, 0, err
		}
		if n.StreamID != started.StreamID {
			continue
		}
		notes++
		if n.Method == "exec.exit" {
			elapsed := time.Since(start)
			out.Notifications = notes
			out.LostBytes += lost
			switch {
			case n.ExitCode != 0:
				return 0, 0, fmt.Errorf("the command exited %d", n.ExitCode)
			case got+lost != int64(out.Bytes):
				return 0, 0, fmt.Errorf("received %d bytes (%d lost), want %d", got, lost, out.Bytes)
			}
			return elapsed, got, nil
		}
		if n.Seq != seq {
			return 0, 0, fmt.Errorf("notification seq %d, want %d", n.Seq, seq)
		}
		seq++
		if n.Stream == "stdout" {
			got += int64(len(n.Data))
			lost += n.LostBytes
		}
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func seconds(d time.Duration) float64 { return float64(d.Milliseconds()) / 1000 }

// mbps is throughput in MB/s (10^6 bytes), to one decimal.
func mbps(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(int(float64(n)/d.Seconds()/1e5)) / 10
}
