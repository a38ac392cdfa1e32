package sim

import (
	"bufio"
	"embed"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cotrain/cotrain/hub"
	"github.com/cotrain/cotrain/sync/compress"
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
	// Model names the network (models.Build); Data is "mnist" or
	// "synthetic" (a seeded MNIST-shaped set, for tests).
	Model string
	Data  string
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
	Network  NetworkSpec
	// Hub is the hub's device profile.
	Hub      string
	Profiles []Profile
	Devices  []DeviceSpec
	Faults   []Fault
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
		Policies: []string{"solo", "fixed", "adaptive"}, Smoothing: 0.3, ParkMargin: 0.1,
		Network: NetworkSpec{Bandwidth: 32e6, Latency: 2 * time.Millisecond, Medium: "shared",
			RTO: DefaultRTO, ConnTimeout: DefaultConnTimeout},
		Hub: "nexus-7",
	}
}

// ParseScenario reads a scenario: one "key value..." per line, "#" starts
// a comment. Fields of the form k=v follow some keys (network, optimizer,
// eval, data, device, profile, fault). Unknown keys and fields are errors,
// with the line number.
func ParseScenario(r io.Reader) (*Scenario, error) {
	sc := defaults()
	sc.Policies = nil
	sc.Compression, sc.Overlap = "", hub.DefaultConfig().Overlap
	s := bufio.NewScanner(r)
	for ln := 1; s.Scan(); ln++ {
		line, _, _ := strings.Cut(s.Text(), "#")
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if err := sc.set(f[0], f[1:]); err != nil {
			return nil, fmt.Errorf("%w: line %d: %w", ErrScenario, ln, err)
		}
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	if sc.Policies == nil {
		sc.Policies = defaults().Policies
	}
	if sc.Compression == "" {
		sc.Compression = hub.DefaultCompression(sc.Optimizer)
	}
	if sc.Primary == "" {
		sc.Primary = sc.Policies[len(sc.Policies)-1]
	}
	if err := sc.Validate(); err != nil {
		return nil, err
	}
	return &sc, nil
}

// kv splits k=v fields; a field without "=" is a flag (value "").
func kv(fields []string) map[string]string {
	m := map[string]string{}
	for _, f := range fields {
		k, v, _ := strings.Cut(f, "=")
		m[k] = v
	}
	return m
}

// fieldSetter parses the k=v fields of one line into their destinations;
// it reports the first bad value or unknown field.
type fieldSetter struct {
	m   map[string]string
	err error
}

func (f *fieldSetter) take(k string, parse func(string) error) {
	v, ok := f.m[k]
	if !ok || f.err != nil {
		return
	}
	delete(f.m, k)
	if err := parse(v); err != nil {
		f.err = fmt.Errorf("%s=%q: %w", k, v, err)
	}
}

func (f *fieldSetter) done() error {
	if f.err != nil {
		return f.err
	}
	if len(f.m) > 0 {
		var keys []string
		for k := range f.m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return fmt.Errorf("unknown field %q", keys[0])
	}
	return nil
}

func intTo(dst *int) func(string) error {
	return func(s string) (err error) { *dst, err = strconv.Atoi(s); return }
}

func floatTo(dst *float64) func(string) error {
	return func(s string) (err error) { *dst, err = strconv.ParseFloat(s, 64); return }
}

func durTo(dst *time.Duration) func(string) error {
	return func(s string) (err error) { *dst, err = time.ParseDuration(s); return }
}

// probTo parses a probability in [0, 1).
func probTo(dst *float64) func(string) error {
	return func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return err
		}
		if !(v >= 0 && v < 1) {
			return errors.New("want a probability in [0, 1)")
		}
		*dst = v
		return nil
	}
}

// chanceTo parses the two halves of "PROBABILITY:DURATION".
func chanceTo(p *float64, d *time.Duration, ps, ds string) error {
	if err := probTo(p)(ps); err != nil {
		return err
	}
	v, err := time.ParseDuration(ds)
	if err != nil {
		return err
	}
	if v <= 0 {
		return fmt.Errorf("want a positive duration after the colon, got %v", v)
	}
	*d = v
	return nil
}

