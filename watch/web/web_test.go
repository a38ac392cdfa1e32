package web

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/cotrain/cotrain/watch"
)

// feed publishes a small run: two workers join, three iterations close, one
// worker is late, one is parked, one evaluation.
func feed(r *watch.Recorder) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	ev := func(s float64, kind string, d any) { r.Handle(watch.Event{Kind: kind, Time: at(s), Data: d}) }
	ev(0, "listening", &watch.Session{Role: "hub", Name: "lab", Model: "lenet5", Policy: "adaptive", Codec: "fp16", Batch: 64, Iterations: 100})
	ev(1, watch.KindJoined, &watch.Peer{ID: "peerA", Name: "pixel-7", Backend: "opencl"})
	ev(1.5, watch.KindJoined, &watch.Peer{ID: "peerB", Name: "galaxy", Backend: "cpu"})
	ev(1.5, watch.KindStarted, &watch.Peer{Workers: 2})
	for i := 1; i <= 3; i++ {
		ev(1.5+float64(i), watch.KindProgress, &watch.Progress{Iteration: uint64(i), Loss: 2.0 / float64(i), LR: 0.004, Samples: 64,
			SamplesPerSec: 64, BytesUp: 1000, BytesDown: 2000, Seconds: 1, Workers: []watch.Tick{
				{ID: "peerA", Name: "pixel-7", Batch: 40, Next: 48, ComputeMS: 400, CommMS: 100, WaitMS: 500, BytesUp: 500, BytesDown: 1000},
				{ID: "peerB", Name: "galaxy", Batch: 24, Next: 16, ComputeMS: 800, CommMS: 150, WaitMS: 50, BytesUp: 500, BytesDown: 1000},
			}})
	}
	ev(5, watch.KindLate, &watch.Peer{Iteration: 3, ID: "peerB", Name: "galaxy"})
	ev(5.5, watch.KindParked, &watch.Peer{Iteration: 3, ID: "peerB", Name: "galaxy", Text: "its comm costs more than it adds"})
	ev(6, watch.KindEval, &watch.Eval{Iteration: 3, Samples: 2000, Loss: 0.5, Accuracy: 0.91})
}

func TestStatusAndMetricsOverHTTP(t *testing.T) {
	r := watch.NewRecorder("hub", nil)
	feed(r)
	srv := httptest.NewServer(Handler(r))
	defer srv.Close()

	res, err := http.Get(srv.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	var st watch.Status
	if err := json.NewDecoder(res.Body).Decode(&st); err != nil || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("status: %v %s", err, res.Header.Get("Content-Type"))
	}
	res.Body.Close()
	if st.Iteration != 3 || len(st.Workers) != 2 {
		t.Errorf("status %+v", st)
	}

	res, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// The legacy scheme is the strict one: names Prometheus servers of
	// every version accept.
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(res.Body)
	if err != nil {
		t.Fatalf("metrics do not parse: %v", err)
	}
	gauge := func(name string, labels ...string) float64 {
		t.Helper()
		f := fams[name]
		if f == nil {
			t.Fatalf("no metric %s", name)
		}
	next:
		for _, m := range f.Metric {
			for i := 0; i < len(labels); i += 2 {
				found := false
				for _, l := range m.Label {
					if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
						found = true
					}
				}
				if !found {
					continue next
				}
			}
			switch {
			case m.Gauge != nil:
				return m.Gauge.GetValue()
			case m.Counter != nil:
				return m.Counter.GetValue()
			}
		}
		t.Fatalf("%s%v not found", name, labels)
		return 0
	}
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"cotrain_iteration", nil, 3},
		{"cotrain_samples_total", nil, 192},
		{"cotrain_test_accuracy", nil, 0.91},
		{"cotrain_loss", nil, 2.0 / 3},
		{"cotrain_gradient_bytes_total", []string{"direction", "down"}, 6000},
		{"cotrain_workers", []string{"state", "parked"}, 1},
		{"cotrain_worker_batch", []string{"name", "pixel-7"}, 48},
		{"cotrain_worker_batch_share", []string{"worker", "peerA"}, 0.75},
		{"cotrain_worker_samples_per_second", []string{"name", "galaxy"}, 30},
		{"cotrain_worker_late_total", []string{"name", "galaxy"}, 1},
		{"cotrain_worker_gradient_bytes_total", []string{"name", "pixel-7", "direction", "up"}, 1500},
		{"cotrain_worker_last_iteration_seconds", []string{"name", "galaxy", "phase", "compute"}, 0.8},
	} {
		if got := gauge(c.name, c.labels...); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}

	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/", 200}, {"HEAD", "/", 200}, {"GET", "/nope", 404}, {"POST", "/api/status", 405}, {"DELETE", "/", 405},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.code {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, res.StatusCode, c.code)
		}
	}
}

// sse reads Server-Sent Events from body and sends each data line's JSON.
func sse(body *bufio.Reader, out chan<- map[string]any) {
	defer close(out)
	for {
		line, err := body.ReadString('\n')
		if err != nil {
			return
		}
		if d, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), "data: "); ok {
			var m map[string]any
			if json.Unmarshal([]byte(d), &m) == nil {
				out <- m
			}
		}
	}
}

func TestEventStream(t *testing.T) {
	bus := &watch.Bus{}
	r := watch.NewRecorder("hub", bus)
	defer bus.Close()
	srv := httptest.NewServer(Handler(r))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL+"/api/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	got := make(chan map[string]any, 16)
	go sse(bufio.NewReader(res.Body), got)
	// The stream is open once the recorder counts it.
	for r.Status().Clients != 1 {
		time.Sleep(time.Millisecond)
	}
	bus.Publish(watch.KindJoined, &watch.Peer{ID: "12D3KooWfull", Name: "pixel"})
	bus.Publish(watch.KindProgress, &watch.Progress{Iteration: 1, Loss: 2.5, Workers: []watch.Tick{{ID: "12D3KooWfull", Batch: 8}}})
	bus.Publish(watch.KindLate, &watch.Peer{Iteration: 1, ID: "12D3KooWfull", Name: "pixel"})
	for i, want := range []string{"joined", "progress", "late"} {
		select {
		case m := <-got:
			if m["event"] != want || m["time"] == nil {
				t.Errorf("event %d: %v, want %s", i, m, want)
			}
			if want == "joined" && (m["peer"] != "12D3KooWfull" || m["name"] != "pixel") {
				t.Errorf("joined %v", m)
			}
		case <-ctx.Done():
			t.Fatalf("event %d (%s) never came", i, want)
		}
	}
}
