// Package runspec is the one home of a training run's set-up: a Spec says
// what the run is — model, optimizer, schedule, codec, batch policy,
// deadlines, stopping rule — as data, and Build turns it into the hub's
// Config and the master trainer (and Core into the hub core), or Trainer
// into a single device's trainer. cmd/hub maps its flags onto a Spec,
// the simulator its scenarios, cotrain its flags: none of them builds a
// hub.Config, an optimizer or a schedule by hand, so the three cannot
// drift apart (the simulator once carried "the optimizer as cmd/hub builds
// it" as a copy).
//
// It lives beside package hub, not in it: it needs the engine (solver's
// optimizers and schedules, models) that the hub core does not import.
//
// Caller's duties:
//  1. Start from Default() and set the fields the run's flags or scenario
//     give; Validate says what is wrong, in the flags' words where a Spec
//     field is a flag's (--schedule, --policy).
//  2. Build the model's net on a backend (models.Build, cli.PrepareModel)
//     and call Build with it for a hub (or the simulator), or Trainer for a
//     single device.
//  3. For a hub, restore a checkpoint into Run.Trainer if resuming, then
//     call Run.Core with the hub's peer id.
package runspec

import (
	"errors"
	"fmt"
	"time"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// ErrSpec is wrapped by every error about a Spec.
var ErrSpec = errors.New("runspec: invalid spec")

// Spec is a training run as data.
type Spec struct {
	// Model names the architecture (models.Build) and ModelConfig its
	// settings; Meta holds what defines it beyond them (hub.Model.Meta:
	// an imported graph, the class names, the input normalisation).
	Model       string
	ModelConfig models.Config
	Meta        [][2]string

	Optimizer Optimizer
	Schedule  Schedule
	// Stop is the stopping rule: Stop.Iterations ends the run (0: until
	// stopped; the hub's Config.Iterations and a cosine schedule's length),
	// the evaluations and patience are the drivers' (hub.Stopper).
	Stop hub.StopRule

	// GlobalBatch is the samples of one iteration, over all workers.
	GlobalBatch int
	// MinWorkers start the run; at most MaxWorkers take part.
	MinWorkers, MaxWorkers int
	// Allow, when not nil, lists the peer ids that may register.
	Allow    map[string]bool
	Policy   Policy
	Codec    Codec
	Deadline Deadline
	// NoWeightsHash leaves the weights' hash out of every Merged.
	NoWeightsHash bool
}

// Optimizer is the optimizer asked for (solver.NewOptimizer), before the
// codec moves any of it onto the workers (hub.ConfigureTopK).
type Optimizer struct {
	Name                      string // "sgd" or "adam"
	LR, Momentum, WeightDecay float64
	Nesterov                  bool
}

// Schedule is the learning-rate schedule over Optimizer.LR.
type Schedule struct {
	// Name is "constant", "cosine" (to Stop.Iterations; constant when the
	// run has no length) or "step".
	Name string
	// StepEvery and Gamma are the step schedule's: multiply by Gamma
	// every StepEvery iterations.
	StepEvery int
	Gamma     float64
}

// Policy is how the global batch is split among the workers
// (hub.Config.Batch, Smoothing) and whether a worker that does not pay for
// its communication is parked (Park, ParkMargin, ParkProbe), and below
// which battery level a discharging worker is parked (BatteryFloor, 0:
// never); EnergySlack is the Energy policy's knob.
type Policy struct {
	Batch        hub.BatchPolicy
	EnergySlack  float64
	Smoothing    float64
	Park         bool
	ParkMargin   float64
	ParkProbe    int
	BatteryFloor float64
}

// Codec is the gradients' compression (sync/compress.Parse) and whether
// they travel layer by layer (hub.Config.Overlap).
type Codec struct {
	Compression string
	Overlap     bool
}

// Deadline is the barrier's deadline rule in time (hub.DriverConfig):
// the tick, the deadline (0: none), the least measured deadline, the
// measuring factor (0: fixed at Max) and the deadlines a worker may miss
// in a row (0: never dropped).
type Deadline struct {
	Tick, Max, Floor time.Duration
	Factor           float64
	MaxMisses        int
}

// Default returns the spec of cotrain's defaults: hub.DefaultConfig's
// batch, workers, policy, codec and deadlines, SGD with momentum 0.9 at
// 0.01 on a constant schedule, and no length.
func Default() Spec {
	c, d := hub.DefaultConfig(), hub.DefaultDriverConfig()
	return Spec{
		Optimizer:   Optimizer{Name: "sgd", LR: 0.01, Momentum: 0.9},
		Schedule:    Schedule{Name: "constant"},
		GlobalBatch: c.GlobalBatch,
		MinWorkers:  c.MinWorkers, MaxWorkers: c.MaxWorkers,
		Policy: Policy{Batch: c.Batch, Smoothing: c.Smoothing, Park: c.Park, ParkMargin: c.ParkMargin, ParkProbe: c.ParkProbe,
			BatteryFloor: c.BatteryFloor, EnergySlack: c.EnergySlack},
		Codec:    Codec{Compression: c.Compression, Overlap: c.Overlap},
		Deadline: Deadline{Tick: d.Tick, Max: d.Deadline, Floor: d.DeadlineFloor, Factor: c.DeadlineFactor, MaxMisses: c.MaxMisses},
	}
}

// Validate checks what Build does not leave to hub.Config.Validate and
// solver.NewOptimizer: the schedule and the tick.
func (s Spec) Validate() error {
	switch s.Schedule.Name {
	case "constant", "cosine":
	case "step":
		if s.Schedule.StepEvery < 1 {
			return fmt.Errorf("%w: step schedule every %d iterations, want at least 1", ErrSpec, s.Schedule.StepEvery)
		}
	default:
		return fmt.Errorf("%w: --schedule %q: want cosine, step or constant", ErrSpec, s.Schedule.Name)
	}
	if s.Deadline.Tick <= 0 {
		return fmt.Errorf("%w: tick %v, want more than 0", ErrSpec, s.Deadline.Tick)
	}
	return nil
}

// HubConfig returns the hub's Config for the spec and the optimizer every
// node steps with: the codec's tuning applied (hub.ConfigureTopK moves
// SGD's momentum onto the workers of a top-k session). The config is
// validated; its ID is hub.DefaultConfig's (Run.Core sets the peer id).
func (s Spec) HubConfig() (hub.Config, Optimizer, error) {
	if err := s.Validate(); err != nil {
		return hub.Config{}, Optimizer{}, err
	}
	c := hub.DefaultConfig()
	c.GlobalBatch, c.MinWorkers, c.MaxWorkers, c.Allow = s.GlobalBatch, s.MinWorkers, s.MaxWorkers, s.Allow
	c.Iterations = s.Stop.Iterations
	c.Batch, c.Smoothing = s.Policy.Batch, s.Policy.Smoothing
	c.Park, c.ParkMargin, c.ParkProbe = s.Policy.Park, s.Policy.ParkMargin, s.Policy.ParkProbe
	c.BatteryFloor, c.EnergySlack = s.Policy.BatteryFloor, s.Policy.EnergySlack
	c.Compression, c.Overlap = s.Codec.Compression, s.Codec.Overlap
	rules := hub.DriverConfig{Tick: s.Deadline.Tick, Deadline: s.Deadline.Max, DeadlineFloor: s.Deadline.Floor}
	c.Tick, c.DeadlineTicks, c.DeadlineFloorTicks = s.Deadline.Tick, rules.DeadlineTicks(), rules.DeadlineFloorTicks()
	c.DeadlineFactor, c.MaxMisses = s.Deadline.Factor, s.Deadline.MaxMisses
	c.NoWeightsHash = s.NoWeightsHash
	o := s.Optimizer
	node, err := hub.ConfigureTopK(&c, hub.NodeOptimizer{Name: o.Name, Momentum: o.Momentum, WeightDecay: o.WeightDecay, Nesterov: o.Nesterov})
	if err != nil {
		return hub.Config{}, Optimizer{}, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	if err := c.Validate(); err != nil {
		return hub.Config{}, Optimizer{}, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	o.Name, o.Momentum, o.WeightDecay, o.Nesterov = node.Name, node.Momentum, node.WeightDecay, node.Nesterov
	return c, o, nil
}

// Run is a spec built for a hub: its config, the master trainer and the
// model the core describes to the workers.
type Run struct {
	Config  hub.Config
	Trainer *solver.Trainer
	Model   hub.Model
}

// Build returns the hub's run of the spec over net, the master network on
// b (built, its weights initialised or loaded): the Config and a trainer
// with the nodes' optimizer and the schedule.
func (s Spec) Build(b gpu.Backend, net *solver.Net) (Run, error) {
	cfg, node, err := s.HubConfig()
	if err != nil {
		return Run{}, err
	}
	tr, err := s.trainer(b, net, node)
	if err != nil {
		return Run{}, err
	}
	return Run{Config: cfg, Trainer: tr, Model: hub.Model{Name: s.Model, Config: s.ModelConfig, Meta: s.Meta, Trainer: tr}}, nil
}

// Core returns the run's hub core with id as the hub's peer id (empty:
// the config's), from the trainer as it is now (a checkpoint restored into
// it sets where the run resumes).
func (r *Run) Core(id string) (*hub.Core, error) {
	if id != "" {
		r.Config.ID = id
	}
	return hub.NewCore(r.Config, r.Model)
}

// Trainer returns a single device's trainer of net on b: the optimizer as
// asked (no codec moves anything) and the schedule.
func (s Spec) Trainer(b gpu.Backend, net *solver.Net) (*solver.Trainer, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s.trainer(b, net, s.Optimizer)
}

// trainer returns net's trainer on b with optimizer o and the schedule.
func (s Spec) trainer(b gpu.Backend, net *solver.Net, o Optimizer) (*solver.Trainer, error) {
	opt, err := solver.NewOptimizer(b, o.Name, net.NumParams(), float32(o.Momentum), float32(o.WeightDecay), o.Nesterov)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSpec, err)
	}
	return solver.NewTrainer(net, opt, s.schedule()), nil
}

// schedule returns the learning-rate schedule (Validate has checked it).
func (s Spec) schedule() solver.Schedule {
	lr := float32(s.Optimizer.LR)
	switch s.Schedule.Name {
	case "cosine":
		if s.Stop.Iterations > 0 {
			return solver.Cosine{Base: lr, Total: int(s.Stop.Iterations)}
		}
	case "step":
		return solver.StepLR{Base: lr, Gamma: float32(s.Schedule.Gamma), Every: s.Schedule.StepEvery}
	}
	return solver.Constant(lr)
}
