package hub_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
)

func trainConfig(workers int, iters uint64) hub.Config {
	cfg := hub.DefaultConfig()
	// The protocol's exact semantics: whole float32 gradients in one push
	// (compress_test.go and parts tests cover the codecs and overlap).
	cfg.Compression, cfg.Overlap = "none", false
	cfg.MinWorkers, cfg.MaxWorkers = workers, 8
	cfg.GlobalBatch = 32
	cfg.Iterations = iters
	cfg.Batch = hub.Fixed
	cfg.DeadlineTicks = 0
	return cfg
}

// reference trains one trainer from the hub's initial weights on the union
// of the workers' batches, iteration by iteration, in worker id order.
func reference(t *testing.T, seed uint64, nodes []*node, iters uint64) []float32 {
	t.Helper()
	b := cpu.NewCPU()
	m, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	m.InitParams(rand.New(rand.NewPCG(seed, 1)))
	tr := solver.NewTrainer(m, solver.NewSGD(b, m.NumParams(), 0.9, 0, false), solver.Constant(0.05))
	for k := range iters {
		var x []float32
		var labels []int32
		for _, nd := range nodes {
			bt, ok := nd.batches[k]
			if !ok {
				continue
			}
			x = append(x, bt.x...)
			labels = append(labels, bt.labels...)
		}
		if _, err := tr.Step(x, labels); err != nil {
			t.Fatal(err)
		}
	}
	return state.Params(m)
}

// TestTrainMatchesSingleDevice trains lenet5 with a hub and 3 workers for
// 50 iterations: after every iteration every worker's weights hash equals
// the hub's, and the final weights equal those of one trainer stepping on
// the union batches (the merged gradient is the union batch's mean
// gradient, up to float rounding).
func TestTrainMatchesSingleDevice(t *testing.T) {
	const iters = 50
	ds := synthetic(t, 900)
	h := newHubCore(t, trainConfig(3, iters), 7)
	n := newNet(t, h, ds, 3)
	n.finish()

	if len(n.hubErrs) != 0 {
		t.Fatalf("hub refused: %v", n.hubErrs)
	}
	if got := h.Iteration(); got != iters {
		t.Fatalf("hub at iteration %d, want %d", got, iters)
	}
	want := make([]uint64, iters+1)
	for i := range want {
		want[i] = uint64(i)
	}
	for _, nd := range n.nodes {
		if !slices.Equal(n.checked[nd.name], want) {
			t.Errorf("%s: hash checked at %v, want every iteration 0..%d", nd.name, n.checked[nd.name], iters)
		}
		if nd.core.Mismatches() != 0 {
			t.Errorf("%s: %d hash mismatches", nd.name, nd.core.Mismatches())
		}
		fw, _ := nd.core.Final()
		if !slices.Equal(fw, state.Params(h.Trainer().Net)) {
			t.Errorf("%s: final weights differ from the hub's", nd.name)
		}
		if got := len(nd.batches[0].labels); got < 10 || got > 11 {
			t.Errorf("%s: batch of %d samples, want a third of 32", nd.name, got)
		}
	}
	ref := reference(t, 7, n.nodes, iters)
	d := relDiff(state.Params(h.Trainer().Net), ref)
	t.Logf("relative L2 difference from the single-device run after %d iterations: %.3g", iters, d)
	if d > 1e-4 {
		t.Fatalf("relative difference %.3g from the single-device run, want <= 1e-4", d)
	}
	// The equivalence must not hold by accident (weights that never moved).
	var first hub.Event
	var last hub.Event
	for _, e := range n.events {
		if e.Kind == hub.EventMerged {
			if first.Kind == 0 {
				first = e
			}
			last = e
		}
	}
	if first.Workers != 3 || first.Samples != 32 || !(last.Loss < first.Loss) {
		t.Fatalf("first merge %+v, last %+v: want 3 workers, 32 samples, falling loss", first, last)
	}
}

// TestDeadline: a worker that stops computing does not stall the run; at
// the deadline it is marked late, its late push is refused as stale, it is
// resynchronised and contributes again.
func TestDeadline(t *testing.T) {
	cfg := trainConfig(3, 8)
	cfg.DeadlineTicks = 5
	h := newHubCore(t, cfg, 3)
	n := newNet(t, h, synthetic(t, 300), 3)
	slow := n.byID["w2"]
	slow.silent = true
	n.run(func() bool { return n.count(hub.EventLate) > 0 })
	if h.Iteration() != 1 {
		t.Fatalf("hub at iteration %d after the deadline, want 1 (closed with the two others)", h.Iteration())
	}
	// The slow phone finishes now: its push for iteration 0 is too late.
	slow.silent = false
	n.compute(slow, *slow.stalled)
	n.finish()

	var stale int
	for _, err := range n.hubErrs {
		if !errors.Is(err, hub.ErrStale) {
			t.Errorf("unexpected refusal %v", err)
		}
		stale++
	}
	if stale != 1 {
		t.Errorf("%d stale refusals, want 1 (the late push)", stale)
	}
	if n.count(hub.EventResync) != 1 {
		t.Errorf("%d resyncs, want 1", n.count(hub.EventResync))
	}
	var with3 []uint64
	for _, e := range n.events {
		if e.Kind == hub.EventMerged && e.Workers == 3 {
			with3 = append(with3, e.Iteration)
		}
	}
	if len(with3) == 0 || with3[0] != 2 || with3[len(with3)-1] != 7 {
		t.Errorf("iterations merged with all 3 workers: %v, want 2..7 (w2 back after a resync)", with3)
	}
	if c := n.checked["w2"]; !slices.Contains(c, 8) {
		t.Errorf("w2 hash checked at %v, want through 8", c)
	}
}

