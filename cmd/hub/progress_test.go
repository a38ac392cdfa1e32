package main

import (
	"io"
	"math"
	"strings"
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

// TestFlagsTopKOptimizer: a top-k session without --optimizer trains with
// SGD (learning rate 0.05 unless --lr is given); one that asks for Adam
// keeps it and is warned; other codecs keep Adam.
func TestFlagsTopKOptimizer(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		opt     string
		lr      float64
		warning bool
	}{
		{[]string{"--compress", "topk"}, "sgd", topKSGDLR, false},
		{[]string{"--compress", "topk:0.02", "--lr", "0.01"}, "sgd", 0.01, false},
		{[]string{"--compress", "topk", "--optimizer", "adam"}, "adam", 0.004, true},
		{[]string{"--compress", "topk", "--optimizer", "sgd", "--lr", "0.1"}, "sgd", 0.1, false},
		{[]string{"--compress", "int8"}, "adam", 0.004, false},
		{nil, "adam", 0.004, false},
	} {
		var stderr strings.Builder
		c, err := parseFlags(append([]string{"--iterations", "5"}, tc.args...), &stderr)
		if err != nil || c.optimizer != tc.opt || c.lr != tc.lr || (stderr.Len() > 0) != tc.warning {
			t.Errorf("%q: optimizer %s, lr %v, stderr %q, %v; want %s, %v, warning %v", tc.args, c.optimizer, c.lr, stderr.String(), err, tc.opt, tc.lr, tc.warning)
		}
	}
}
