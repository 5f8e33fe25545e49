package metrics

import "github.com/prometheus/client_golang/prometheus"

// usage reports the sessions' summed resource use at each scrape, one
// read of every session for the four series.
type usage struct {
	read                   func() (int64, float64, int64, int64)
	memory, cpu, pids, oom *prometheus.Desc
}

func usageCollector(read func() (int64, float64, int64, int64)) prometheus.Collector {
	return &usage{
		read:   read,
		memory: prometheus.NewDesc("trl_sessions_memory_bytes", "Memory the live sessions' processes use now, summed (cgroup memory.current).", nil, nil),
		cpu:    prometheus.NewDesc("trl_sessions_cpu_seconds", "CPU time the live sessions' processes have used, summed (cgroup cpu.stat).", nil, nil),
		pids:   prometheus.NewDesc("trl_sessions_pids", "Processes and threads of the live sessions now, summed (cgroup pids.current).", nil, nil),
		oom:    prometheus.NewDesc("trl_sessions_oom_kills", "Processes of the live sessions the OOM killer ended, summed.", nil, nil),
	}
}

func (u *usage) Describe(ch chan<- *prometheus.Desc) {
	ch <- u.memory
	ch <- u.cpu
	ch <- u.pids
	ch <- u.oom
}

func (u *usage) Collect(ch chan<- prometheus.Metric) {
	mem, cpu, pids, oom := u.read()
	ch <- prometheus.MustNewConstMetric(u.memory, prometheus.GaugeValue, float64(mem))
	ch <- prometheus.MustNewConstMetric(u.cpu, prometheus.GaugeValue, cpu)
	ch <- prometheus.MustNewConstMetric(u.pids, prometheus.GaugeValue, float64(pids))
	ch <- prometheus.MustNewConstMetric(u.oom, prometheus.GaugeValue, float64(oom))
}
