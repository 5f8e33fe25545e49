// Package leakcheck fails a test binary whose tests leave goroutines
// behind: every goroutine trl starts has an owner and an end.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Main runs the tests, then waits up to 10 s for the goroutines they
// started to end; any left are printed and the binary fails. Goroutines
// whose stack mentions one of keep (e.g. a process-lifetime reaper) are
// allowed to stay.
func Main(m *testing.M, keep ...string) {
	code := m.Run()
	if code == 0 {
		if leaked := wait(10*time.Second, keep); leaked != "" {
			fmt.Fprintf(os.Stderr, "leakcheck: goroutines still running after the tests:\n%s\n", leaked)
			code = 1
		}
	}
	os.Exit(code)
}

func wait(limit time.Duration, keep []string) string {
	deadline := time.Now().Add(limit)
	for {
		leaked := interesting(keep)
		if leaked == "" || time.Now().After(deadline) {
			return leaked
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// interesting returns the stacks of goroutines that are not the test
// runner's or the runtime's own.
func interesting(keep []string) string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		switch {
		case strings.Contains(g, "leakcheck.interesting"),
			strings.Contains(g, "testing.(*M)."),
			strings.Contains(g, "testing.runTests"),
			strings.Contains(g, "testing.tRunner"),
			strings.Contains(g, "runtime.goexit") && strings.Contains(g, "created by runtime"),
			strings.Contains(g, "os/signal.signal_recv"),
			strings.Contains(g, "runtime.ensureSigM"):
			continue
		}
		kept := false
		for _, k := range keep {
			kept = kept || strings.Contains(g, k)
		}
		if !kept && strings.TrimSpace(g) != "" {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
