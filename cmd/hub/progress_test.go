package main

import (
	"io"
	"math"
	"testing"
)

func TestPatienceStopsWhenHeldOutLossStalls(t *testing.T) {
	p := &progress{c: config{patience: 2}, out: io.Discard, best: math.Inf(1)}
	for i, tc := range []struct {
		loss float64
		stop bool
	}{
		{1.0, false}, {0.8, false}, {0.79995, false}, // below 1e-4 is no improvement: 1 stale
		{0.7, false},  // improves: 0 stale
		{0.71, false}, // 1 stale
		{0.70, true},  // 2 stale: patience 2 reached
	} {
		if got := p.heldOut(uint64(i), tc.loss); got != tc.stop {
			t.Fatalf("evaluation %d (loss %v): stop %v, want %v (best %v, stale %d)", i, tc.loss, got, tc.stop, p.best, p.stale)
		}
	}
}

func TestFlagsRefuseARunWithoutEnd(t *testing.T) {
	if _, err := parseFlags([]string{"--iterations", "0"}, io.Discard); err == nil {
		t.Error("a run with no --iterations, --epochs or --patience was accepted")
	}
	c, err := parseFlags([]string{"--batch", "4", "--max-workers", "16"}, io.Discard)
	if err != nil || c.maxWorkers != 4 {
		t.Errorf("max workers not capped by the batch: %+v %v", c.maxWorkers, err)
	}
}
