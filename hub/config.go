package hub

import (
	"errors"
	"fmt"
	"time"

	"github.com/cotrain/cotrain/sync/compress"
)

// Sentinel errors. Step returns an error wrapping one of them for every
// input it refuses; a refused input is dropped whole and never touches the
// model.
var (
	ErrConfig      = errors.New("hub: invalid config")
	ErrUnknownPeer = errors.New("hub: message from a peer that has not registered")
	ErrUnexpected  = errors.New("hub: unexpected message")
	ErrStale       = errors.New("hub: push for an iteration already closed")
	ErrFuture      = errors.New("hub: push for an iteration not open yet")
	ErrNotMember   = errors.New("hub: push from a worker not in this iteration")
	ErrDuplicate   = errors.New("hub: second push for the same iteration")
	ErrBadSamples  = errors.New("hub: push with an impossible sample count or time")
	ErrBadLength   = errors.New("hub: gradient length does not match the model")
	ErrNonFinite   = errors.New("hub: non-finite value in a push")
	ErrFull        = errors.New("hub: the run takes no more workers")
	ErrNotAllowed  = errors.New("hub: peer not on the allowlist")
	ErrClasses     = errors.New("hub: worker's classes differ from the model's")
	ErrDone        = errors.New("hub: the run is over")
)

