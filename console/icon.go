package console

import (
	"net/http"
)

// serveIcon answers the browser's icon requests without a login, so the
// login and "not logged in" pages do not log a 401 for them: the page's
// own icon (static/favicon.svg, linked from index.html), and 204 No
// Content for the /favicon.ico a browser tries by itself.
func serveIcon(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/favicon.ico" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b, err := static.ReadFile("static/favicon.svg")
	if err != nil {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "image/svg+xml")
	w.Header().Set("Cache-Control", "max-age=86400")
	_, _ = w.Write(b)
}
