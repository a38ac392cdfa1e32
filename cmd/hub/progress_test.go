package main

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/cotrain/cotrain/hub"
)

func TestPatienceStopsWhenHeldOutLossStalls(t *testing.T) {
	p := &progress{stop: hub.NewStopper(hub.StopRule{Patience: 2, EvalEvery: 1})}
	for i, tc := range []struct {
		loss float64
		stop bool
	}{
		{1.0, false}, {0.8, false}, {0.79995, false}, // below 1e-4 is no improvement: 1 stale
		{0.7, false},  // improves: 0 stale
		{0.71, false}, // 1 stale
		{0.70, true},  // 2 stale: patience 2 reached
	} {
		if got := p.heldOut(uint64(i), 0.5, tc.loss) != ""; got != tc.stop {
			t.Fatalf("evaluation %d (loss %v): stop %v, want %v (best %v, stale %d)", i, tc.loss, got, tc.stop, p.stop.Best(), p.stop.Stale())
		}
	}
}

func TestFlagsHTTP(t *testing.T) {
	for _, bad := range []string{"8080", "localhost", "127.0.0.1:", "http://127.0.0.1:8080/"} {
		if _, err := parseFlags([]string{"--http", bad}, io.Discard); err == nil || !strings.Contains(err.Error(), "--http") {
			t.Errorf("--http %q: %v, want an error naming the flag", bad, err)
		}
	}
	for _, good := range []string{"127.0.0.1:8080", ":0", "[::1]:8080"} {
		if c, err := parseFlags([]string{"--http", good}, io.Discard); err != nil || c.http != good {
			t.Errorf("--http %q: %v", good, err)
		}
	}
}

// TestFlagsOutOfRange: a value out of range is refused naming its flag,
// the value and the range.
func TestFlagsOutOfRange(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--batch", "0"}, "--batch 0: want at least 1"},
		{[]string{"--min-workers", "0"}, "--min-workers 0"},
		{[]string{"--lr", "-0.1"}, "--lr -0.1: want more than 0"},
		{[]string{"--log-every", "0"}, "--log-every 0"},
		{[]string{"--deadline", "1ms", "--tick", "5ms"}, "--deadline 1ms: want at least --tick (5ms)"},
		{[]string{"--checkpoint-every", "-1"}, "--checkpoint-every -1"},
		{[]string{"--battery-floor", "101"}, "--battery-floor 101: want a percentage"},
		{[]string{"--battery-floor", "-5"}, "--battery-floor -5"},
		{[]string{"--energy-slack", "0.5"}, "--energy-slack 0.5: want from 1 to 100"},
	} {
		if _, err := parseFlags(append(tc.args, "--iterations", "10"), io.Discard); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("hub %q: %v, want an error containing %q", tc.args, err, tc.want)
		}
	}
}

// TestFlagsBatteryFloor: hub --battery-floor 20 parks below 20% (the
// hub's config, which TestBatteryFloorParksAndResumes runs end to end).
func TestFlagsBatteryFloor(t *testing.T) {
	c, err := parseFlags([]string{"--battery-floor", "20", "--policy", "energy", "--energy-slack", "2", "--iterations", "10"}, io.Discard)
	if err != nil || c.batteryFloor != 20 || c.policy != "energy" || c.energySlack != 2 {
		t.Fatalf("parsed %+v, %v", c, err)
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

// TestFlagsTopKOptimizer: without --compress the codec is cotrain's
// default for the optimizer (fp16 with Adam, top-k with SGD); a top-k
// session without --optimizer trains with SGD; one that asks for Adam keeps
// it and is warned; other codecs keep Adam; the learning rate defaults by
// optimizer.
func TestFlagsTopKOptimizer(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		opt     string
		lr      float64
		warning bool
		codec   string
	}{
		{[]string{"--compress", "topk"}, "sgd", sgdLR, false, "topk"},
		{[]string{"--compress", "topk:0.02", "--lr", "0.01"}, "sgd", 0.01, false, "topk:0.02"},
		{[]string{"--compress", "topk", "--optimizer", "adam"}, "adam", 0.004, true, "topk"},
		{[]string{"--compress", "topk", "--optimizer", "sgd", "--lr", "0.1"}, "sgd", 0.1, false, "topk"},
		{[]string{"--compress", "int8"}, "adam", 0.004, false, "int8"},
		{nil, "adam", 0.004, false, "fp16"},
		{[]string{"--optimizer", "sgd"}, "sgd", sgdLR, false, "topk:0.01"},
		{[]string{"--optimizer", "adam", "--lr", "0.001"}, "adam", 0.001, false, "fp16"},
	} {
		var stderr strings.Builder
		c, err := parseFlags(append([]string{"--iterations", "5"}, tc.args...), &stderr)
		if err != nil || c.optimizer != tc.opt || c.lr != tc.lr || (stderr.Len() > 0) != tc.warning || c.compress != tc.codec {
			t.Errorf("%q: optimizer %s, lr %v, codec %s, stderr %q, %v; want %s, %v, %s, warning %v",
				tc.args, c.optimizer, c.lr, c.compress, stderr.String(), err, tc.opt, tc.lr, tc.codec, tc.warning)
		}
	}
	if _, err := parseFlags([]string{"--iterations", "5", "--optimizer", "lamb"}, io.Discard); err == nil || !strings.Contains(err.Error(), "lamb") {
		t.Errorf("--optimizer lamb: %v, want an error naming it", err)
	}
}

func TestFlagsDeadlineRule(t *testing.T) {
	for _, bad := range [][]string{{"--deadline-factor", "0.5"}, {"--deadline-factor", "-1"}, {"--deadline-floor", "-1s"}} {
		if _, err := parseFlags(append([]string{"--iterations", "5"}, bad...), io.Discard); !errors.Is(err, errUsage) ||
			!strings.Contains(err.Error(), "--deadline-factor") {
			t.Errorf("%q: %v, want a usage error naming the flags", bad, err)
		}
	}
	c, err := parseFlags([]string{"--iterations", "5", "--deadline-factor", "0"}, io.Discard)
	if err != nil || c.deadlineFactor != 0 || c.deadlineFloor != time.Second {
		t.Errorf("--deadline-factor 0: %+v, %v", c, err)
	}
}
