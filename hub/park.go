package hub

import (
	"fmt"
	"slices"
)

// Parking: a worker whose contribution does not pay for its communication.
//
// The adaptive policy splits the global batch B in proportion to each
// worker's throughput rᵢ (samples per nanosecond, 1/perSample), so that the
// members of a set S all finish computing after about C(S) = B / Σ_S rᵢ.
// Each member's push has to cross the network too: the driver reports how
// long each push (each part, with Config.Overlap) occupied the network
// (ObserveComm: the real driver times each frame from its first byte to its
// last, transport.Spanned; the simulator knows it from its model), and the
// core adds up a worker's reports of one iteration into cᵢ, smoothed like
// the compute time. On a shared medium (Wi-Fi: every
// transfer takes the access point's airtime in turn) the pushes of an
// iteration add up to Σ_S cᵢ, so the hub predicts the time per sample of an
// iteration with the members S as
//
//	T(S) = (C(S) + Σ_S cᵢ) / B            pushes after the backward pass
//	T(S) = max(C(S), Σ_S cᵢ) / B          with Config.Overlap
//
// With overlap the pushes of the big layers go out while the backward pass
// of the layers below goes on, so an iteration takes about the longer of
// the two; that is the ideal, and the small last parts are a tail the
// model leaves out. A slow phone adds a little to Σ rᵢ and a whole push to
// Σ cᵢ; when T is lower without it, it is parked. The Merged that a parked
// worker still receives is not in the model: it costs the same whether the
// worker computes or not. On separate links the pushes overlap each other
// and the model overestimates their cost; the simulator's docs say so.
//
// A parked worker pushes nothing, so its figures grow stale. Every
// Config.ParkProbe iterations it gets a batch for one iteration, a probe
// (EventWorkerProbed), and what that iteration measures replaces its old
// figures; at the next open it is weighed like any active worker: it stays
// if it now pays, and is parked again (EventWorkerParked) if not.

// parking is what the core knows of one worker's communication and
// whether it is parked.
type parking struct {
	comm    float64 // smoothed nanoseconds of pushes per iteration
	seen    bool    // comm holds a measurement
	iter    uint64  // the iteration acc adds up
	acc     float64 // nanoseconds reported for iteration iter so far
	pending bool    // acc holds reports not yet folded into comm
	parked  bool    // gets no batch
	since   uint64  // iteration it was parked at, or last probed at
	probing bool    // has a batch this iteration only to be measured
}

// ObserveComm tells the core that a push of worker id for the iteration
// open now occupied the network for nanos nanoseconds; call it as the push
// arrives, before Step. The driver measures it (the core reads no clock);
// the reports of one iteration add up (one per part with Config.Overlap),
// and the sum is smoothed with Config.Smoothing when the next iteration
// opens. It only serves parking (Config.Park). Unknown ids and negative
// values are ignored.
func (c *Core) ObserveComm(id string, nanos int64) {
	c.mustNotApply("ObserveComm")
	p := c.peers[id]
	if p == nil || nanos < 0 {
		return
	}
	k := &p.park
	if k.pending && c.iter != k.iter {
		c.foldComm(k)
	}
	if !k.pending {
		k.iter, k.acc, k.pending = c.iter, 0, true
	}
	k.acc += float64(nanos)
}

// foldComm smooths k's reports of its last iteration into its figure. A
// probe's replace the figure: the old one is what the probe is there to
// question.
func (c *Core) foldComm(k *parking) {
	alpha := c.cfg.Smoothing
	if k.probing {
		alpha = 1
	}
	k.comm = smooth(k.comm, k.acc, alpha, k.seen)
	k.seen, k.acc, k.pending = true, 0, false
}

// Parked returns the ids of the live workers parked now, sorted.
func (c *Core) Parked() []string {
	var out []string
	for _, id := range c.order {
		if c.peers[id].park.parked {
			out = append(out, id)
		}
	}
	return out
}