// parseBandwidth reads "32Mbit", "300Mbit", "1Gbit" or bits per second.
func parseBandwidth(s string) (float64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(s, "Gbit"):
		mult, s = 1e9, strings.TrimSuffix(s, "Gbit")
	case strings.HasSuffix(s, "Mbit"):
		mult, s = 1e6, strings.TrimSuffix(s, "Mbit")
	case strings.HasSuffix(s, "kbit"):
		mult, s = 1e3, strings.TrimSuffix(s, "kbit")
	}
	v, err := strconv.ParseFloat(s, 64)
	return v * mult, err
}

func one(args []string) (string, error) {
	if len(args) != 1 {
		return "", fmt.Errorf("want one value, got %d", len(args))
	}
	return args[0], nil
}

// set applies one line.
func (sc *Scenario) set(key string, args []string) error {
	switch key {
	case "name", "model", "hub", "primary":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		*map[string]*string{"name": &sc.Name, "model": &sc.Model, "hub": &sc.Hub, "primary": &sc.Primary}[key] = v
		return nil
	case "description":
		sc.Description = strings.Join(args, " ")
		return nil
	case "seed":
		v, err := one(args)
		if err == nil {
			sc.Seed, err = strconv.ParseUint(v, 10, 64)
		}
		return err
	case "batch", "iterations", "patience":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		dst := map[string]*int{"batch": &sc.GlobalBatch, "iterations": &sc.Iterations, "patience": &sc.Patience}[key]
		return intTo(dst)(v)
	case "target":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return floatTo(&sc.Target)(v)
	case "policies":
		sc.Policies = slices.Clone(args)
		return nil
	case "compress":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		sc.Compression = v
		return nil
	case "overlap", "hash":
		v, err := one(args)
		if err != nil || (v != "on" && v != "off") {
			return fmt.Errorf("%s: want on or off, got %q", key, strings.Join(args, " "))
		}
		*map[string]*bool{"overlap": &sc.Overlap, "hash": &sc.Hash}[key] = v == "on"
		return nil
	case "deadline":
		v, err := one(args)
		if err != nil {
			return fmt.Errorf("%s: %w", key, err)
		}
		return durTo(&sc.Deadline)(v)
	}
	if len(args) == 0 && key != "device" {
		return fmt.Errorf("%s: no value", key)
	}
	switch key {
	case "data":
		sc.Data = args[0]
		f := fieldSetter{m: kv(args[1:])}
		f.take("train", intTo(&sc.TrainImages))
		f.take("test", intTo(&sc.TestImages))
		return f.done()
	case "eval":
		f := fieldSetter{m: kv(args)}
		f.take("every", intTo(&sc.EvalEvery))
		f.take("test", intTo(&sc.TestImages))
		return f.done()
	case "optimizer":
		sc.Optimizer = args[0]
		f := fieldSetter{m: kv(args[1:])}
		f.take("lr", floatTo(&sc.LR))
		f.take("momentum", floatTo(&sc.Momentum))
		f.take("weight-decay", floatTo(&sc.WeightDecay))
		f.take("nesterov", func(v string) error {
			if v != "on" && v != "off" {
				return fmt.Errorf("nesterov=%s, want on or off", v)
			}
			sc.Nesterov = v == "on"
			return nil
		})
		return f.done()
	case "hub-policy":
		f := fieldSetter{m: kv(args)}
		f.take("smoothing", floatTo(&sc.Smoothing))
		f.take("park-margin", floatTo(&sc.ParkMargin))
		return f.done()
	case "network":
		f := fieldSetter{m: kv(args)}
		f.take("bandwidth", func(s string) (err error) { sc.Network.Bandwidth, err = parseBandwidth(s); return })
		f.take("latency", durTo(&sc.Network.Latency))
		f.take("medium", func(s string) error { sc.Network.Medium = s; return nil })
		f.take("loss", probTo(&sc.Network.Loss))
		f.take("retransmit", func(s string) error {
			p, rto, ok := strings.Cut(s, ":")
			if !ok {
				return probTo(&sc.Network.Retransmit)(p)
			}
			return chanceTo(&sc.Network.Retransmit, &sc.Network.RTO, p, rto)
		})
		f.take("spike", func(s string) error {
			p, d, ok := strings.Cut(s, ":")
			if !ok {
				return errors.New("want PROBABILITY:DELAY, e.g. 0.02:300ms")
			}
			return chanceTo(&sc.Network.Spike, &sc.Network.SpikeDelay, p, d)
		})
		f.take("conn-timeout", func(s string) error {
			if err := durTo(&sc.Network.ConnTimeout)(s); err != nil {
				return err
			}
			if sc.Network.ConnTimeout <= 0 {
				return errors.New("want a positive duration")
			}
			return nil
		})
		return f.done()
	case "profile":
		p := Profile{Name: args[0], Source: "scenario"}
		f := fieldSetter{m: kv(args[1:])}
		f.take("step", durTo(&p.RefStep))
		f.take("source", func(s string) error { p.Source = s; return nil })
		sc.Profiles = append(sc.Profiles, p)
		return f.done()
	case "device":
		if len(args) == 0 {
			return errors.New("device: no profile")
		}
		d := DeviceSpec{Profile: args[0], Throttle: 1}
		count := 1
		f := fieldSetter{m: kv(args[1:])}
		f.take("name", func(s string) error { d.Name = s; return nil })
		f.take("count", intTo(&count))
		f.take("jitter", floatTo(&d.Jitter))
		f.take("throttle-after", durTo(&d.ThrottleAfter))
		f.take("throttle", floatTo(&d.Throttle))
		f.take("absent", func(string) error { d.Absent = true; return nil })
		if err := f.done(); err != nil {
			return err
		}
		if count < 1 || (count > 1 && d.Name != "") {
			return fmt.Errorf("device: count %d with name %q (a name is for one device)", count, d.Name)
		}
		for range count {
			e := d
			if e.Name == "" {
				e.Name = fmt.Sprintf("%s-%d", d.Profile, sc.countProfile(d.Profile)+1)
			}
			sc.Devices = append(sc.Devices, e)
		}
		return nil
	case "fault":
		var ft Fault
		f := fieldSetter{m: kv(args)}
		kinds := 0
		kind := func(set func(string)) func(string) error {
			return func(s string) error {
				if kinds++; kinds > 1 {
					return errors.New("a fault is one of leave, join, partition or diverge")
				}
				set(s)
				return nil
			}
		}
		f.take("at", durTo(&ft.At))
		f.take("leave", kind(func(s string) { ft.Leave, ft.Device = true, s }))
		f.take("join", kind(func(s string) { ft.Device = s }))
		f.take("partition", kind(func(s string) { ft.Partition, ft.Device = true, s }))
		f.take("diverge", kind(func(s string) { ft.Diverge, ft.Device = true, s }))
		f.take("for", durTo(&ft.For))
		if err := f.done(); err != nil {
			return err
		}
		if ft.Partition != (ft.For > 0) {
			return fmt.Errorf("a partition needs for=DURATION (positive), and only a partition has one (for=%v)", ft.For)
		}
		sc.Faults = append(sc.Faults, ft)
		return nil
	}
	return fmt.Errorf("unknown key %q", key)
}

