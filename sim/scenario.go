package sim

import (
	"embed"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// ErrScenario is wrapped by every error about a scenario file.
var ErrScenario = errors.New("sim: bad scenario")

// Scenario is one simulation: who trains, over what network, what, and how
// the runs are compared. It is data: ParseScenario reads it from a small
// text file (see docs/simulator.md), so a new scenario needs no code.
type Scenario struct {
	Name        string
	Description string
	// Seed drives every random choice: initial weights, data order, jitter.
	Seed uint64
	// Model names the network (models.Build); Data is "mnist",
	// "synthetic" (a seeded MNIST-shaped set, for tests) or "licenses"
	// (the GNU licence texts of internal/corpus, for a language model such
	// as lstm-lm: each phone trains on a part of every training licence,
	// the run is evaluated on the held-out ones) or "accel" (simulated
	// accelerometer windows, data.AccelSignals, for a model of sensor
	// windows such as har-cnn: evaluated on recordings of another seed).
	Model string
	Data  string
	// Context is the words of context of a text sample (data "licenses");
	// 0 is data.DefaultContext.
	Context int
	// TrainImages, when > 0, keeps only the first so many training images
	// (before sharding); TestImages is how many test images, spread evenly
	// over the test set, evaluate the accuracy.
	TrainImages int
	TestImages  int
	// EvalEvery is how many iterations pass between evaluations.
	EvalEvery int
	// Target is the test accuracy a run stops at (0: run all Iterations).
	Target float64
	// Patience stops a run once the test loss has not improved for so
	// many evaluations in a row (0: off), as cmd/hub's --patience does on
	// its held-out set: both apply hub.StopRule.
	Patience int
	// Iterations caps every run.
	Iterations int
	// GlobalBatch is the samples per iteration, summed over the workers;
	// a solo run uses it as its batch.
	GlobalBatch int
	// Optimizer: "sgd" (LR, Momentum, WeightDecay, Nesterov) or "adam";
	// built as cmd/hub builds it (hub.ConfigureTopK, solver.NewOptimizer).
	Optimizer   string
	LR          float64
	Momentum    float64
	WeightDecay float64
	Nesterov    bool
	// Policies are the runs to make, in order: "solo" (each distinct
	// profile alone), "paper" (fixed shares, uncompressed, no overlap:
	// the system the paper measured), "fixed", "adaptive",
	// "adaptive-park".
	Policies []string
	// Primary is the policy the JSON "done" event reports.
	Primary string
	// Smoothing and ParkMargin go to hub.Config.
	Smoothing  float64
	ParkMargin float64
	// EnergySlack goes to hub.Config for the "energy" policy: how many
	// times the adaptive split's iteration time an iteration may take.
	EnergySlack float64
	// Compression is the hub's gradient codec (hub.Config.Compression:
	// none, fp16, int8, topk:F) and Overlap its layer-wise push and merge
	// (hub.Config.Overlap), for the co-training runs; a solo run sends
	// nothing. Both default to cotrain's: hub.DefaultCompression of the
	// optimizer, and hub.DefaultConfig's overlap.
	Compression string
	Overlap     bool
	// Hash keeps the hub's weights hash in every Merged, as a real run
	// does, so each phone hashes its weights after a step and resyncs when
	// they differ. Off (the default), the hub sends none
	// (hub.Config.NoWeightsHash) and the checker alone compares the
	// weights, bit for bit, at every step: the same verdict, without
	// hashing; a Merged's frame is sized with the hash either way.
	Hash bool
	// Deadline is the hub's barrier deadline (0: none), counted in ticks
	// of 100 ms of virtual time.
	Deadline time.Duration
	// DeadlineRules, when not empty, makes every co-training run once per
	// rule of the barrier's deadline: "measured" (hub.Config's
	// DeadlineFactor and floor, cmd/hub's default: a multiple of the
	// slowest member's recent iteration time, at most Deadline) and
	// "fixed" (always Deadline, the rule before it). The runs are named
	// "POLICY RULE-deadline". Empty: one run per policy, measured.
	DeadlineRules []string
	Network       NetworkSpec
	// Hub is the hub's device profile.
	Hub      string
	Profiles []Profile
	// Powers are the scenario's power lines by profile (sim/energy.go);
	// a profile without one has its built-in model.
	Powers  map[string]Power
	Devices []DeviceSpec
	Faults  []Fault
}

// NetworkSpec is the network between the hub and the phones.
type NetworkSpec struct {
	Bandwidth float64 // bits per second
	Latency   time.Duration
	Medium    string // "shared" or "links"

	// The network's faults (docs/simulator.md, "Faults"). Every draw comes
	// from the scenario's seed; all zero means a network that never fails.
	//
	// Loss is the probability that a message is lost outright while its
	// connection stays up: the protocol must recover on its own (the hub's
	// deadline, the worker's resync).
	Loss float64
	// Retransmit is the probability that the transport loses a segment of
	// a message and resends it after RTO (doubling while the resend is lost
	// again): a delay, never a loss, as on TCP or QUIC over Wi-Fi.
	Retransmit float64
	RTO        time.Duration
	// Spike is the probability that a message is held up by a delay spike
	// of 0.5 to 1.5 times SpikeDelay (a phone's radio dozing, a busy
	// access point).
	Spike      float64
	SpikeDelay time.Duration
	// ConnTimeout is how long a connection survives a phone that cannot be
	// reached (a partition) before the transport's keepalive declares it
	// dead on both ends.
	ConnTimeout time.Duration
}

// The transport defaults behind the network's fault keys.
const (
	// DefaultRTO is Linux TCP's minimum retransmission timeout.
	DefaultRTO = 200 * time.Millisecond
	// DefaultConnTimeout sits between what go-libp2p's transports take to
	// notice a silent peer: yamux pings every 30 s and gives up after 10 s
	// without an answer (10 to 40 s), QUIC's idle timeout is 30 s.
	DefaultConnTimeout = 20 * time.Second
)

// DeviceSpec is one phone.
type DeviceSpec struct {
	Name    string
	Profile string
	// Jitter is the relative standard deviation of a step's time.
	Jitter float64
	// ThrottleAfter is the sustained compute after which the phone runs at
	// Throttle times its speed (0: never).
	ThrottleAfter time.Duration
	Throttle      float64
	// Absent phones join only with a Fault.
	Absent bool
	// Charging phones are on a charger: they report it to the hub (the
	// energy policy counts their energy as free) and their energy comes
	// from the wall, not the battery.
	Charging bool
}

// Fault is a phone leaving (its connection drops), joining, or cut off
// from the network for a while (Partition, for For) at a time of the
// co-training runs.
type Fault struct {
	At        time.Duration
	Leave     bool
	Device    string
	Partition bool
	For       time.Duration
	// Diverge nudges one of the device's weights by one unit in the last
	// place, as another processor's rounding of one step would: with the
	// scenario's hash on, the next Merged's hash tells the phone, which
	// resynchronises.
	Diverge bool
}

//go:embed scenarios/*.txt
var builtin embed.FS

// BuiltinScenarios returns the names of the built-in scenarios, sorted.
func BuiltinScenarios() []string {
	ents, _ := builtin.ReadDir("scenarios")
	var out []string
	for _, e := range ents {
		out = append(out, strings.TrimSuffix(e.Name(), ".txt"))
	}
	slices.Sort(out)
	return out
}

// LoadScenario reads a built-in scenario by name, or else a file by path.
func LoadScenario(nameOrPath string) (*Scenario, error) {
	if b, err := builtin.ReadFile("scenarios/" + nameOrPath + ".txt"); err == nil {
		return ParseScenario(strings.NewReader(string(b)))
	}
	f, err := os.Open(nameOrPath)
	if err != nil {
		return nil, fmt.Errorf("%w: %q is neither a built-in scenario (%s) nor a readable file: %w",
			ErrScenario, nameOrPath, strings.Join(BuiltinScenarios(), ", "), err)
	}
	defer f.Close()
	sc, err := ParseScenario(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", nameOrPath, err)
	}
	return sc, nil
}

// defaults are the values of keys a scenario leaves out.
func defaults() Scenario {
	return Scenario{
		Seed: 1, Model: "lenet-caffe", Data: "mnist", TestImages: 1000, EvalEvery: 10,
		Iterations: 100, GlobalBatch: 64, Optimizer: "sgd", LR: 0.01, Momentum: 0.9,
		Policies: []string{"solo", "fixed", "adaptive"}, Smoothing: 0.3, ParkMargin: 0.1, EnergySlack: 1.5,
		Network: NetworkSpec{Bandwidth: 32e6, Latency: 2 * time.Millisecond, Medium: "shared",
			RTO: DefaultRTO, ConnTimeout: DefaultConnTimeout},
		Hub: "nexus-7",
	}
}

// SetBandwidth overrides the network's bandwidth ("300Mbit").
func (sc *Scenario) SetBandwidth(s string) error {
	bw, err := parseBandwidth(s)
	if err != nil || !(bw > 0) {
		return fmt.Errorf("%w: bandwidth %q, want e.g. 32Mbit", ErrScenario, s)
	}
	sc.Network.Bandwidth = bw
	return nil
}
