package hub_test

import (
	"errors"
	"math"
	"testing"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// manual drives a hub core by hand: two workers registered, iteration 0
// closed with valid pushes, iteration 1 open.
func manual(t *testing.T) (h *testCore, batches map[string]int, n int) {
	t.Helper()
	cfg := trainConfig(2, 0)
	cfg.MaxWorkers = 2
	h = newHubCore(t, cfg, 1)
	for _, id := range []string{"w0", "w1"} {
		if err := h.Step(id, &wire.Register{Device: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	batches = map[string]int{}
	for _, e := range h.Ready().Messages {
		w, ok := e.Msg.(*wire.Welcome)
		if !ok {
			t.Fatalf("%s got %s, want welcome", e.To, e.Msg.Kind())
		}
		batches[e.To] = w.BatchSize
	}
	h.Advance()
	if batches["w0"] != 16 || batches["w1"] != 16 {
		t.Fatalf("batches %v, want 16 each", batches)
	}
	n = h.Trainer().Net.NumParams()
	for _, id := range []string{"w0", "w1"} {
		if err := h.Step(id, push(0, batches[id], n, 0.01)); err != nil {
			t.Fatal(err)
		}
	}
	if h.Iteration() != 1 {
		t.Fatalf("iteration %d after both pushes, want 1", h.Iteration())
	}
	h.Advance()
	return h, batches, n
}

func push(it uint64, samples, n int, g float32) *wire.Push {
	grad := make(wire.Floats, n)
	for i := range grad {
		grad[i] = g * float32(i%13-6)
	}
	return &wire.Push{Header: wire.Header{Iteration: it}, Samples: samples, ComputeNanos: 1e6, Loss: 2.3, Gradient: grad}
}

// TestBadInputsRefused: every bad input is refused with its sentinel and
// leaves the hub's weights bit-identical; afterwards the iteration still
// closes normally from the good pushes.
func TestBadInputsRefused(t *testing.T) {
	h, batches, n := manual(t)
	b := batches["w0"]
	cases := []struct {
		name string
		from string
		msg  func() wire.Message
		want error
	}{
		{"unknown peer", "mallory", func() wire.Message { return push(1, b, n, 1) }, hub.ErrUnknownPeer},
		{"short gradient", "w0", func() wire.Message { p := push(1, b, n, 1); p.Gradient = p.Gradient[:n-1]; return p }, hub.ErrBadLength},
		{"long gradient", "w0", func() wire.Message { p := push(1, b, n, 1); p.Gradient = append(p.Gradient, 0); return p }, hub.ErrBadLength},
		{"NaN in gradient", "w0", func() wire.Message { p := push(1, b, n, 1); p.Gradient[7] = float32(math.NaN()); return p }, hub.ErrNonFinite},
		{"Inf in gradient", "w0", func() wire.Message { p := push(1, b, n, 1); p.Gradient[n-1] = float32(math.Inf(-1)); return p }, hub.ErrNonFinite},
		{"NaN loss", "w0", func() wire.Message { p := push(1, b, n, 1); p.Loss = float32(math.NaN()); return p }, hub.ErrNonFinite},
		{"stale iteration", "w0", func() wire.Message { return push(0, b, n, 1) }, hub.ErrStale},
		{"future iteration", "w0", func() wire.Message { return push(2, b, n, 1) }, hub.ErrFuture},
		{"zero samples", "w0", func() wire.Message { return push(1, 0, n, 1) }, hub.ErrBadSamples},
		{"negative samples", "w0", func() wire.Message { return push(1, -5, n, 1) }, hub.ErrBadSamples},
		{"more samples than the batch", "w0", func() wire.Message { return push(1, b+1, n, 1) }, hub.ErrBadSamples},
		{"negative compute time", "w0", func() wire.Message { p := push(1, b, n, 1); p.ComputeNanos = -1; return p }, hub.ErrBadSamples},
		{"merged from a worker", "w0", func() wire.Message { return &wire.Merged{Header: wire.Header{Iteration: 1}} }, hub.ErrUnexpected},
		{"welcome from a worker", "w1", func() wire.Message { return &wire.Welcome{} }, hub.ErrUnexpected},
		{"resync answer from a worker", "w1", func() wire.Message { return &wire.ResyncAnswer{} }, hub.ErrUnexpected},
		{"register beyond MaxWorkers", "w9", func() wire.Message { return &wire.Register{} }, hub.ErrFull},
	}
	want := state.NetHash(h.Trainer().Net)
	for _, c := range cases {
		err := h.Step(c.from, c.msg())
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
		if state.NetHash(h.Trainer().Net) != want || h.Iteration() != 1 {
			t.Fatalf("%s: the refused input changed the hub", c.name)
		}
		rd := h.Ready()
		if len(rd.Events) != 1 || rd.Events[0].Kind != hub.EventRefused || !errors.Is(rd.Events[0].Err, c.want) {
			t.Errorf("%s: events %+v, want one refusal", c.name, rd.Events)
		}
		for _, e := range rd.Messages {
			if r, ok := e.Msg.(*wire.Reject); !ok || c.want != hub.ErrFull || r.Code != wire.CodeFull {
				t.Errorf("%s: sent %s to %s", c.name, e.Msg.Kind(), e.To)
			}
		}
		h.Advance()
	}
	// A duplicate: the first push counts, the second is refused.
	if err := h.Step("w0", push(1, b, n, 0.02)); err != nil {
		t.Fatal(err)
	}
	if err := h.Step("w0", push(1, b, n, 0.02)); !errors.Is(err, hub.ErrDuplicate) {
		t.Fatalf("duplicate: %v, want ErrDuplicate", err)
	}
	if state.NetHash(h.Trainer().Net) != want {
		t.Fatal("a push moved the weights before the barrier closed")
	}
	if err := h.Step("w1", push(1, 3, n, 0.04)); err != nil {
		t.Fatal(err)
	}
	if h.Iteration() != 2 || state.NetHash(h.Trainer().Net) == want {
		t.Fatalf("iteration %d: the barrier did not close on the good pushes", h.Iteration())
	}
	// The merged gradient is the sample-weighted mean: (16·0.02 + 3·0.04)/19
	// times the pattern, computed in float64.
	var merged *wire.Merged
	for _, e := range h.Ready().Messages {
		merged, _ = e.Msg.(*wire.Merged)
	}
	if merged == nil {
		t.Fatal("no Merged sent")
	}
	for i, g := range merged.Gradient {
		p := float64(float32(i%13 - 6))
		w := (16*float64(float32(0.02)*float32(p)) + 3*float64(float32(0.04)*float32(p))) / 19
		if g != float32(w) {
			t.Fatalf("merged[%d] = %v, want %v", i, g, float32(w))
		}
	}
	if merged.WeightsHash != state.NetHash(h.Trainer().Net) || merged.LR != 0.05 || merged.Iteration != 1 {
		t.Fatalf("Merged header %d, lr %v, or hash is not the hub's after the step", merged.Iteration, merged.LR)
	}
}

// TestLeaveClosesBarrier: when a member's connection drops, the barrier
// closes on the others' pushes; a push that arrived before the drop counts.
func TestLeaveClosesBarrier(t *testing.T) {
	h, batches, n := manual(t)
	if err := h.Step("w0", push(1, batches["w0"], n, 0.01)); err != nil {
		t.Fatal(err)
	}
	h.Leave("w1")
	if h.Iteration() != 2 {
		t.Fatalf("iteration %d after the drop, want 2", h.Iteration())
	}
	rd := h.Ready()
	var to []string
	for _, e := range rd.Messages {
		to = append(to, e.To+":"+e.Msg.Kind().String())
		if m, ok := e.Msg.(*wire.Merged); ok && m.BatchSizes["w0"] != 32 {
			t.Errorf("next batch %v, want all 32 to w0", m.BatchSizes)
		}
	}
	if len(to) != 1 || to[0] != "w0:merged" {
		t.Fatalf("sent %v, want one Merged to w0", to)
	}
	h.Advance()
	// The last worker leaves: the run parks, and a newcomer restarts it.
	h.Leave("w0")
	rd = h.Ready()
	if k := rd.Events[len(rd.Events)-1].Kind; k != hub.EventParked {
		t.Fatalf("last event %v, want parked", k)
	}
	h.Advance()
	if err := h.Step("w5", &wire.Register{}); err != nil {
		t.Fatal(err)
	}
	w, ok := h.Ready().Messages[0].Msg.(*wire.Welcome)
	if !ok || w.BatchSize != 32 || w.Iteration != 2 {
		t.Fatalf("newcomer after parking got %+v", h.Ready().Messages[0])
	}
}

// TestStopAndIterations: the run ends with Goodbye and the final weights,
// and refuses everything afterwards.
func TestStopAndIterations(t *testing.T) {
	h, _, n := manual(t)
	h.Stop("user")
	rd := h.Ready()
	if !rd.Done || len(rd.Messages) != 2 {
		t.Fatalf("after Stop: done %v, %d messages", rd.Done, len(rd.Messages))
	}
	g := rd.Messages[0].Msg.(*wire.Goodbye)
	if state.Hash(g.FinalWeights) != state.NetHash(h.Trainer().Net) || g.Reason != "user" {
		t.Fatal("Goodbye does not carry the hub's weights")
	}
	h.Advance()
	if err := h.Step("w0", push(1, 1, n, 0)); !errors.Is(err, hub.ErrDone) {
		t.Fatalf("push after the end: %v, want ErrDone", err)
	}
	if !h.Ready().Done {
		t.Fatal("Done cleared by Advance")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := hub.DefaultConfig().Validate(); err != nil {
		t.Fatalf("default config: %v", err)
	}
	cases := map[string]func(c *hub.Config){
		"no id":           func(c *hub.Config) { c.ID = "" },
		"zero batch":      func(c *hub.Config) { c.GlobalBatch = 0 },
		"zero min":        func(c *hub.Config) { c.MinWorkers = 0 },
		"max below min":   func(c *hub.Config) { c.MaxWorkers = 1 },
		"max above batch": func(c *hub.Config) { c.GlobalBatch = 8; c.MaxWorkers = 9 },
		"negative ticks":  func(c *hub.Config) { c.DeadlineTicks = -1 },
		"no policy":       func(c *hub.Config) { c.Batch = 0 },
		"zero smoothing":  func(c *hub.Config) { c.Smoothing = 0 },
		"smoothing > 1":   func(c *hub.Config) { c.Smoothing = 1.5 },
		"negative misses": func(c *hub.Config) { c.MaxMisses = -1 },
	}
	for name, mutate := range cases {
		c := hub.DefaultConfig()
		mutate(&c)
		if err := c.Validate(); !errors.Is(err, hub.ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", name, err)
		}
	}
}
