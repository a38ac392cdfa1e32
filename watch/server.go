package watch

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// subscriber is one /api/events stream.
type subscriber struct {
	ch chan message
}

type message struct {
	id   uint64
	data []byte
}

// SubscriberQueue is how many events may wait for one /api/events client;
// one that falls this far behind is dropped. MaxSubscribers bounds the
// streams open at once (more are answered 503).
const (
	SubscriberQueue = 256
	MaxSubscribers  = 64
)

// WriteTimeout bounds each write to an HTTP client: a client that takes
// longer (stalled, or gone without closing) loses its connection.
const WriteTimeout = 10 * time.Second

// subscribe adds a stream, or returns nil when MaxSubscribers are open.
func (r *Recorder) subscribe() *subscriber {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.subs) >= MaxSubscribers {
		return nil
	}
	s := &subscriber{ch: make(chan message, SubscriberQueue)}
	r.subs[s] = struct{}{}
	r.version++ // Clients changed
	return s
}

// unsubscribe removes s and closes its channel; r.mu must be held.
func (r *Recorder) unsubscribe(s *subscriber) {
	if _, ok := r.subs[s]; ok {
		r.version++
		delete(r.subs, s)
		close(s.ch)
	}
}

func (r *Recorder) leave(s *subscriber) {
	r.mu.Lock()
	r.unsubscribe(s)
	r.mu.Unlock()
}

// Handler returns the read-only HTTP side of a watched run:
//
//	/             the dashboard page (embedded; it needs nothing else)
//	/api/status   Status as JSON
//	/api/events   the events as Server-Sent Events (one "data:" line each)
//	/metrics      Prometheus text format
//
// Every other path is 404, every method but GET and HEAD 405.
func (r *Recorder) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", r.servePage)
	mux.HandleFunc("GET /api/status", r.serveStatus)
	mux.HandleFunc("GET /api/events", r.serveEvents)
	mux.Handle("GET /metrics", r.metricsHandler())
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

func (r *Recorder) serveStatus(w http.ResponseWriter, _ *http.Request) {
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
func (r *Recorder) serveEvents(w http.ResponseWriter, req *http.Request) {
	s := r.subscribe()
	if s == nil {
		http.Error(w, fmt.Sprintf("already %d event streams open", MaxSubscribers), http.StatusServiceUnavailable)
		return
	}
	defer r.leave(s)
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
		case m, ok := <-s.ch:
			if !ok {
				return // dropped: too slow
			}
			buf.Reset()
			buf.WriteString("id: ")
			buf.WriteString(strconv.FormatUint(m.id, 10))
			buf.WriteString("\ndata: ")
			buf.Write(m.data) // JSON has no raw newline
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
