package sim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/cotrain/cotrain/data"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/hub/runspec"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/wire"
	"github.com/cotrain/cotrain/worker"
)

// ErrInvariant is wrapped by the error of a run whose invariants broke:
// a worker's weights differ from the hub's, or a merged gradient is not the
// sample-weighted mean of the pushes the hub received.
var ErrInvariant = errors.New("sim: invariant violated")

// tick is the hub's tick in virtual time when the scenario has a deadline.
// It is coarser than the real driver's (hub.DefaultDriverConfig().Tick,
// 50 ms): a tick only bounds when within its period a deadline is noticed,
// and half as many ticks are half the events to simulate; the scenarios'
// recorded results were made with it.
const tick = 100 * time.Millisecond

// runSpec is one run of a scenario: a policy, and for a solo run the
// device that trains alone.
type runSpec struct {
	Name   string
	Policy string
	Solo   string
	// Deadline is the barrier's deadline rule: "fixed", or "measured"
	// (also when empty).
	Deadline string
}

// runner is one simulated run: a hub core and its phones' worker cores on
// a virtual clock, connected by links that hand messages over in memory
// (link.go).
type runner struct {
	ctx  context.Context
	sc   *Scenario
	spec runSpec
	d    *Data
	opt  Options
	// pushedAt and openedAt are when the hub last accepted a push and last
	// opened an iteration (virtual ns): RunResult.DeadlineWait.
	pushedAt, openedAt int64

	clk     clock
	net     *network
	hub     *hub.Core
	hubTr   *solver.Trainer // the hub core's master: flushHub runs its ApplyRequests on it
	setup   runspec.Spec    // the run the hub was built from (its set-up as data)
	hubDev  *device
	hubFree int64 // the hub sends nothing before: it is merging
	phones  []*phone
	byName  map[string]*phone
	sizer   *wire.Sizer
	sent    map[wire.Kind]int // messages sent, by kind: which take the codec's round trip
	// hashBytes is what a weights hash adds to a Merged's frame: a
	// scenario without the hash still pays for it on the air.
	hashBytes int
	frame     bytes.Buffer // the round trip's frame
	codecW    *wire.Writer // into frame
	codecR    *wire.Reader // from frame

	sampleFLOPs float64 // training FLOPs per sample
	paramCount  int
	comm        comm // compression and overlap (comm.go)

	check   checker
	res     *RunResult
	t0      int64 // first compute's start; -1 before
	hubDone bool
	stop    string       // the stop rule's reason, for the hub core at its next flush
	stopper *hub.Stopper // the scenario's stop rule: iterations, patience, target
	events  int
	err     error
	air     int64       // ns of airtime of pushes and merged gradients
	memo    *memo       // shared with the runs that train identically; nil if none
	cpus    []*cpu.CPU  // every backend of the run: its threads follow setThreads
	threads int         // the backends' thread cap (0: GOMAXPROCS)
	ft      *faultState // network faults (faults.go); nil without
}

// phone is one simulated device: its worker core, its data and its
// compute model.
type phone struct {
	spec   DeviceSpec
	idx    int
	dev    *device
	shard  data.Dataset
	core   *worker.Core
	link   *link // the connection to the hub; nil when there is none
	loader *data.Loader
	x      []float32
	labels []int32
	gen    int  // bumped when the phone leaves: its pending events are void
	alive  bool // connected
	// forgotten: the hub removed the phone (dropped it, or saw it leave)
	// and it has not registered again. Such a phone may still apply the
	// Merged that waited for it on the network (a phone that slept), at
	// iterations older than the checker keeps.
	forgotten bool
	busy      int64
	reached   bool // has reached iteration 10
	stats     *DeviceTime
	meter     *meter // its energy (energy.go)
	// drifted is set by a diverge fault until the phone's hash check
	// finds it; mismatches is how many of its core's mismatches the run
	// has counted; resyncing is set from one until the hub's state is
	// loaded.
	drifted    bool
	mismatches int
	resyncing  bool
}

// maxFrame is the receivers' frame cap, as the real transports have.
const maxFrame = 64 << 20