// countProfile counts the devices of profile p so far.
func (sc *Scenario) countProfile(p string) int {
	n := 0
	for _, d := range sc.Devices {
		if d.Profile == p {
			n++
		}
	}
	return n
}

// Validate checks the scenario as a whole.
func (sc *Scenario) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format, append([]any{ErrScenario, sc.Name}, args...)...)
	}
	switch {
	case sc.Name == "":
		return bad("no name")
	case sc.Data != "mnist" && sc.Data != "synthetic":
		return bad("data %q, want mnist or synthetic", sc.Data)
	case len(sc.Devices) == 0:
		return bad("no device")
	case sc.GlobalBatch < len(sc.Devices):
		return bad("batch %d for %d devices (each needs a sample)", sc.GlobalBatch, len(sc.Devices))
	case sc.Iterations < 1:
		return bad("iterations %d", sc.Iterations)
	case sc.EvalEvery < 1 || sc.TestImages < 1:
		return bad("eval every %d on %d test images", sc.EvalEvery, sc.TestImages)
	case sc.Target < 0 || sc.Target > 1:
		return bad("target %v, want an accuracy in [0, 1]", sc.Target)
	case sc.Patience < 0:
		return bad("patience %d, want 0 (off) or more evaluations", sc.Patience)
	case sc.Optimizer != "sgd" && sc.Optimizer != "adam":
		return bad("optimizer %q, want sgd or adam", sc.Optimizer)
	case !(sc.LR > 0):
		return bad("learning rate %v", sc.LR)
	case sc.Network.Medium != "shared" && sc.Network.Medium != "links":
		return bad("medium %q, want shared or links", sc.Network.Medium)
	case !(sc.Network.Bandwidth > 0) || sc.Network.Latency < 0:
		return bad("bandwidth %v bit/s, latency %v", sc.Network.Bandwidth, sc.Network.Latency)
	case sc.Deadline < 0:
		return bad("deadline %v", sc.Deadline)
	}
	for _, f := range sc.Faults {
		if f.Diverge && !sc.Hash {
			return bad("fault diverge=%s without hash on: nothing would tell the phone, and the checker stops the run", f.Device)
		}
	}
	if err := sc.Network.validateFaults(); err != nil {
		return bad("network: %w", err)
	}
	if _, err := compress.Parse(sc.Compression); err != nil {
		return bad("compress: %v", err)
	}
	for _, p := range sc.Profiles {
		if p.RefStep <= 0 {
			return bad("profile %s: step %v, want the time of a lenet-caffe step at batch 64", p.Name, p.RefStep)
		}
	}
	if _, err := lookupProfile(sc.Profiles, sc.Hub); err != nil {
		return bad("hub: %w", err)
	}
	seen := map[string]bool{}
	present := 0
	for _, d := range sc.Devices {
		if seen[d.Name] {
			return bad("two devices named %q", d.Name)
		}
		seen[d.Name] = true
		if _, err := lookupProfile(sc.Profiles, d.Profile); err != nil {
			return bad("device %s: %w", d.Name, err)
		}
		if d.Jitter < 0 || d.Throttle <= 0 || d.Throttle > 1 || d.ThrottleAfter < 0 {
			return bad("device %s: jitter %v, throttle %v after %v", d.Name, d.Jitter, d.Throttle, d.ThrottleAfter)
		}
		if !d.Absent {
			present++
		}
	}
	if present == 0 {
		return bad("every device is absent at the start")
	}
	partitions := false
	for _, f := range sc.Faults {
		if !seen[f.Device] || f.At < 0 {
			return bad("fault at %v for device %q (not in the scenario)", f.At, f.Device)
		}
		if f.Partition != (f.For > 0) || (f.Partition && f.Leave) {
			return bad("fault at %v for %s: a partition needs a positive duration (for %v)", f.At, f.Device, f.For)
		}
		partitions = partitions || f.Partition
	}
	if (sc.Network.Loss > 0 || partitions) && sc.Deadline == 0 {
		// Without a deadline the hub waits for a lost push for ever.
		return bad("message loss and partitions need a deadline: the hub recovers a lost push by its deadline")
	}
	if len(sc.Policies) == 0 {
		return bad("no policy")
	}
	for _, p := range sc.Policies {
		if !slices.Contains([]string{"solo", "paper", "fixed", "adaptive", "adaptive-park"}, p) {
			return bad("policy %q, want solo, paper, fixed, adaptive or adaptive-park", p)
		}
	}
	if !slices.Contains(sc.Policies, sc.Primary) || sc.Primary == "solo" {
		return bad("primary %q must be one of the co-training policies run", sc.Primary)
	}
	return nil
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
