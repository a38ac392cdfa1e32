package hub_test

import (
	"testing"

	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// TestNoWeightsHash: a hub configured with NoWeightsHash sends its Merged
// with a zero hash (the workers then skip the comparison) and the same
// step; by default the hash is that of its weights after the step.
func TestNoWeightsHash(t *testing.T) {
	for _, off := range []bool{false, true} {
		cfg := trainConfig(2, 0)
		cfg.MaxWorkers, cfg.NoWeightsHash = 2, off
		h := newHubCore(t, cfg, 1)
		for _, id := range []string{"w0", "w1"} {
			if err := h.Step(id, &wire.Register{Device: "test"}); err != nil {
				t.Fatal(err)
			}
		}
		h.Advance()
		n := h.Trainer().Net.NumParams()
		for _, id := range []string{"w0", "w1"} {
			if err := h.Step(id, push(0, 16, n, 0.01)); err != nil {
				t.Fatal(err)
			}
		}
		var merged *wire.Merged
		for _, e := range h.Ready().Messages {
			if m, ok := e.Msg.(*wire.Merged); ok && !m.Partial {
				merged = m
			}
		}
		if merged == nil {
			t.Fatalf("NoWeightsHash %v: no Merged", off)
		}
		want := state.NetHash(h.Trainer().Net)
		if off {
			want = wire.Hash{}
		}
		if merged.WeightsHash != want || h.Iteration() != 1 {
			t.Errorf("NoWeightsHash %v: hash %x at iteration %d, want %x at 1", off, merged.WeightsHash[:4], h.Iteration(), want[:4])
		}
	}
}