func newRunner(ctx context.Context, sc *Scenario, spec runSpec, d *Data, opt Options) (*runner, error) {
	if opt.ModelConfig == (models.Config{}) {
		opt.ModelConfig = d.Config // text: the vocabulary and the context
	}
	r := &runner{ctx: ctx, sc: sc, spec: spec, d: d, opt: opt, byName: map[string]*phone{}, t0: -1,
		sizer: wire.NewSizer(), sent: map[wire.Kind]int{}}
	r.codecW, r.codecR = wire.NewWriter(&r.frame), wire.NewReader(&r.frame, maxFrame)
	with, err := r.sizer.Size(&wire.Merged{WeightsHash: wire.Hash{1}})
	if err != nil {
		return nil, fmt.Errorf("sim: sizing a Merged: %w", err)
	}
	without, err := r.sizer.Size(&wire.Merged{})
	if err != nil {
		return nil, fmt.Errorf("sim: sizing a Merged: %w", err)
	}
	r.hashBytes = with - without
	r.res = &RunResult{Name: spec.Name, Policy: spec.Policy, Solo: spec.Solo, TimeToTarget: -1, EnergyToTarget: -1}
	refFLOPs, err := TrainFLOPs(RefModel, models.Config{}, RefBatch)
	if err != nil {
		return nil, err
	}
	solo := spec.Policy == "solo"
	r.net = newNetwork(sc.Network, solo)

	// The phones: all of the scenario's, or the solo one with the whole
	// training set (and the data order of device 0, so that every solo run
	// trains identically and only its time differs).
	hubProfile := sc.Hub
	for i, ds := range sc.Devices {
		if solo && ds.Name != spec.Solo {
			continue
		}
		prof, err := lookupProfile(sc.Profiles, ds.Profile)
		if err != nil {
			return nil, err
		}
		p := &phone{spec: ds, idx: i, stats: &DeviceTime{Name: ds.Name, Profile: ds.Profile},
			meter: newMeter(sc.powerOf(ds.Profile))}
		p.dev = newDevice(prof, refFLOPs, ds, rand.New(rand.NewPCG(sc.Seed, 1000+uint64(i))))
		if solo {
			hubProfile = ds.Profile
			p.shard = d.Train
			p.idx = 0
			p.dev.jitter = ds.Jitter
		} else if p.shard, err = shard(d.Train, i, len(sc.Devices)); err != nil {
			return nil, fmt.Errorf("sim: %w", err)
		}
		r.phones = append(r.phones, p)
		r.byName[ds.Name] = p
		r.res.Devices = append(r.res.Devices, p.stats)
	}
	hp, err := lookupProfile(sc.Profiles, hubProfile)
	if err != nil {
		return nil, err
	}
	r.hubDev = newDevice(hp, refFLOPs, DeviceSpec{Throttle: 1}, nil)

	// The hub: the master network from the seed, the scenario's optimizer.
	b := r.newCPU()
	net, err := models.Build(b, sc.Model, opt.ModelConfig)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	net.InitParams(rand.New(rand.NewPCG(sc.Seed, 1)))
	if opt.Init != nil {
		if err := opt.Init(net); err != nil {
			return nil, fmt.Errorf("sim: preparing the network: %w", err)
		}
	}
	if r.sampleFLOPs, err = trainFLOPsFrozen(sc.Model, opt.ModelConfig, net.Layers()); err != nil {
		return nil, err
	}
	r.paramCount = net.NumParams()
	// The run as data (runspec): the same set-up cmd/hub makes from its
	// flags, from the scenario.
	rs := runspec.Default()
	rs.Model, rs.ModelConfig = sc.Model, opt.ModelConfig
	rs.Optimizer = runspec.Optimizer{Name: sc.Optimizer, LR: sc.LR, Momentum: sc.Momentum,
		WeightDecay: sc.WeightDecay, Nesterov: sc.Nesterov}
	rs.Schedule = runspec.Schedule{Name: "constant"}
	r.stopper = hub.NewStopper(hub.StopRule{Iterations: uint64(r.iterations()), EvalEvery: sc.EvalEvery,
		Patience: sc.Patience, Target: sc.Target})
	if err := r.stopper.Rule().Validate(); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	rs.Stop = r.stopper.Rule()
	rs.GlobalBatch = sc.GlobalBatch
	rs.MaxWorkers, rs.MinWorkers = len(r.phones), 0
	for _, p := range r.phones {
		if solo || !p.spec.Absent {
			rs.MinWorkers++
		}
	}
	// No deadline unless the scenario sets one; measured unless the
	// variant fixes it.
	rs.Deadline.Tick, rs.Deadline.Max, rs.Deadline.MaxMisses = tick, sc.Deadline, 3
	if spec.Deadline == "fixed" {
		rs.Deadline.Factor = 0
	}
	rs.NoWeightsHash = !sc.Hash
	rs.Policy.Smoothing, rs.Policy.ParkMargin = sc.Smoothing, sc.ParkMargin
	rs.Policy.Batch = hub.Adaptive
	switch spec.Policy {
	case "fixed", "paper", "solo":
		rs.Policy.Batch = hub.Fixed
	case "adaptive-park":
		rs.Policy.Park = true
	case "energy":
		rs.Policy.Batch = hub.Energy
	}
	rs.Policy.EnergySlack = sc.EnergySlack
	rs.Codec = runspec.Codec{Compression: sc.Compression, Overlap: sc.Overlap}
	if solo || spec.Policy == "paper" {
		rs.Codec = runspec.Codec{Compression: "none"}
	}
	if err := r.setupComm(net, rs.Codec); err != nil {
		return nil, err
	}
	// A top-k session moves SGD's momentum or Adam onto the workers
	// (hub.ConfigureTopK): the master then steps with plain SGD.
	run, err := rs.Build(b, net)
	if err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	r.setup, r.hubTr = rs, run.Trainer
	if r.hub, err = run.Core(""); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}
	return r, nil
}

