package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Probes answers the orchestrator's health checks.
type Probes struct {
	// Ready returns nil when the daemon takes new work, else why not
	// (draining, at the session limit); nil Ready means always ready.
	Ready func() error
}

// ServeHTTP answers GET /livez (the process answers: 200) and GET /readyz
// (200, or 503 with the reason); other paths get 404.
func (p Probes) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "this path takes GET", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	switch r.URL.Path {
	case "/livez":
		writeText(w, http.StatusOK, "ok\n")
	case "/readyz":
		if p.Ready != nil {
			if err := p.Ready(); err != nil {
				writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error()+"\n")
				return
			}
		}
		writeText(w, http.StatusOK, "ok\n")
	default:
		http.NotFound(w, r)
	}
}

// Handler serves /metrics from p's registry.
func (p *Prometheus) Handler() http.Handler {
	return promhttp.HandlerFor(p.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Mux serves /metrics, /livez and /readyz: what `trl serve --metrics
// ADDR` listens with (no token: bind it where only the scraper and the
// kubelet reach).
func Mux(p *Prometheus, probes Probes) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", p.Handler())
	mux.Handle("/livez", probes)
	mux.Handle("/readyz", probes)
	return mux
}

func writeText(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	w.Write([]byte(body))
}