// TestRetryWhenNobodyPushes: a deadline with no push applies no step (the
// weights stay bit-identical) and reopens the iteration for everyone with a
// Welcome. The stalled computes may finish before or after that Welcome
// reaches the worker: before, their pushes for the same iteration are
// legitimate (the state did not change) and the second compute's push is
// refused as a duplicate or stale; after, the worker discards them.
func TestRetryWhenNobodyPushes(t *testing.T) {
	for _, welcomeFirst := range []bool{true, false} {
		name := map[bool]string{true: "welcome first", false: "compute first"}[welcomeFirst]
		t.Run(name, func(t *testing.T) {
			cfg := trainConfig(2, 3)
			cfg.DeadlineTicks = 3
			h := newHubCore(t, cfg, 5)
			n := newNet(t, h, synthetic(t, 100), 2)
			for _, nd := range n.nodes {
				nd.silent = true
			}
			before := state.NetHash(h.Trainer().Net)
			n.run(func() bool { return n.count(hub.EventRetry) > 0 })
			if h.Iteration() != 0 || state.NetHash(h.Trainer().Net) != before {
				t.Fatalf("hub moved to iteration %d (or its weights changed) with no push", h.Iteration())
			}
			if welcomeFirst {
				n.round() // the Welcomes arrive and are held behind the computes
			}
			for _, nd := range n.nodes {
				nd.silent = false
				n.compute(nd, *nd.stalled)
			}
			n.finish()
			if h.Iteration() != 3 {
				t.Fatalf("hub at %d, want 3", h.Iteration())
			}
			for _, err := range n.hubErrs {
				if welcomeFirst || !(errors.Is(err, hub.ErrDuplicate) || errors.Is(err, hub.ErrStale)) {
					t.Errorf("refusal %v", err)
				}
			}
			for _, nd := range n.nodes {
				if !slices.Contains(n.checked[nd.name], 3) {
					t.Errorf("%s checked at %v, want through 3", nd.name, n.checked[nd.name])
				}
			}
		})
	}
}

// TestJoinMidRun: a worker registering at iteration k gets the current
// weights and optimizer state and takes part from the next iteration.
func TestJoinMidRun(t *testing.T) {
	cfg := trainConfig(2, 10)
	h := newHubCore(t, cfg, 9)
	ds := synthetic(t, 300)
	n := newNet(t, h, ds, 2)
	n.run(func() bool { return h.Iteration() >= 4 })
	late := n.addNode(ds, 2, 3)
	joinedAt := uint64(0)
	// Right after the joiner loads its Welcome, before the hub moves on,
	// its whole state must be the hub's.
	n.atCheck = func() {
		if joinedAt > 0 || late.core.Trainer() == nil {
			return
		}
		joinedAt = late.core.Iteration()
		if joinedAt != h.Iteration() {
			t.Fatalf("joiner at %d, hub at %d", joinedAt, h.Iteration())
		}
		got := state.Capture(late.core.Trainer().Net, late.core.Trainer().Opt)
		want := state.Capture(h.Trainer().Net, h.Trainer().Opt)
		if !slices.Equal(got.Weights, want.Weights) || got.Optimizer.Steps != want.Optimizer.Steps ||
			!slices.Equal(got.Optimizer.Tensors[0].Values, want.Optimizer.Tensors[0].Values) {
			t.Fatalf("joiner's state differs from the hub's (steps %d vs %d)", got.Optimizer.Steps, want.Optimizer.Steps)
		}
	}
	n.finish()
	if joinedAt < 4 {
		t.Fatalf("joiner loaded its Welcome at %d, want >= 4", joinedAt)
	}
	c := n.checked["w2"]
	if !slices.Contains(c, joinedAt+1) || !slices.Contains(c, 10) {
		t.Errorf("joiner hash checked at %v, want %d..10", c, joinedAt+1)
	}
	var merged3 bool
	for _, e := range n.events {
		merged3 = merged3 || (e.Kind == hub.EventMerged && e.Workers == 3 && e.Iteration == joinedAt+1)
	}
	if !merged3 {
		t.Errorf("iteration %d was not merged from 3 workers", joinedAt+1)
	}
}