// iterations is the run's cap.
func (r *runner) iterations() int {
	if r.opt.Iterations > 0 {
		return min(r.opt.Iterations, r.sc.Iterations)
	}
	return r.sc.Iterations
}

// fail records the first error; the run stops at the next event.
func (r *runner) fail(err error) {
	if r.err == nil {
		r.err = fmt.Errorf("%w (run %q of scenario %s, seed %d: rerun with --scenario %s --seed %d)",
			err, r.spec.Name, r.sc.Name, r.sc.Seed, r.sc.Name, r.sc.Seed)
	}
}

// run simulates until the hub is done and every message has landed.
func (r *runner) run() (*RunResult, error) {
	r.start()
	for r.advance(math.MaxInt) {
	}
	return r.result()
}

// start connects the phones present at the start and schedules the faults
// and the hub's ticks.
func (r *runner) start() {
	r.startFaults()
	for _, p := range r.phones {
		if r.spec.Policy == "solo" || !p.spec.Absent {
			r.connect(p)
		}
	}
	if r.spec.Policy != "solo" {
		for _, f := range r.sc.Faults {
			r.clk.at(f.At.Nanoseconds(), func() { r.fault(f) })
		}
	}
	if r.sc.Deadline > 0 {
		var tickFn func()
		tickFn = func() {
			if r.hubDone {
				return
			}
			r.hub.Tick()
			r.flushHub()
			r.clk.at(r.clk.now+tick.Nanoseconds(), tickFn)
		}
		r.clk.at(tick.Nanoseconds(), tickFn)
	}
}

// advance runs events until the hub has merged k iterations, and reports
// whether anything is left to run.
func (r *runner) advance(k int) bool {
	for r.err == nil && r.res.Iterations < k {
		if !r.clk.step() {
			return false
		}
		if r.events++; r.events%64 == 0 {
			if err := r.ctx.Err(); err != nil {
				r.err = err
			}
		}
	}
	return r.err == nil && r.clk.pending() > 0
}

// result returns the run's figures once advance has nothing left.
func (r *runner) result() (*RunResult, error) {
	if r.err != nil {
		return nil, r.err
	}
	if !r.hubDone {
		last := r.res.Log[max(0, len(r.res.Log)-5):]
		return nil, fmt.Errorf("sim: run %q of %s stalled at %.3f s, hub at iteration %d: nothing left to happen and the hub is not done (seed %d); last events:\n%s",
			r.spec.Name, r.sc.Name, float64(r.clk.now)/1e9, r.hub.Iteration(), r.sc.Seed, strings.Join(last, "\n"))
	}
	r.finish()
	return r.res, nil
}

