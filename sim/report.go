package sim

import (
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// Options tune a simulation without changing its scenario.
type Options struct {
	// Iterations, when > 0, caps every run at fewer iterations than the
	// scenario says (for quick checks and tests).
	Iterations int
	// Policies, when not nil, replaces the scenario's list of runs.
	Policies []string
	// Parallel is how many runs go on at once (each is single-threaded and
	// deterministic on its own); 0 means runtime.GOMAXPROCS.
	Parallel int
	// Timeline is how many iterations the per-device timeline records;
	// 0 means 10.
	Timeline int
	// Progress, when set, is called after every merge of every run. Runs
	// go on in parallel: it must be safe for concurrent use.
	Progress func(Progress)
	// ModelConfig overrides the defaults of the scenario's model (its zero
	// fields keep them): classes, input shape, width.
	ModelConfig models.Config
	// Init, when set, prepares the hub's network of every run after the
	// seeded initialisation: to load pretrained weights or to freeze
	// layers (the workers freeze what the hub froze, and a phone's compute
	// time then counts the backward pass only down to the first trainable
	// layer). Runs may go on in parallel: it must be safe for concurrent
	// use.
	Init func(net *solver.Net) error
}

func (o Options) timeline() int {
	if o.Timeline > 0 {
		return o.Timeline
	}
	return 10
}

// Progress is a run's state after a merge.
type Progress struct {
	Run        string
	Iteration  int
	Of         int
	SimSeconds float64
	Accuracy   float64 // the last evaluated, -1 before any
}

// Report is the outcome of a scenario: one result per run, in plan order.
// It holds no wall-clock measurement, so the same scenario and seed give
// the same report bit for bit.
type Report struct {
	Scenario string
	Seed     uint64
	// Runs are the solo runs (one per distinct device profile), then the
	// co-training policies, in the scenario's order.
	Runs []*RunResult
}

// RunResult is one run's figures. Times are simulated seconds from the
// start of training (the first compute of iteration 0): the model's
// distribution before it is not counted.
type RunResult struct {
	Name   string
	Policy string
	Solo   string // the device of a solo run
	// Iterations and Samples merged.
	Iterations int
	Samples    int
	// TenIterations is the time until every phone holds the state after
	// 10 iterations (0 when the run had fewer).
	TenIterations float64
	// End is when the last merge was done.
	End float64
	// TimeToTarget is when an evaluation first reached the scenario's
	// target accuracy, -1 if none did.
	TimeToTarget float64
	// Energy is what every phone of the run spent, in joules, from the
	// start of training to the end (docs/energy.md; the hub's own energy
	// is not counted); EnergyToTarget is what they had spent when an
	// evaluation first reached the target, -1 if none did.
	Energy, EnergyToTarget float64
	// Bytes is what crossed the network, both ways (0 for a solo run,
	// whose hub is on the phone); HubBytesSent is the hub's part.
	Bytes        int64
	HubBytesSent int64
	// MediumBusy is the fraction of End the medium carried data (shared),
	// or the links' mean (links).
	MediumBusy float64
	// GradBytesUp and GradBytesDown count the frames of the gradient
	// traffic: every push, and every merged update (each copy sent).
	GradBytesUp, GradBytesDown int64
	// Faults counts what the network's faults did (all zero without).
	Faults FaultStats
	// Mismatches counts the Merged after which a phone's weights hash
	// differed from the hub's (the phone then asks for the hub's state);
	// Resynced, the states loaded after one that left the phone's weights
	// equal to the hub's again, bit for bit. Both stay 0 unless the
	// scenario keeps the hash (Scenario.Hash).
	Mismatches, Resynced int
	// Curve is the test accuracy at each evaluation.
	Curve []Point
	// TrainLoss is the training loss of every iteration merged (the
	// sample-weighted mean of the workers' batch losses).
	TrainLoss []LossPoint
	// Devices is where each phone's time went.
	Devices []*DeviceTime
	// Timeline holds the spans of the first iterations, for the plot.
	Timeline []Segment
	// Parks counts the hub's worker-parked events.
	Parks int
	// DeadlineWait is the virtual seconds the barrier stayed open after
	// the last push it accepted (or after it opened, if none came), summed
	// over the iterations that ended at the deadline: the time the workers
	// that pushed lost waiting for those that did not.
	DeadlineWait float64
	// Checks counts the iterations whose invariants were checked.
	Checks int
	// Log holds the run's notable events with their absolute virtual time.
	Log []string
}

// Point is one evaluation: test accuracy and loss.
type Point struct {
	Iteration int
	Seconds   float64
	Accuracy  float64
	Loss      float64
	// Joules is what the run's phones had spent by then.
	Joules float64
}

// LossPoint is one iteration's training loss.
type LossPoint struct {
	Iteration int
	Seconds   float64
	Loss      float64
}

// DeviceTime splits a phone's time from the start of training to its end
// (the run's end, or when it left).
type DeviceTime struct {
	Name, Profile string
	Samples       int
	// Seconds computing (forward, backward and optimizer steps), sending,
	// receiving (transfer and latency), waiting for the medium, and idle
	// (waiting for the others at the barrier).
	Compute, Send, Receive, AirWait, Idle float64
	// Wall is the seconds from the start of training to its end; the
	// parts above overlap (a push goes out while the backward pass goes
	// on), so they may add up to more.
	Wall float64
	// Throttled counts computes run throttled.
	Throttled int
	// BytesSent counts the phone's frames; BytesReceived the hub's frames
	// to it. Summed over the phones they are the run's Bytes (on a
	// network; a solo run's loopback counts none there).
	BytesSent, BytesReceived int64
	// Energy is where its energy went (energy.go).
	Energy Energy
	ended  bool
	endAt  int64
}

// end marks the phone's end at t (once).
func (d *DeviceTime) end(t, t0 int64) {
	if !d.ended {
		d.ended, d.endAt = true, t
	}
}

// Segment is a span of one device's time (Kind: compute, send, receive,
// wait-air) during iteration Iteration; the rest is idle.
type Segment struct {
	Device    string
	Kind      string
	Start     float64
	End       float64
	Iteration int
}

// SamplesPerSecond is the run's throughput: samples merged over End.
func (r *RunResult) SamplesPerSecond() float64 {
	if r.End <= 0 {
		return 0
	}
	return float64(r.Samples) / r.End
}

// FinalAccuracy is the last evaluated test accuracy (-1 if none).
func (r *RunResult) FinalAccuracy() float64 { return r.lastAccuracy() }

func (r *RunResult) lastAccuracy() float64 {
	if len(r.Curve) == 0 {
		return -1
	}
	return r.Curve[len(r.Curve)-1].Accuracy
}

// Run returns the named run, or nil.
func (rep *Report) Run(name string) *RunResult {
	for _, r := range rep.Runs {
		if r.Name == name {
			return r
		}
	}
	return nil
}

// FastestSolo returns the solo run with the shortest TenIterations (the
// first such), or nil.
func (rep *Report) FastestSolo() *RunResult {
	var best *RunResult
	for _, r := range rep.Runs {
		if r.Policy == "solo" && r.TenIterations > 0 && (best == nil || r.TenIterations < best.TenIterations) {
			best = r
		}
	}
	return best
}

// finish closes the books of a run.
func (r *runner) finish() {
	res := r.res
	res.Bytes = r.net.bytes
	res.Faults = r.net.stats
	if res.End > 0 {
		busy := float64(r.air) / 1e9
		if r.net.kind == "links" && len(r.phones) > 0 {
			busy /= float64(len(r.phones))
		}
		res.MediumBusy = busy / res.End
	}
	t0 := max(r.t0, 0)
	for _, p := range r.phones {
		d := p.stats
		end := r.clk.now
		if d.ended {
			end = d.endAt
		}
		d.Wall = max(0, float64(end-t0)/1e9)
		d.Idle = max(0, d.Wall-d.Compute-d.Send-d.Receive-d.AirWait)
		d.Energy = r.phoneEnergy(p, end)
		res.Energy += d.Energy.Total()
	}
	off := float64(t0) / 1e9
	for i := range res.Timeline {
		res.Timeline[i].Start -= off
		res.Timeline[i].End -= off
	}
}