// Config holds the hub's settings.
type Config struct {
	// ID is the hub's Sender in every message it writes.
	ID string
	// MinWorkers is how many workers must register before the first
	// iteration opens. It gates the start only: if workers leave later, the
	// run goes on with those left, and parks while none is left.
	MinWorkers int
	// MaxWorkers caps the live workers; a Register beyond it is answered
	// with Reject{Code: wire.CodeFull}. At most GlobalBatch, so that every
	// worker gets at least one sample.
	MaxWorkers int
	// GlobalBatch is the number of samples per iteration, summed over the
	// workers of the iteration.
	GlobalBatch int
	// Iterations is the trainer iteration (solver.Trainer.Iter) at which the
	// run ends; 0 means until Stop. A hub resumed from a checkpoint at
	// iteration 400 with Iterations 1000 runs 600 more.
	Iterations uint64
	// DeadlineTicks is the barrier's deadline: the number of Ticks after an
	// iteration opens at which the workers that have not pushed are marked
	// late. 0 means no deadline (the barrier waits for every member).
	DeadlineTicks int
	// DeadlineFactor, when above 0, measures the deadline (deadline.go):
	// each iteration's is DeadlineFactor times the slowest member's recent
	// iteration time in ticks, at least DeadlineFloorTicks and at most
	// DeadlineTicks (the upper bound, and the deadline while a member has
	// not been measured yet), so that a worker that falls silent costs the
	// others a few iterations' time instead of DeadlineTicks. 0 keeps the
	// fixed deadline DeadlineTicks. 0 or at least 1.
	DeadlineFactor float64
	// DeadlineFloorTicks is the measured deadline's least value, in
	// ticks: a margin for the jitter of fast iterations (a GC pause, a
	// Wi-Fi retransmission) that a multiple of a short time does not cover.
	DeadlineFloorTicks int
	// Tick is how long the driver's tick is. The core never reads a clock;
	// it only reports DeadlineTicks·Tick to workers as
	// Session.DeadlineMillis.
	Tick time.Duration
	// Batch is the batch policy: Fixed, Adaptive or Energy.
	Batch BatchPolicy
	// EnergySlack is the Energy policy's knob: how many times the adaptive
	// split's iteration time an iteration may take so that the workers
	// whose samples cost the least energy do more of them (energy.go). At
	// least 1 (1: the adaptive split); DefaultConfig's is 1.5.
	EnergySlack float64
	// Smoothing is the weight α of the newest measurement in the adaptive
	// policy's exponential moving average of each worker's time per sample:
	// t ← α·(ComputeNanos/Samples) + (1−α)·t. 0.3 follows a change of speed
	// (a phone throttling) within about 3 iterations while one noisy
	// measurement moves a share by at most 30%. In (0, 1].
	Smoothing float64
	// MaxMisses is how many deadlines in a row a worker may miss before the
	// hub drops it (Goodbye, then forgotten). A worker that is connected but
	// never pushes otherwise costs a deadline every other iteration. 0 means
	// never drop.
	MaxMisses int
	// Allow, when not nil, is the set of peer ids that may register (the
	// ids the transport authenticated). A Register from any other peer is
	// answered with Reject{Code: wire.CodeAuth} naming its id, and refused
	// with ErrNotAllowed. Nil lets any peer that reaches the hub register
	// (a private network's key is then the only gate). The core only reads
	// it.
	Allow map[string]bool
	// Park lets the adaptive policy park a worker whose contribution does
	// not pay for its communication: it gets no batch (batch 0 in a Welcome
	// or absent from Merged.BatchSizes), stays connected and in sync by
	// applying every Merged, and is taken back when the prediction turns
	// (see ParkMargin, ParkProbe and Core.ObserveComm). The hub emits
	// EventWorkerParked, EventWorkerResumed and EventWorkerProbed. Ignored
	// under Fixed.
	Park bool
	// Compression is the gradient codec of the session (sync/compress):
	// "none" (or ""), "fp16", "int8" or "topk:F". Workers learn it from
	// their Welcome. Lossy codecs lose nothing for good: workers keep what
	// they did not send (error feedback), and every node applies the
	// merged update the hub's payload decodes to.
	Compression string
	// WorkerMomentum, when above 0, turns on momentum correction in a
	// top-k session (Deep Gradient Compression's): every worker runs SGD
	// momentum WorkerMomentum on its own gradient, accumulates the velocity
	// into its residual, sends the top-k of that and clears the velocity
	// where it sent (compress.Feedback.SetMomentum), and every node steps on
	// the merged update with plain SGD. The trainer's optimizer must then be
	// SGD with momentum 0 and without Nesterov (weight decay stays there:
	// every node holds the same weights, so the decay need not travel).
	// ConfigureTopK sets it. In [0, 1).
	WorkerMomentum float32
	// WorkerBeta2, when above 0, turns on Adam correction in a top-k
	// session instead (compress.Feedback.SetAdam): every worker runs Adam
	// with β1 WorkerMomentum, β2 WorkerBeta2, ε WorkerEps and L2 decay
	// WorkerWeightDecay on its own gradient and sends the top-k of the
	// accumulated step directions; the nodes' optimizer must then be SGD
	// with momentum 0 and weight decay 0 at Adam's learning rate.
	// ConfigureTopK leaves them 0 (docs/compression.md: no better than
	// Adam on the nodes); set them by hand to try it.
	WorkerBeta2, WorkerEps, WorkerWeightDecay float32
	// TopKMin and TopKWarmup tune a top-k session's pushes: at least
	// TopKMin values a part (a smaller part whole), and TopKWarmup
	// iterations of denser pushes at the start (compress.WarmupFraction).
	// ConfigureTopK sets them; 0 turns each off. Top-k only.
	TopKMin    int
	TopKWarmup uint64
	// Overlap pushes and merges the gradient layer by layer (PartBounds),
	// so that the big layers' transfers overlap the backward pass of the
	// layers below them.
	Overlap bool
	// NoWeightsHash leaves Merged.WeightsHash zero, so the workers do not
	// compare their weights with the hub's (a worker skips a zero hash).
	// For a driver that compares them itself: the simulator's checker does
	// it bit for bit at every step, and hashing the weights there would
	// cost a check already made. A real run keeps the hash.
	NoWeightsHash bool
	// ParkMargin is the hysteresis of parking, in [0, 1): a worker is
	// parked only when the predicted time per sample without it is below
	// (1−ParkMargin) times the time with it, and taken back only when the
	// time with it is below (1−ParkMargin) times the time without it, so
	// that a noisy measurement does not flip a worker every iteration.
	ParkMargin float64
	// ParkProbe is how many iterations a worker stays parked before the
	// hub gives it a batch for one iteration, a probe, to measure its
	// throughput and communication afresh: a parked worker pushes nothing,
	// so without probes the hub would weigh it by figures that may be stale
	// (the Wi-Fi got better, the phone cooled down). 0 means never.
	ParkProbe int
	// BatteryFloor, when above 0, parks every worker whose battery (as it
	// reports it: wire.Battery, at registration, with its pushes and in
	// Status messages) is discharging below BatteryFloor percent, under
	// any batch policy: it gets no batch, stays connected and in sync, and
	// gets a batch again at the first iteration that opens after it
	// reports charging (or full) or a level at or above the floor
	// (EventWorkerParked, EventWorkerResumed; battery.go). A worker that
	// reports no battery is never parked for it. While every live worker is
	// parked so, the run waits (EventParked). In [0, 100].
	BatteryFloor float64
}

// DefaultConfig returns a config for a few phones: start with 2 workers, at
// most 16, global batch 64, a deadline of 50 ticks of 100 ms measured as 3
// times the slowest member's iteration time, at least 10 ticks, adaptive
// batches with α 0.3, workers dropped after 3 missed deadlines in a row,
// top-k compression (DefaultCompression of SGD) and layer-wise overlap.
// A caller that builds its trainer should pass the config through
// ConfigureTopK, which moves SGD's momentum onto the workers.
func DefaultConfig() Config {
	return Config{
		Compression:        DefaultCompression("sgd"),
		Overlap:            true,
		ID:                 "hub",
		MinWorkers:         2,
		MaxWorkers:         16,
		GlobalBatch:        64,
		DeadlineTicks:      50,
		DeadlineFactor:     3,
		DeadlineFloorTicks: 10,
		Tick:               100 * time.Millisecond,
		Batch:              Adaptive,
		Smoothing:          0.3,
		MaxMisses:          3,
		ParkProbe:          20,
		EnergySlack:        1.5,
	}
}