// connect opens a link to the hub for p with a fresh worker core (a phone
// that rejoins starts over, as worker.Session does) and sends its Register.
func (r *runner) connect(p *phone) {
	cfg := worker.DefaultConfig()
	cfg.Name, cfg.Hub, cfg.Device = p.spec.Name, "hub", p.spec.Profile
	cfg.Speed = p.dev.flops / r.sampleFLOPs // what a phone's benchmark would say
	// What the hub's energy policy weighs (hub/energy.go): the phone's
	// compute draw, and its radio's draw while it moves bytes at the
	// network's rate; a phone on a charger says so.
	pw := p.meter.pw
	cfg.Info = map[string]string{
		wire.InfoComputeWatts: strconv.FormatFloat(pw.compute(), 'g', -1, 64),
		wire.InfoRadioWatts:   strconv.FormatFloat(pw.Tx*r.sc.Network.Bandwidth/8, 'g', -1, 64),
	}
	if p.spec.Charging {
		cfg.Battery = wire.Battery{Percent: 80, Status: wire.BatteryCharging}
	}
	core, err := worker.NewCore(cfg, r.newCPU())
	if err != nil {
		r.fail(err)
		return
	}
	seed := r.sc.Seed*1_000_003 + uint64(p.idx)
	p.core, p.link = core, &link{}
	p.mismatches, p.drifted, p.resyncing = 0, false, false
	p.loader = data.NewLoader(p.shard, 1, seed, true)
	p.alive, p.reached = true, false
	r.connected(p)
	r.flushWorker(p)
}

// fault makes a phone leave (its connection drops) or join.
func (r *runner) fault(f Fault) {
	if f.Partition {
		r.partition(f)
		return
	}
	p := r.byName[f.Device]
	if r.hubDone || p == nil {
		return
	}
	if f.Diverge {
		r.diverge(p)
		return
	}
	r.note(fmt.Sprintf("fault: %s %s", f.Device, map[bool]string{true: "leaves", false: "joins"}[f.Leave]))
	if !f.Leave {
		if !p.alive {
			r.connect(p)
		}
		return
	}
	if !p.alive {
		return
	}
	p.alive = false
	p.gen++
	p.link = nil
	p.stats.end(r.clk.now, r.t0)
	r.hub.Leave(p.spec.Name)
	r.flushHub()
}

// newCPU returns a CPU backend for one of the run's networks, capped at
// the run's threads.
func (r *runner) newCPU() *cpu.CPU {
	b := cpu.NewCPU()
	b.SetThreads(r.threads)
	r.cpus = append(r.cpus, b)
	return b
}

// setThreads caps the threads of every backend of the run at n (0:
// GOMAXPROCS): the run's share of the cores, while other runs go on
// beside it. Results do not depend on it (cpu.CPU.SetThreads); a share
// keeps several runs' matrix products from spinning for the same cores.
func (r *runner) setThreads(n int) {
	if n == r.threads {
		return
	}
	r.threads = n
	for _, b := range r.cpus {
		b.SetThreads(n)
	}
}

// note records a line of the run's log with the virtual time.
func (r *runner) note(s string) {
	r.res.Log = append(r.res.Log, fmt.Sprintf("%9.3f s  %s", float64(r.clk.now)/1e9, s))
}

// rel returns t in seconds from the start of training.
func (r *runner) rel(t int64) float64 {
	if r.t0 < 0 {
		return float64(t) / 1e9
	}
	return float64(t-r.t0) / 1e9
}

// frameSize returns the bytes of m's frame on the wire.
func (r *runner) frameSize(m wire.Message) int {
	n, err := r.sizer.Size(m)
	if err != nil {
		r.fail(fmt.Errorf("sim: encode %s: %w", m.Kind(), err))
	}
	if mm, ok := m.(*wire.Merged); ok && !mm.Partial && mm.WeightsHash.IsZero() && !r.sc.Hash {
		// Sized as a real one: with the hash the hub did not compute
		// (a final Merged carries it; the parts sent ahead do not).
		n += r.hashBytes
	}
	if n-4 > maxFrame {
		r.fail(fmt.Errorf("sim: a %s frame of %d bytes is over the receivers' cap of %d: %w", m.Kind(), n, maxFrame, wire.ErrTooLarge))
	}
	return n
}
