package hub_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/wire"
)

// parkHub registers "fast" and "slow" on a hub with the given policy and
// parking settings, and returns it with iteration 0 open (batches 32/32 by
// the registered speeds, which are equal).
func parkHub(t *testing.T, policy hub.BatchPolicy, park bool, margin float64, edit ...func(*hub.Config)) (*testCore, int) {
	t.Helper()
	cfg := trainConfig(2, 0)
	cfg.GlobalBatch = 64
	cfg.Batch = policy
	cfg.Park, cfg.ParkMargin = park, margin
	cfg.Smoothing = 1 // the newest measurement is the estimate: easy numbers
	cfg.ParkProbe = 0
	for _, e := range edit {
		e(&cfg)
	}
	h := newHubCore(t, cfg, 1)
	for _, id := range []string{"fast", "slow"} {
		if err := h.Step(id, &wire.Register{Device: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	h.Advance()
	return h, h.Trainer().Net.NumParams()
}

// pushTimed is push with a compute time of perSample ns per sample.
func pushTimed(it uint64, samples, n int, perSample int64) *wire.Push {
	p := push(it, samples, n, 0.01)
	p.ComputeNanos = int64(samples) * perSample
	return p
}

// mergedTo returns the batch sizes of the Merged sent to each peer of the
// last Ready, and the events of the kinds asked for.
func lastMerged(t *testing.T, h *testCore) (to []string, batches wire.BatchSizes) {
	t.Helper()
	for _, e := range h.Ready().Messages {
		if m, ok := e.Msg.(*wire.Merged); ok {
			to = append(to, e.To)
			batches = m.BatchSizes
		}
	}
	return to, batches
}

func events(h *testCore, kind hub.EventKind) []hub.Event {
	var out []hub.Event
	for _, e := range h.Ready().Events {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestParkSlowWorker: over a costly network, a worker ten times slower than
// the other adds 10% throughput and a whole push of airtime: the hub parks
// it, keeps sending it every Merged, and takes it back when the fast worker
// leaves. Without Park, under Fixed, or when the gain is below the margin,
// nobody is parked.
func TestParkSlowWorker(t *testing.T) {
	const ms = int64(1e6)
	cases := []struct {
		name     string
		policy   hub.BatchPolicy
		park     bool
		margin   float64
		comm     int64 // ns of communication per push, both workers
		wantPark bool
	}{
		// Both: 64/(1/1ms+1/10ms) = 58 ms + 800 ms; fast alone: 64 + 400 ms.
		{"costly network", hub.Adaptive, true, 0.1, 400 * ms, true},
		{"park off", hub.Adaptive, false, 0.1, 400 * ms, false},
		{"fixed policy", hub.Fixed, true, 0.1, 400 * ms, false},
		// Both: 58 + 2 ms; fast alone: 64 + 1 ms: the slow one pays.
		{"cheap network", hub.Adaptive, true, 0.1, 1 * ms, false},
		// Both: 58 + 12 = 70 ms; fast alone 64 + 6 = 70 ms: no gain at all
		// beyond rounding, far below a 10% margin.
		{"within margin", hub.Adaptive, true, 0.1, 6 * ms, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, n := parkHub(t, tc.policy, tc.park, tc.margin)
			h.ObserveComm("fast", tc.comm)
			h.ObserveComm("slow", tc.comm)
			h.ObserveComm("stranger", tc.comm) // ignored
			if err := h.Step("fast", pushTimed(0, 32, n, 1*ms)); err != nil {
				t.Fatal(err)
			}
			if err := h.Step("slow", pushTimed(0, 32, n, 10*ms)); err != nil {
				t.Fatal(err)
			}
			to, batches := lastMerged(t, h)
			if !slices.Equal(to, []string{"fast", "slow"}) {
				t.Fatalf("Merged went to %v, want both (a parked worker stays in sync)", to)
			}
			parked := events(h, hub.EventWorkerParked)
			_, slowHas := batches["slow"]
			if tc.wantPark {
				if len(parked) != 1 || parked[0].Peer != "slow" || !strings.Contains(parked[0].Text, "parked") {
					t.Fatalf("parked events %+v, want one for slow", parked)
				}
				if slowHas || batches["fast"] != 64 {
					t.Fatalf("batches %v, want fast 64 and nothing for slow", batches)
				}
				if got := h.Parked(); !slices.Equal(got, []string{"slow"}) {
					t.Fatalf("Parked() = %v", got)
				}
			} else {
				if len(parked) != 0 || !slowHas || batches["slow"] < 1 {
					t.Fatalf("parked %+v, batches %v: want nobody parked", parked, batches)
				}
				return
			}
			h.Advance()
			// A parked worker cannot push; the fast one closes alone.
			if err := h.Step("slow", pushTimed(1, 1, n, 10*ms)); err == nil {
				t.Fatal("a parked worker's push was accepted")
			}
			if err := h.Step("fast", pushTimed(1, 64, n, 1*ms)); err != nil {
				t.Fatal(err)
			}
			if h.Iteration() != 2 {
				t.Fatalf("iteration %d, want 2", h.Iteration())
			}
			if to, _ := lastMerged(t, h); !slices.Equal(to, []string{"fast", "slow"}) {
				t.Fatalf("Merged 1 went to %v, want both", to)
			}
			h.Advance()
			// The fast worker leaves: the parked one is all there is.
			h.Leave("fast")
			resumed := events(h, hub.EventWorkerResumed)
			if len(resumed) != 1 || resumed[0].Peer != "slow" {
				t.Fatalf("resumed events %+v, want one for slow", resumed)
			}
			var welcome *wire.Welcome
			for _, e := range h.Ready().Messages {
				if w, ok := e.Msg.(*wire.Welcome); ok && e.To == "slow" {
					welcome = w
				}
			}
			if welcome == nil || welcome.BatchSize != 64 {
				t.Fatalf("slow got %+v, want a Welcome with batch 64", welcome)
			}
			if len(h.Parked()) != 0 {
				t.Fatalf("Parked() = %v after the resume", h.Parked())
			}
		})
	}
}

// TestParkTakenBackWhenFasterWorkerSlows: the prediction is weighed again
// at every open, so when the active worker slows down (a throttled phone),
// the parked one pays again and gets a batch.
func TestParkTakenBackWhenFasterWorkerSlows(t *testing.T) {
	const ms = int64(1e6)
	h, n := parkHub(t, hub.Adaptive, true, 0.1)
	h.ObserveComm("fast", 400*ms)
	h.ObserveComm("slow", 400*ms)
	for _, p := range []struct {
		id string
		ps int64
	}{{"fast", 1 * ms}, {"slow", 10 * ms}} {
		if err := h.Step(p.id, pushTimed(0, 32, n, p.ps)); err != nil {
			t.Fatal(err)
		}
	}
	if len(events(h, hub.EventWorkerParked)) != 1 {
		t.Fatal("slow not parked")
	}
	h.Advance()
	// The fast phone throttles to 100 ms per sample: alone it would need
	// 6.4 s + 0.4 s; with the slow one (10 ms) 0.58 s + 0.8 s.
	if err := h.Step("fast", pushTimed(1, 64, n, 100*ms)); err != nil {
		t.Fatal(err)
	}
	resumed := events(h, hub.EventWorkerResumed)
	if len(resumed) != 1 || resumed[0].Peer != "slow" {
		t.Fatalf("resumed %+v, want slow", resumed)
	}
	_, batches := lastMerged(t, h)
	if batches["slow"] <= batches["fast"] {
		t.Fatalf("batches %v: the slow worker is now the faster one", batches)
	}
}

// TestParkManySmallCosts: four slow phones that each cost a little more
// than they bring — parking any one alone gains less than the margin — are
// parked together, because the margin weighs the whole new set against the
// workers active now.
func TestParkManySmallCosts(t *testing.T) {
	const ms = int64(1e6)
	cfg := trainConfig(5, 0)
	cfg.GlobalBatch, cfg.Batch, cfg.Smoothing = 64, hub.Adaptive, 1
	cfg.Park, cfg.ParkMargin, cfg.ParkProbe = true, 0.1, 0
	h := newHubCore(t, cfg, 1)
	ids := []string{"fast", "slow1", "slow2", "slow3", "slow4"}
	for _, id := range ids {
		if err := h.Step(id, &wire.Register{Device: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	_, batches := lastWelcomes(h)
	h.Advance()
	n := h.Trainer().Net.NumParams()
	// All five: 64/(1/1ms + 4/10ms) = 45.7 ms + 5×10 ms = 95.7 ms; without
	// one slow phone 89.2 ms (7% better); the fast phone alone 74 ms (23%).
	for _, id := range ids {
		perSample := 10 * ms
		if id == "fast" {
			perSample = 1 * ms
		}
		h.ObserveComm(id, 10*ms)
		if err := h.Step(id, pushTimed(0, batches[id], n, perSample)); err != nil {
			t.Fatal(err)
		}
	}
	var parked []string
	for _, e := range events(h, hub.EventWorkerParked) {
		parked = append(parked, e.Peer)
	}
	if want := ids[1:]; !slices.Equal(parked, want) || !slices.Equal(h.Parked(), want) {
		t.Fatalf("parked %v (Parked() %v), want all four slow phones", parked, h.Parked())
	}
}

// lastWelcomes returns the batch size each Welcome of the last Ready gave.
func lastWelcomes(h *testCore) (to []string, batches map[string]int) {
	batches = map[string]int{}
	for _, e := range h.Ready().Messages {
		if w, ok := e.Msg.(*wire.Welcome); ok {
			to = append(to, e.To)
			batches[e.To] = w.BatchSize
		}
	}
	return to, batches
}

// TestParkProbe: a parked worker pushes nothing, so every ParkProbe
// iterations the hub gives it one batch to measure it again. When the
// network has become cheap the probe's figures replace the old ones and
// the worker stays; when it is still costly the worker is parked again,
// and probed again ParkProbe iterations later.
func TestParkProbe(t *testing.T) {
	const ms = int64(1e6)
	for _, tc := range []struct {
		name      string
		probeComm int64 // ns per push measured during the probe
		wantBack  bool
	}{
		// Both: 64/(1/1ms+1/3ms) = 48 ms + 2 ms; fast alone 64 + 1 ms.
		{"network got better", 1 * ms, true},
		// Both: 48 + 800 ms; fast alone 64 + 400 ms.
		{"network still costly", 400 * ms, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, n := parkHub(t, hub.Adaptive, true, 0.1, func(c *hub.Config) { c.ParkProbe = 3 })
			step := func(id string, samples int, perSample, comm int64) {
				t.Helper()
				h.ObserveComm(id, comm)
				if err := h.Step(id, pushTimed(h.Iteration(), samples, n, perSample)); err != nil {
					t.Fatalf("%s's push at iteration %d: %v", id, h.Iteration(), err)
				}
			}
			step("fast", 32, 1*ms, 400*ms)
			step("slow", 32, 3*ms, 400*ms)
			if p := events(h, hub.EventWorkerParked); len(p) != 1 || p[0].Peer != "slow" || p[0].Iteration != 1 {
				t.Fatalf("parked events %+v, want slow at iteration 1", p)
			}
			h.Advance()
			for it := 1; it < 4; it++ {
				if len(events(h, hub.EventWorkerProbed)) != 0 {
					t.Fatalf("probed at iteration %d, before ParkProbe 3 iterations", it)
				}
				step("fast", 64, 1*ms, 400*ms)
				if it < 3 {
					h.Advance()
				}
			}
			// Iteration 4 opens: slow is probed with a share of the batch.
			probed := events(h, hub.EventWorkerProbed)
			_, batches := lastMerged(t, h)
			if len(probed) != 1 || probed[0].Peer != "slow" || probed[0].Iteration != 4 || batches["slow"] < 1 {
				t.Fatalf("probed %+v, batches %v: want slow probed at iteration 4 with a batch", probed, batches)
			}
			h.Advance()
			step("fast", batches["fast"], 1*ms, tc.probeComm)
			step("slow", batches["slow"], 3*ms, tc.probeComm)
			_, batches = lastMerged(t, h)
			reparked := events(h, hub.EventWorkerParked)
			if tc.wantBack {
				if len(reparked) != 0 || batches["slow"] < 1 || len(h.Parked()) != 0 {
					t.Fatalf("parked %+v, batches %v, Parked() %v: want slow back after a cheap probe", reparked, batches, h.Parked())
				}
				return
			}
			if len(reparked) != 1 || batches["slow"] != 0 || !slices.Equal(h.Parked(), []string{"slow"}) {
				t.Fatalf("parked %+v, batches %v: want slow parked again after a costly probe", reparked, batches)
			}
			h.Advance()
			for it := 5; it < 8; it++ {
				step("fast", 64, 1*ms, 400*ms)
				if it < 7 {
					h.Advance()
				}
			}
			if p := events(h, hub.EventWorkerProbed); len(p) != 1 || p[0].Iteration != 8 {
				t.Fatalf("second probe %+v, want one at iteration 8", p)
			}
		})
	}
}

// TestParkOverlap: with Config.Overlap the pushes hide behind the backward
// pass, so a push shorter than the compute costs nothing and the slow
// worker pays; pushes longer than the compute still get it parked.
func TestParkOverlap(t *testing.T) {
	const ms = int64(1e6)
	for _, tc := range []struct {
		comm     int64
		wantPark bool
	}{
		// Both: max(48, 40) = 48 ms; fast alone: max(64, 20) = 64 ms.
		{20 * ms, false},
		// Both: max(48, 800) ms; fast alone: max(64, 400) ms.
		{400 * ms, true},
	} {
		h, n := parkHub(t, hub.Adaptive, true, 0.1, func(c *hub.Config) { c.Overlap = true })
		starts := hub.PartBounds(h.Trainer().Net)
		for _, w := range []struct {
			id string
			ps int64
		}{{"fast", 1 * ms}, {"slow", 3 * ms}} {
			// One push per layer, last layer first; their times add up.
			for j := len(starts) - 1; j >= 0; j-- {
				end := n
				if j+1 < len(starts) {
					end = starts[j+1]
				}
				p := pushTimed(0, 32, end-starts[j], w.ps)
				p.Part = j
				h.ObserveComm(w.id, tc.comm/int64(len(starts)))
				if err := h.Step(w.id, p); err != nil {
					t.Fatal(err)
				}
			}
		}
		if got := len(events(h, hub.EventWorkerParked)) == 1; got != tc.wantPark {
			t.Errorf("comm %d ms with overlap: parked %v, want %v", tc.comm/ms, got, tc.wantPark)
		}
	}
}

// TestParkConfig: ParkMargin outside [0, 1) is refused.
func TestParkConfig(t *testing.T) {
	for _, m := range []float64{-0.1, 1, 2} {
		cfg := hub.DefaultConfig()
		cfg.ParkMargin = m
		if err := cfg.Validate(); err == nil {
			t.Errorf("ParkMargin %v accepted", m)
		}
	}
	cfg := hub.DefaultConfig()
	cfg.Park, cfg.ParkMargin = true, 0.1
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.ParkProbe = -1
	if err := cfg.Validate(); err == nil {
		t.Error("ParkProbe -1 accepted")
	}
	if hub.EventWorkerParked.String() != "worker-parked" || hub.EventWorkerResumed.String() != "worker-resumed" ||
		hub.EventWorkerProbed.String() != "worker-probed" {
		t.Fatal("event names")
	}
}
