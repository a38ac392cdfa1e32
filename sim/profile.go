package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Profile is a device's compute speed. Speeds are calibrated as the time
// of one reference training step, lenet-caffe at batch 64 (RefModel,
// RefBatch), so that the paper's measurements enter as they were taken; a
// step of another model or batch takes its FLOPs over the same FLOP/s.
type Profile struct {
	Name string
	// RefStep is the time of one lenet-caffe training step at batch 64.
	RefStep time.Duration
	// Source says where RefStep comes from.
	Source string
}

// The reference step the profiles are calibrated on.
const (
	RefModel = "lenet-caffe"
	RefBatch = 64
)

// builtinProfiles are the devices of the paper behind cotrain (Caffe's
// LeNet on MNIST, 10 iterations at batch 64: Nexus 6P 5 s, Meizu MX3 28 s).
// The Nexus 7 was the hub; the paper gives no training time for it, so its
// speed is an assumption (a 2013 quad-core like the MX3) that only sets how
// long the hub takes to merge, a few milliseconds.
var builtinProfiles = []Profile{
	{Name: "nexus-6p", RefStep: 500 * time.Millisecond, Source: "paper: 10 iterations in 5 s"},
	{Name: "meizu-mx3", RefStep: 2800 * time.Millisecond, Source: "paper: 10 iterations in 28 s"},
	{Name: "nexus-7", RefStep: 2800 * time.Millisecond, Source: "assumed like the MX3 (the paper's hub; no training time given)"},
}

// Profiles returns the built-in device profiles, sorted by name.
func Profiles() []Profile {
	out := slices.Clone(builtinProfiles)
	slices.SortFunc(out, func(a, b Profile) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// lookupProfile finds a profile among the scenario's own, then the
// built-in ones.
func lookupProfile(own []Profile, name string) (Profile, error) {
	for _, list := range [][]Profile{own, builtinProfiles} {
		for _, p := range list {
			if p.Name == name {
				return p, nil
			}
		}
	}
	return Profile{}, fmt.Errorf("%w: no device profile %q", ErrScenario, name)
}

// device is the compute model of one simulated phone: FLOP/s from its
// profile, optional jitter, and thermal throttling after sustained load.
//
// Throttling follows a heat budget: every second of compute adds a second
// of heat, every second idle removes one; while the heat exceeds
// ThrottleAfter the device runs at Throttle times its speed. A phone that
// computes without pause thus slows down after ThrottleAfter and recovers
// once it has rested as long as it ran over.
type device struct {
	flops    float64 // FLOP/s
	jitter   float64 // relative standard deviation of a step's time
	after    float64 // seconds of heat before throttling; 0 means never
	throttle float64 // speed factor while throttled, in (0, 1]
	rng      *rand.Rand

	heat    float64 // seconds
	lastEnd int64   // ns: when the last compute ended
}

// newDevice returns the compute model of a device of profile p whose
// reference step costs refFLOPs.
func newDevice(p Profile, refFLOPs float64, d DeviceSpec, rng *rand.Rand) *device {
	return &device{
		flops:    refFLOPs / p.RefStep.Seconds(),
		jitter:   d.Jitter,
		after:    d.ThrottleAfter.Seconds(),
		throttle: d.Throttle,
		rng:      rng,
	}
}

// compute returns how long work FLOPs take when started at time now (ns),
// and accounts the heat. Jitter multiplies the time by 1 + jitter·N(0, 1),
// floored at 0.2.
func (d *device) compute(now int64, work float64) int64 {
	if idle := float64(now-d.lastEnd) / 1e9; idle > 0 {
		d.heat = math.Max(0, d.heat-idle)
	}
	speed := d.flops
	if d.after > 0 && d.heat > d.after {
		speed *= d.throttle
	}
	sec := work / speed
	if d.jitter > 0 {
		sec *= math.Max(0.2, 1+float64(d.jitter*d.rng.NormFloat64()))
	}
	d.heat += sec
	ns := int64(math.Round(sec * 1e9))
	d.lastEnd = now + ns
	return ns
}

// throttled reports whether the device runs throttled now.
func (d *device) throttled() bool { return d.after > 0 && d.heat > d.after }
