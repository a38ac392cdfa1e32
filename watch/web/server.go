// Package web is the HTTP side of a watched run: the dashboard page, its
// status and event stream, and the Prometheus metrics, all read from a
// watch.Recorder. It is a package of its own so that what publishes events
// (the hub's and the worker's drivers, the simulator) links no net/http and
// no Prometheus: only the binaries that serve a dashboard import it.
//
// Caller's duties:
//  1. Build a watch.Recorder on the run's Bus (watch.NewRecorder).
//  2. Check a --http value with CheckAddr while parsing flags.
//  3. Serve the recorder (Serve, or Handler under a server of your own);
//     call the stop function Serve returns when the run is over.
package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/cotrain/cotrain/watch"
)

// WriteTimeout bounds each write to an HTTP client: a client that takes
// longer (stalled, or gone without closing) loses its connection.
const WriteTimeout = 10 * time.Second

// Handler returns the read-only HTTP side of the run r records:
//
//	/             the dashboard page (embedded; it needs nothing else)
//	/api/status   Status as JSON
//	/api/events   the events as Server-Sent Events (one "data:" line each)
//	/metrics      Prometheus text format
//
// Every other path is 404, every method but GET and HEAD 405.
func Handler(r *watch.Recorder) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", servePage)
	mux.HandleFunc("GET /api/status", func(w http.ResponseWriter, req *http.Request) { serveStatus(r, w, req) })
	mux.HandleFunc("GET /api/events", func(w http.ResponseWriter, req *http.Request) { serveEvents(r, w, req) })
	mux.Handle("GET /metrics", metricsHandler(r))
	return readOnly(mux)
}

// readOnly refuses every method but GET and HEAD, and sets headers that
// keep the page from being framed or sniffed.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "read-only: GET or HEAD", http.StatusMethodNotAllowed)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		h.ServeHTTP(w, req)
	})
}

func servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src 'self' data:")
	w.Write(watch.Page())
}

func serveStatus(r *watch.Recorder, w http.ResponseWriter, _ *http.Request) {
	b, err := r.StatusJSON()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(WriteTimeout))
	w.Write(b)
}

// serveEvents streams the events published from now on. A comment line
// goes out every 15 s so that proxies and browsers keep the stream open.
func serveEvents(r *watch.Recorder, w http.ResponseWriter, req *http.Request) {
	s := r.Subscribe()
	if s == nil {
		// Closed after the answer: a refused client must not keep a
		// connection (and a descriptor) open by keep-alive.
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("already %d event streams open", watch.MaxSubscribers), http.StatusServiceUnavailable)
		return
	}
	defer r.Unsubscribe(s)
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		rc.SetWriteDeadline(time.Now().Add(WriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: 2000\n: cotrain events\n\n")) {
		return
	}
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	var buf bytes.Buffer
	for {
		select {
		case m, ok := <-s.C():
			if !ok {
				return // dropped: too slow
			}
			buf.Reset()
			buf.WriteString("id: ")
			buf.WriteString(strconv.FormatUint(m.ID, 10))
			buf.WriteString("\ndata: ")
			buf.Write(m.Data) // JSON has no raw newline
			buf.WriteString("\n\n")
			if !write(buf.Bytes()) {
				return
			}
		case <-keep.C:
			if !write([]byte(": keep-alive\n\n")) {
				return
			}
		case <-req.Context().Done():
			return
		}
	}
}
