package hub

import (
	"fmt"
	"math"
)

// Parking: a worker whose contribution does not pay for its communication.
//
// The adaptive policy splits the global batch B in proportion to each
// worker's throughput rᵢ (samples per nanosecond, 1/perSample), so that the
// members of a set S all finish computing after about B / Σ_S rᵢ. Each
// member's push then has to cross the network: the driver reports how long
// that took (ObserveComm: cᵢ nanoseconds, smoothed like the compute time).
// On a shared medium (Wi-Fi: every transfer takes the access point's
// airtime in turn) those times add up, so the hub predicts the time per
// sample of an iteration with the members S as
//
//	T(S) = (B / Σ_S rᵢ + Σ_S cᵢ) / B.
//
// A slow phone adds a little to Σ rᵢ and a whole push to Σ cᵢ; when T is
// lower without it, it is parked. The Merged that a parked worker still
// receives is not in the model: it costs the same whether the worker
// computes or not. On separate links the pushes overlap and the model
// overestimates their cost; the simulator's docs say so.

// ObserveComm tells the core how long worker id's communication for one
// iteration took, in nanoseconds: the time its push occupied the network.
// The driver measures it (the core reads no clock); the core smooths it with
// Config.Smoothing and uses it only to decide parking (Config.Park). Unknown
// ids and negative values are ignored.
func (c *Core) ObserveComm(id string, nanos int64) {
	p := c.peers[id]
	if p == nil || nanos < 0 {
		return
	}
	p.comm = smooth(p.comm, float64(nanos), c.cfg.Smoothing, p.commSeen)
	p.commSeen = true
}

// Parked returns the ids of the live workers parked now, sorted.
func (c *Core) Parked() []string {
	var out []string
	for _, id := range c.order {
		if c.peers[id].parked {
			out = append(out, id)
		}
	}
	return out
}

// active returns the workers of ids (sorted) that get a batch when an
// iteration opens, updating who is parked and emitting an event for every
// change. Without Config.Park under Adaptive every worker is active.
//
// The choice is greedy: starting from every live worker, it removes the
// worker whose removal lowers the predicted time per sample the most, as
// long as one does by more than the margin (a worker parked already only
// has to not make things worse by more than the margin to stay parked),
// and never the last one. Workers not measured yet (no push, no
// communication reported) are never parked: there is nothing to weigh.
func (c *Core) active(ids []string) []string {
	on := c.cfg.Park && c.cfg.Batch == Adaptive
	in := make([]bool, len(ids))
	for i := range in {
		in[i] = true
	}
	tput := make([]float64, len(ids))
	cost := make([]float64, len(ids))
	for i, id := range ids {
		p := c.peers[id]
		tput[i], cost[i] = c.throughput(p), p.comm
	}
	if on {
		left := len(ids)
		for left > 1 {
			now := predictPerSample(c.cfg.GlobalBatch, tput, cost, in)
			best, bestT := -1, math.Inf(1)
			for i, id := range ids {
				p := c.peers[id]
				if !in[i] || !p.measured || !p.commSeen {
					continue
				}
				in[i] = false
				t := predictPerSample(c.cfg.GlobalBatch, tput, cost, in)
				in[i] = true
				limit := now * (1 - c.cfg.ParkMargin)
				if p.parked {
					limit = now * (1 + c.cfg.ParkMargin)
				}
				if t < limit && t < bestT {
					best, bestT = i, t
				}
			}
			if best < 0 {
				break
			}
			in[best] = false
			left--
		}
	}
	var out []string
	with := predictPerSample(c.cfg.GlobalBatch, tput, cost, in)
	for i, id := range ids {
		p := c.peers[id]
		if in[i] {
			out = append(out, id)
		}
		if p.parked == !in[i] {
			continue
		}
		p.parked = !in[i]
		kind, what := EventWorkerResumed, "taken back"
		if p.parked {
			kind, what = EventWorkerParked, "parked"
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
// proportion to tput (samples/ns), whose communication costs cost (ns) add
// up: (global/Σ tput + Σ cost) / global. Workers with unknown throughput
// (0) count as the mean of the known ones; with none known the compute
// term is taken as 0, so only communication is weighed.
func predictPerSample(global int, tput, cost []float64, in []bool) float64 {
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
	return (compute + comm) / float64(global)
}
