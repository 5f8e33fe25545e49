package bench

import (
	"os"
	goruntime "runtime"
	"strings"
)

// Machine describes where the run happened: absolute numbers mean
// nothing without it.
type Machine struct {
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpu_model"`
	Kernel     string `json:"kernel"`
	Go         string `json:"go"`
	TRLVersion string `json:"trl_version"`
	// LoadAvg is the 1-minute load average when the run started: other
	// work on a 2-core machine shows up in every tail latency.
	LoadAvg string `json:"load_avg_1m"`
}

func machine() Machine {
	m := Machine{CPUs: goruntime.NumCPU(), Go: goruntime.Version()}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 0 {
			m.LoadAvg = f[0]
		}
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}
