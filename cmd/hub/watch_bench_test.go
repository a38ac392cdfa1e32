package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/watch"
	"github.com/cotrain/cotrain/watch/web"
)

// dashboardClient is what one open dashboard page costs the hub: the event
// stream, read as it comes, and /api/status fetched again after each
// event, at most every 150 ms (as the page does).
func dashboardClient(ctx context.Context, base string) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return
	}
	defer res.Body.Close()
	events := make(chan struct{}, 1)
	go func() {
		rd := bufio.NewReader(res.Body)
		for {
			if _, err := rd.ReadString('\n'); err != nil {
				close(events)
				return
			}
			select {
			case events <- struct{}{}:
			default:
			}
		}
	}()
	for range events {
		time.Sleep(150 * time.Millisecond)
		req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/status", nil)
		if res, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
		}
	}
}

// phases runs a hub with a dashboard (watch.Recorder behind an HTTP
// server, as hub --http has it) and two workers in this process over real
// libp2p streams on loopback, LeNet-5, 64 samples a worker, for 2·rounds
// phases of perPhase iterations: in every other phase `clients` dashboard
// clients are connected. It returns the mean iteration time of each phase
// without and with clients, the first 3 iterations of each phase (the
// clients connecting or leaving) not counted.
func phases(tb testing.TB, rounds, perPhase, clients int) (off, on []float64) {
	const perWorker, workers = 64, 2
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	total := 2 * rounds * perPhase
	hh, d, threads := loopbackHub(tb, ctx, workers, perWorker, uint64(total))
	defer hh.Close()

	bus := &watch.Bus{}
	rec := watch.NewRecorder("hub", bus)
	defer bus.Close()
	srv := httptest.NewServer(web.Handler(rec))
	defer srv.Close()

	// The clients of a phase run until its context ends.
	var mu sync.Mutex
	stopClients := func() {}
	var wg sync.WaitGroup
	setClients := func(on bool) {
		mu.Lock()
		defer mu.Unlock()
		stopClients()
		wg.Wait()
		stopClients = func() {}
		if !on {
			return
		}
		cctx, stop := context.WithCancel(ctx)
		stopClients = stop
		for range clients {
			wg.Add(1)
			go func() { defer wg.Done(); dashboardClient(cctx, srv.URL) }()
		}
	}
	defer setClients(false)

	var merged []time.Time
	var count atomic.Int64
	phase := make(chan int, 2*rounds)
	d.Watch = bus
	d.OnReady = func(rd hub.Ready) {
		for _, e := range rd.Events {
			if e.Kind == hub.EventMerged {
				merged = append(merged, time.Now())
				if n := count.Add(1); n%int64(perPhase) == 0 && n < int64(total) {
					phase <- int(n) / perPhase // never blocks: buffered for every phase
				}
			}
		}
	}
	go func() {
		for p := range phase {
			setClients(p%2 == 1)
		}
	}()
	hubErr := make(chan error, 1)
	go func() { hubErr <- d.Run(ctx) }()
	workErr, closeWorkers := startLoopbackWorkers(tb, ctx, hh, workers, perWorker, threads)
	defer closeWorkers()
	for range workers {
		if err := <-workErr; err != nil {
			tb.Fatal(err)
		}
	}
	if err := <-hubErr; err != nil {
		tb.Fatal(err)
	}
	close(phase)
	if len(merged) != total {
		tb.Fatalf("%d merges, want %d", len(merged), total)
	}
	// The recorder is a sink on its own goroutine, which may still be
	// behind the driver (on a loaded machine, by several events): Close
	// lets it handle what is queued.
	bus.Close()
	if st := rec.Status(); st.Dropped != 0 || st.Iteration != uint64(total) {
		tb.Errorf("the dashboard saw iteration %d of %d and dropped %d events", st.Iteration, total, st.Dropped)
	}
	// Phase p covers merges p·perPhase … (p+1)·perPhase-1; the 3 after a
	// switch are not counted.
	for p := range 2 * rounds {
		a, b := p*perPhase+3, (p+1)*perPhase-1
		if p == 0 {
			a = 10 // connections and first-use allocations
		}
		ms := float64(merged[b].Sub(merged[a]).Microseconds()) / 1e3 / float64(b-a)
		if p%2 == 1 {
			on = append(on, ms)
		} else {
			off = append(off, ms)
		}
	}
	return off, on
}

// pairRatio is the median over the rounds of on[i]/off[i]: each phase with
// clients against the phase without just before it, so that a change of
// the machine's load between rounds cancels out.
func pairRatio(off, on []float64) float64 {
	r := make([]float64, len(on))
	for i := range on {
		r[i] = on[i] / off[i]
	}
	return median(r)
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// TestDashboardClientsDoNotSlowTheBarrier: ten dashboard clients (event
// stream plus status reads) connected in alternate phases of one run; the
// iteration time of each phase with them over that of the phase without
// just before it, median over 6 such pairs of 20 iterations each, must stay under 1.5 (a bound for a loaded CI machine; the figures
// measured are in docs/dashboard.md). The clients share this machine's cores with
// the hub and the two workers, so what the ratio shows above 1 is CPU
// taken, not waiting: the driver never waits for an observer (watch's
// TestBusNeverBlocks, TestSlowClientIsDropped, which fail if it does). The
// ratio is a coarse guard against gross serving costs only: with the bus
// and the recorder changed to wait for every client (fast readers here),
// it measured 1.18, and with a keep-alive every 200 µs 1.05, both under
// the bound; on a machine at load average 6–12 it measured 0.74–1.13.
func TestDashboardClientsDoNotSlowTheBarrier(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 240 iterations in process; skipped with -short")
	}
	off, on := phases(t, 6, 20, 10)
	ratio := pairRatio(off, on)
	t.Logf("ms per iteration without clients %.2f (phases %.2f), with 10 clients %.2f (phases %.2f): ratio %.3f",
		median(off), off, median(on), on, ratio)
	if ratio > 1.5 {
		t.Errorf("ten dashboard clients made iterations %.0f%% slower", 100*(ratio-1))
	}
}

// BenchmarkDashboardClients reports the same ratio (ms/iter with ten
// clients over ms/iter without, median over 8 alternating pairs of phases
// of one run) and the median iteration times.
func BenchmarkDashboardClients(b *testing.B) {
	for range b.N {
		off, on := phases(b, 8, 30, 10)
		b.ReportMetric(median(off), "ms/iter-0-clients")
		b.ReportMetric(median(on), "ms/iter-10-clients")
		b.ReportMetric(pairRatio(off, on), "ratio")
	}
}
