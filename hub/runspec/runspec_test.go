package runspec_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/hub/runspec"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

func lenet(t *testing.T) (gpu.Backend, *solver.Net) {
	t.Helper()
	b := cpu.NewCPU()
	net, err := models.Build(b, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return b, net
}

// TestDefaultIsTheHubDefault: the default spec gives hub.DefaultConfig,
// tuned for its top-k codec as hub.ConfigureTopK tunes it, with SGD's
// momentum moved onto the workers.
func TestDefaultIsTheHubDefault(t *testing.T) {
	cfg, node, err := runspec.Default().HubConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := hub.DefaultConfig()
	wantNode, err := hub.ConfigureTopK(&want, hub.NodeOptimizer{Name: "sgd", Momentum: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	want.DeadlineTicks = int(hub.DefaultDriverConfig().Deadline / hub.DefaultDriverConfig().Tick)
	want.DeadlineFloorTicks = int(hub.DefaultDriverConfig().DeadlineFloor / hub.DefaultDriverConfig().Tick)
	want.Tick = hub.DefaultDriverConfig().Tick
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config\n%+v\nwant\n%+v", cfg, want)
	}
	if cfg.WorkerMomentum != 0.9 || node.Momentum != 0 || wantNode.Momentum != 0 || node.Name != "sgd" || node.LR != 0.01 {
		t.Errorf("worker momentum %v, nodes %+v: want 0.9 on the workers, SGD without momentum at 0.01 on the nodes", cfg.WorkerMomentum, node)
	}
}

// TestSpecToConfig: every field of a spec lands in the config it names.
func TestSpecToConfig(t *testing.T) {
	s := runspec.Default()
	s.Stop.Iterations = 300
	s.GlobalBatch, s.MinWorkers, s.MaxWorkers = 96, 3, 5
	s.Allow = map[string]bool{"a": true}
	s.Policy = runspec.Policy{Batch: hub.Fixed, Smoothing: 0.5, Park: true, ParkMargin: 0.1, ParkProbe: 7, EnergySlack: 2, BatteryFloor: 15}
	s.Codec = runspec.Codec{Compression: "fp16", Overlap: false}
	s.Deadline = runspec.Deadline{Tick: 20 * time.Millisecond, Max: 3 * time.Second, Floor: 410 * time.Millisecond, Factor: 2, MaxMisses: 4}
	s.NoWeightsHash = true
	cfg, node, err := s.HubConfig()
	if err != nil {
		t.Fatal(err)
	}
	want := hub.DefaultConfig()
	want.Iterations, want.GlobalBatch, want.MinWorkers, want.MaxWorkers, want.Allow = 300, 96, 3, 5, s.Allow
	want.Batch, want.Smoothing, want.Park, want.ParkMargin, want.ParkProbe = hub.Fixed, 0.5, true, 0.1, 7
	want.EnergySlack, want.BatteryFloor = 2, 15
	want.Compression, want.Overlap = "fp16", false
	want.Tick, want.DeadlineTicks, want.DeadlineFloorTicks, want.DeadlineFactor, want.MaxMisses = 20*time.Millisecond, 150, 21, 2, 4
	want.NoWeightsHash = true
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("config\n%+v\nwant\n%+v", cfg, want)
	}
	if node != s.Optimizer {
		t.Errorf("fp16 keeps the optimizer on the nodes: got %+v, want %+v", node, s.Optimizer)
	}
	s.MaxWorkers = 97
	if _, _, err := s.HubConfig(); !errors.Is(err, runspec.ErrSpec) || !errors.Is(err, hub.ErrConfig) {
		t.Errorf("more workers than samples: %v", err)
	}
}

// TestSchedules: each schedule as the three binaries used to build it.
func TestSchedules(t *testing.T) {
	for _, c := range []struct {
		name  string
		sched runspec.Schedule
		iters uint64
		want  solver.Schedule
	}{
		{"constant", runspec.Schedule{Name: "constant"}, 100, solver.Constant(0.05)},
		{"cosine", runspec.Schedule{Name: "cosine"}, 100, solver.Cosine{Base: 0.05, Total: 100}},
		{"cosine without a length", runspec.Schedule{Name: "cosine"}, 0, solver.Constant(0.05)},
		{"step", runspec.Schedule{Name: "step", StepEvery: 30, Gamma: 0.5}, 100, solver.StepLR{Base: 0.05, Gamma: 0.5, Every: 30}},
	} {
		b, net := lenet(t)
		s := runspec.Default()
		s.Optimizer.LR, s.Schedule, s.Stop.Iterations = 0.05, c.sched, c.iters
		tr, err := s.Trainer(b, net)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !reflect.DeepEqual(tr.Sched, c.want) {
			t.Errorf("%s: %#v, want %#v", c.name, tr.Sched, c.want)
		}
	}
	for _, sched := range []runspec.Schedule{{Name: "linear"}, {Name: "step"}} {
		s := runspec.Default()
		s.Schedule = sched
		if err := s.Validate(); !errors.Is(err, runspec.ErrSpec) {
			t.Errorf("%+v: %v, want ErrSpec", sched, err)
		}
	}
}

// TestHubAndSingleDeviceTrainers: from one spec, a single device (cotrain)
// steps with the optimizer asked for and the hub's master with the one the
// codec leaves on the nodes; with no codec to move anything, the two are
// the same optimizer on the same schedule, step for step.
func TestHubAndSingleDeviceTrainers(t *testing.T) {
	s := runspec.Default()
	s.Model, s.Stop.Iterations, s.Schedule.Name = "lenet5", 50, "cosine"
	b, net := lenet(t)
	single, err := s.Trainer(b, net)
	if err != nil {
		t.Fatal(err)
	}
	b2, net2 := lenet(t)
	run, err := s.Build(b2, net2)
	if err != nil {
		t.Fatal(err)
	}
	if sgd := single.Opt.(*solver.SGD); sgd.Momentum != 0.9 {
		t.Errorf("single device: momentum %v, want 0.9", sgd.Momentum)
	}
	if sgd := run.Trainer.Opt.(*solver.SGD); sgd.Momentum != 0 {
		t.Errorf("top-k hub: the master's momentum %v, want 0 (on the workers)", sgd.Momentum)
	}
	if run.Model.Name != "lenet5" || run.Model.Trainer != run.Trainer || run.Config.WorkerMomentum != 0.9 {
		t.Errorf("run %+v", run)
	}

	s.Codec.Compression = "none"
	b3, net3 := lenet(t)
	run, err = s.Build(b3, net3)
	if err != nil {
		t.Fatal(err)
	}
	a, h := single.Opt.(*solver.SGD), run.Trainer.Opt.(*solver.SGD)
	if a.Momentum != h.Momentum || a.WeightDecay != h.WeightDecay || a.Nesterov != h.Nesterov ||
		!reflect.DeepEqual(single.Sched, run.Trainer.Sched) {
		t.Errorf("no codec: single %+v %+v, hub %+v %+v", a, single.Sched, h, run.Trainer.Sched)
	}
	core, err := run.Core("hub-peer")
	if err != nil {
		t.Fatal(err)
	}
	if core.Iteration() != 0 || run.Config.ID != "hub-peer" {
		t.Errorf("core at %d, id %q", core.Iteration(), run.Config.ID)
	}
}