// active returns the workers of ids (sorted) that get a batch when an
// iteration opens, updating who is parked and emitting an event for every
// change. Workers whose battery is below Config.BatteryFloor are out first
// (battery.go), under any policy; without Config.Park under Adaptive every
// other worker is active.
//
// The choice is greedy: starting from every live worker, it removes the
// worker whose removal lowers the predicted time per sample the most, as
// long as one does, and never the last one. Workers not measured yet (no
// push, no communication reported) are never removed: there is nothing to
// weigh. The set it ends with replaces the workers active now only if it
// is predicted faster by more than Config.ParkMargin: a hysteresis on the
// whole set, so that noisy figures do not flip workers every iteration,
// while ten phones that each cost 2% are still parked together. A parked
// worker due for a probe is active for this iteration whatever the
// prediction.
func (c *Core) active(ids []string) []string {
	on := c.cfg.Park && c.cfg.Batch == Adaptive
	in := make([]bool, len(ids))
	low := make([]bool, len(ids)) // parked for its battery (battery.go)
	tput := make([]float64, len(ids))
	cost := make([]float64, len(ids))
	left := 0
	for i, id := range ids {
		p := c.peers[id]
		k := &p.park
		if k.pending && k.iter < c.iter {
			c.foldComm(k)
		}
		k.probing = false
		low[i] = c.batteryLow(p)
		c.batteryPark(p, low[i])
		if in[i] = !low[i]; in[i] {
			left++
		}
		tput[i], cost[i] = c.throughput(p), k.comm
	}
	predict := func(in []bool) float64 {
		return predictPerSample(c.cfg.GlobalBatch, tput, cost, in, c.cfg.Overlap)
	}
	if on {
		for left > 1 {
			now := predict(in)
			best, bestT := -1, now
			for i, id := range ids {
				p := c.peers[id]
				if !in[i] || !p.measured || !p.park.seen {
					continue
				}
				in[i] = false
				if t := predict(in); t < bestT {
					best, bestT = i, t
				}
				in[i] = true
			}
			if best < 0 {
				break
			}
			in[best] = false
			left--
		}
		quo := make([]bool, len(ids))
		for i, id := range ids {
			quo[i] = !c.peers[id].park.parked && !low[i]
		}
		// Keep the workers active now unless the new set is clearly
		// faster (or nobody is active now: the others left).
		if slices.Contains(quo, true) && !slices.Equal(in, quo) && !(predict(in) < predict(quo)*(1-c.cfg.ParkMargin)) {
			in = quo
		}
	}
	with := predict(in)
	var out []string
	for i, id := range ids {
		k := &c.peers[id].park
		if low[i] {
			continue // its battery's events are out (batteryPark)
		}
		if !in[i] && k.parked && c.cfg.ParkProbe > 0 && c.iter >= k.since+uint64(c.cfg.ParkProbe) {
			// Not parked while it is measured: the next open weighs it
			// as any active worker, and parks it again (with an event)
			// if it still does not pay.
			in[i], k.probing, k.parked, k.since = true, true, false, c.iter
			c.event(Event{Kind: EventWorkerProbed, Peer: id, Iteration: c.iter, Text: fmt.Sprintf(
				"parked for %d iterations: one batch to measure it again (it had %.3g samples/s, %.3g ms of communication per iteration)",
				c.cfg.ParkProbe, 1e9*tput[i], cost[i]/1e6)})
			out = append(out, id)
			continue
		}
		if in[i] {
			out = append(out, id)
		}
		if k.parked == !in[i] {
			continue
		}
		k.parked = !in[i]
		kind, what := EventWorkerResumed, "taken back"
		if k.parked {
			kind, what, k.since = EventWorkerParked, "parked", c.iter
		}
		c.event(Event{Kind: kind, Peer: id, Iteration: c.iter, Text: fmt.Sprintf(
			"%s: %.3g samples/s, %.3g ms of communication per iteration; predicted %.3g ms per sample with the workers now active",
			what, 1e9*tput[i], cost[i]/1e6, with/1e6)})
	}
	return out
}

// throughput returns p's samples per nanosecond: measured, or its
// registered speed, or 0 when neither is known.
func (c *Core) throughput(p *peer) float64 {
	switch {
	case p.measured && p.perSample > 0:
		return 1 / p.perSample
	case p.speed > 0:
		return p.speed / 1e9
	}
	return 0
}

// predictPerSample returns the predicted nanoseconds per sample of an
// iteration of global samples split among the workers with in[i] set, in
// proportion to tput (samples/ns), whose pushes take cost (ns) each and
// add up (a shared medium): (compute + Σ cost) / global, or
// max(compute, Σ cost) / global when the pushes overlap the backward pass.
// Workers with unknown throughput (0) count as the mean of the known ones;
// with none known the compute term is taken as 0, so only communication
// is weighed.
func predictPerSample(global int, tput, cost []float64, in []bool, overlap bool) float64 {
	var sum, comm float64
	known, unknown := 0, 0
	for i := range in {
		if !in[i] {
			continue
		}
		comm += cost[i]
		if tput[i] > 0 {
			sum += tput[i]
			known++
		} else {
			unknown++
		}
	}
	compute := 0.0
	if known > 0 {
		sum += float64(unknown) * sum / float64(known)
		compute = float64(global) / sum
	}
	if overlap {
		return max(compute, comm) / float64(global)
	}
	return (compute + comm) / float64(global)
}
