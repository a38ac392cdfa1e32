package sim

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/sync/compress"
)

// This file checks a scenario as a whole (Validate).

// Validate checks the scenario as a whole.
func (sc *Scenario) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: "+format, append([]any{ErrScenario, sc.Name}, args...)...)
	}
	switch {
	case sc.Name == "":
		return bad("no name")
	case sc.Data != "mnist" && sc.Data != "synthetic" && sc.Data != "licenses" && sc.Data != "accel":
		return bad("data %q, want mnist, synthetic, licenses or accel", sc.Data)
	case sc.Data == "accel" && sc.TrainImages > 0:
		return bad("data accel with train=%d: the recordings are 12 of 30 s per activity, not cut to a number of windows", sc.TrainImages)
	case sc.Data == "licenses" && sc.TrainImages > 0:
		return bad("data licenses with train=%d: text is shared among the phones by parts of every file, not cut to a number of samples", sc.TrainImages)
	case sc.Context < 0 || sc.Context > 1024:
		return bad("context %d, want 0 (the default) to 1024 words", sc.Context)
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
	for name, pw := range sc.Powers {
		if err := pw.validate(); err != nil {
			return bad("power %s: %v", name, err)
		}
	}
	if sc.EnergySlack < 1 || sc.EnergySlack > 100 {
		return bad("energy-slack %v, want from 1 to 100", sc.EnergySlack)
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
		if !slices.Contains([]string{"solo", "paper", "fixed", "adaptive", "adaptive-park", "energy"}, p) {
			return bad("policy %q, want solo, paper, fixed, adaptive, adaptive-park or energy", p)
		}
	}
	if !slices.Contains(sc.Policies, sc.Primary) || sc.Primary == "solo" {
		return bad("primary %q must be one of the co-training policies run", sc.Primary)
	}
	return nil
}