// DefaultCompression is cotrain's codec for a session whose optimizer is
// optimizer ("sgd" or "adam") when none is asked for, the codec that wins
// on shared Wi-Fi without costing accuracy (docs/compression.md):
//
//   - SGD: "topk:0.01". With momentum correction it sends about 100 times
//     fewer bytes up than the whole gradient at the same test accuracy, and
//     paper-table1's two phones beat the faster one alone only with it.
//   - Adam: "fp16". Adam under top-k loses 1.5 points or more, with or
//     without Adam correction; half floats halve the bytes and lose none.
func DefaultCompression(optimizer string) string {
	if optimizer == "adam" {
		return "fp16"
	}
	return "topk:0.01"
}

// Validate returns an error wrapping ErrConfig for the first invalid field.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	switch {
	case c.ID == "":
		return bad("empty ID")
	case c.GlobalBatch < 1:
		return bad("GlobalBatch %d, want at least 1", c.GlobalBatch)
	case c.MinWorkers < 1:
		return bad("MinWorkers %d, want at least 1", c.MinWorkers)
	case c.MaxWorkers < c.MinWorkers:
		return bad("MaxWorkers %d below MinWorkers %d", c.MaxWorkers, c.MinWorkers)
	case c.MaxWorkers > c.GlobalBatch:
		return bad("MaxWorkers %d above GlobalBatch %d (every worker needs a sample)", c.MaxWorkers, c.GlobalBatch)
	case c.DeadlineTicks < 0:
		return bad("DeadlineTicks %d, want 0 (none) or more", c.DeadlineTicks)
	case c.DeadlineFactor != 0 && !(c.DeadlineFactor >= 1 && c.DeadlineFactor <= 1e6):
		return bad("DeadlineFactor %v, want 0 (fixed deadline) or from 1 to 1e6", c.DeadlineFactor)
	case c.DeadlineFloorTicks < 0:
		return bad("DeadlineFloorTicks %d, want 0 or more", c.DeadlineFloorTicks)
	case c.Tick < 0:
		return bad("Tick %v, want 0 or more", c.Tick)
	case c.Batch != Fixed && c.Batch != Adaptive && c.Batch != Energy:
		return bad("batch policy %v, want fixed, adaptive or energy", c.Batch)
	case c.Batch == Energy && !(c.EnergySlack >= 1 && c.EnergySlack <= 100):
		return bad("EnergySlack %v, want from 1 to 100", c.EnergySlack)
	case !(c.Smoothing > 0 && c.Smoothing <= 1):
		return bad("Smoothing %v, want (0, 1]", c.Smoothing)
	case c.MaxMisses < 0:
		return bad("MaxMisses %d, want 0 (never) or more", c.MaxMisses)
	case !(c.ParkMargin >= 0 && c.ParkMargin < 1):
		return bad("ParkMargin %v, want [0, 1)", c.ParkMargin)
	case c.ParkProbe < 0:
		return bad("ParkProbe %d, want 0 (never) or more", c.ParkProbe)
	case !(c.BatteryFloor >= 0 && c.BatteryFloor <= 100):
		return bad("BatteryFloor %v, want a percentage in [0, 100] (0: off)", c.BatteryFloor)
	}
	codec, err := compress.Parse(c.Compression)
	if err != nil {
		return bad("Compression: %v", err)
	}
	switch {
	case !(c.WorkerMomentum >= 0 && c.WorkerMomentum < 1):
		return bad("WorkerMomentum %v, want [0, 1)", c.WorkerMomentum)
	case c.WorkerMomentum > 0 && codec.Format() != compress.FormatSparse:
		return bad("WorkerMomentum %v with compression %s: momentum correction needs top-k", c.WorkerMomentum, codec)
	case c.WorkerBeta2 != 0 && !(c.WorkerBeta2 > 0 && c.WorkerBeta2 < 1 && c.WorkerMomentum < 1 && c.WorkerEps > 0 && c.WorkerWeightDecay >= 0):
		return bad("Adam correction with β1 %v, β2 %v, ε %v, weight decay %v: want β in [0, 1), ε > 0, decay ≥ 0", c.WorkerMomentum, c.WorkerBeta2, c.WorkerEps, c.WorkerWeightDecay)
	case c.WorkerBeta2 == 0 && (c.WorkerEps != 0 || c.WorkerWeightDecay != 0):
		return bad("WorkerEps %v, WorkerWeightDecay %v without WorkerBeta2: they tune Adam correction only", c.WorkerEps, c.WorkerWeightDecay)
	case c.WorkerBeta2 > 0 && codec.Format() != compress.FormatSparse:
		return bad("WorkerBeta2 %v with compression %s: Adam correction needs top-k", c.WorkerBeta2, codec)
	case c.TopKMin < 0:
		return bad("TopKMin %d, want 0 or more", c.TopKMin)
	case (c.TopKMin > 0 || c.TopKWarmup > 0) && codec.Format() != compress.FormatSparse:
		return bad("TopKMin %d, TopKWarmup %d with compression %s: they tune top-k only", c.TopKMin, c.TopKWarmup, codec)
	}
	return nil
}
