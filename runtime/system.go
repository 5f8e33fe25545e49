package runtime

import (
	"bytes"
	"context"
	"os"
	goruntime "runtime"
	"strconv"
	"time"

	"github.com/trl-project/trl/protocol"
)

// SystemPing is the typed systemPing.
func (rt *Runtime) SystemPing(ctx context.Context, p protocol.PingParams) (protocol.PingResult, error) {
	return serve(rt, ctx, protocol.MethodSystemPing, func() (protocol.PingResult, error) { return rt.systemPing(ctx, p) })
}

func (rt *Runtime) systemPing(ctx context.Context, p protocol.PingParams) (protocol.PingResult, error) {
	return protocol.PingResult{UptimeS: time.Since(rt.started).Seconds(), Version: Version, StartedAt: rt.started.UTC().Format(time.RFC3339Nano)}, nil
}

// SystemStats is the typed systemStats.
func (rt *Runtime) SystemStats(ctx context.Context, p protocol.StatsParams) (protocol.StatsResult, error) {
	return serve(rt, ctx, protocol.MethodSystemStats, func() (protocol.StatsResult, error) { return rt.systemStats(ctx, p) })
}

func (rt *Runtime) systemStats(ctx context.Context, p protocol.StatsParams) (protocol.StatsResult, error) {
	running, addressable, total := rt.jobs.Counts()
	return protocol.StatsResult{
		ActiveSessions:   rt.sessions.Len(),
		TotalCommandsRun: total,
		UptimeS:          time.Since(rt.started).Seconds(),
		MemoryRSSBytes:   rssBytes(),
		RunningCommands:  running,
		Streams:          addressable,
		Goroutines:       goruntime.NumGoroutine(),
		OpenFDs:          openFDs(),
		Version:          Version,
		Limits:           rt.limits(),
	}, nil
}

// limits reports every configured limit, so an operator can see what a
// LIMIT_EXCEEDED was about.
func (rt *Runtime) limits() map[string]int64 {
	l := map[string]int64{
		"max_sessions":         int64(rt.sessions.MaxSessions()),
		"max_output_bytes":     rt.opts.MaxOutputBytes,
		"stream_window_bytes":  int64(rt.jobs.Options().Window),
		"stream_retain_s":      int64(rt.jobs.Options().Retain.Seconds()),
		"max_finished_streams": int64(rt.jobs.Options().MaxFinished),
		"max_timeout_s":        maxTimeoutS,
	}
	for k, v := range rt.opts.TransportLimits {
		l[k] = v
	}
	return l
}

// rssBytes reads the daemon's resident set size from /proc/self/statm.
func rssBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}

// openFDs counts the daemon's open file descriptors.
func openFDs() int {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return -1
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	return len(names) - 1 // the directory itself
}
