package main

import (
	"context"
	"flag"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/trl-project/trl/metrics"
	"github.com/trl-project/trl/runtime"
)

// metricsFlags is serve's --metrics flag.
type metricsFlags struct{ addr string }

func (f *metricsFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.addr, "metrics", "", "also serve GET /metrics, /livez and /readyz without a token on ADDR (e.g. :9090, for a scraper and kubelet probes); --http serves them too, /metrics behind the token")
}

// observability is the Prometheus recorder, the probes and the optional
// --metrics listener of one daemon.
type observability struct {
	prom   *metrics.Prometheus
	probes metrics.Probes
	srv    *http.Server
	served chan error
}

// install makes rt's metrics the process-wide recorder and binds --metrics
// when it was given.
func (f *metricsFlags) install(log zerolog.Logger, rt *runtime.Runtime) (*observability, error) {
	o := &observability{
		prom: metrics.New(metrics.Options{
			Version:         runtime.Version,
			ActiveSessions:  rt.SessionCount,
			RunningCommands: rt.RunningCommands,
			SessionUsage:    rt.SessionUsage,
		}),
		probes: metrics.Probes{Ready: rt.Ready},
	}
	metrics.Set(o.prom)
	if f.addr == "" {
		return o, nil
	}
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		return nil, err
	}
	o.srv = &http.Server{Handler: metrics.Mux(o.prom, o.probes), ReadHeaderTimeout: 10 * time.Second}
	o.served = make(chan error, 1)
	go func() { o.served <- o.srv.Serve(ln) }()
	log.Info().Str("metrics", ln.Addr().String()).Msg("serving /metrics, /livez and /readyz")
	return o, nil
}

// close stops the --metrics listener; it is the last to go so that /readyz
// says "draining" for as long as the daemon shuts down.
func (o *observability) close() {
	if o == nil || o.srv == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := o.srv.Shutdown(ctx); err != nil {
		o.srv.Close()
	}
	<-o.served // http.ErrServerClosed
}
