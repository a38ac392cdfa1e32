package main

import (
	"errors"
	"io"
	"reflect"
	"testing"
	"time"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/hub/runspec"
)

// TestFlagsToSpec: the hub's flags land in the run's spec field by field,
// and the spec's config is what the hub runs with (runspec.Build turns the
// same spec into the same config for the simulator and cotrain).
func TestFlagsToSpec(t *testing.T) {
	c, err := parseFlags([]string{"--model", "lenet5", "--optimizer", "adam", "--lr", "0.002", "--weight-decay", "0.0001",
		"--schedule", "constant", "--batch", "96", "--min-workers", "3", "--max-workers", "2", "--policy", "fixed",
		"--park=false", "--compress", "fp16", "--overlap=false", "--tick", "20ms", "--deadline", "3s",
		"--max-misses", "4", "--patience", "5", "--eval-every", "10", "--battery-floor", "20"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.spec(300)
	if err != nil {
		t.Fatal(err)
	}
	want := runspec.Default()
	want.Optimizer = runspec.Optimizer{Name: "adam", LR: 0.002, Momentum: c.momentum, WeightDecay: 0.0001}
	want.Schedule = runspec.Schedule{Name: "constant"}
	want.Stop = hub.StopRule{Iterations: 300, EvalEvery: 10, Patience: 5}
	want.GlobalBatch, want.MinWorkers, want.MaxWorkers = 96, 3, 3 // --max-workers below --min-workers is raised
	want.Policy = runspec.Policy{Batch: hub.Fixed, Smoothing: hub.DefaultConfig().Smoothing, ParkMargin: c.parkMargin, ParkProbe: c.parkProbe,
		EnergySlack: hub.DefaultConfig().EnergySlack, BatteryFloor: 20}
	want.Codec = runspec.Codec{Compression: "fp16"}
	want.Deadline = runspec.Deadline{Tick: 20 * time.Millisecond, Max: 3 * time.Second, Floor: c.deadlineFloor,
		Factor: c.deadlineFactor, MaxMisses: 4}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("spec\n%+v\nwant\n%+v", s, want)
	}
	cfg, node, err := s.HubConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.GlobalBatch != 96 || cfg.Batch != hub.Fixed || cfg.DeadlineTicks != 150 || cfg.Compression != "fp16" ||
		cfg.Iterations != 300 || node.Name != "adam" {
		t.Errorf("config %+v, nodes %+v", cfg, node)
	}
	for _, bad := range [][]string{{"--schedule", "step"}, {"--policy", "greedy"}} {
		c, err := parseFlags(bad, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.spec(10); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", bad, err)
		}
	}
}
