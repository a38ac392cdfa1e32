package hub

import (
	"math"
	"slices"
	"strconv"

	"github.com/cotrain/cotrain/sync/wire"
)

// The energy policy (Config.Batch Energy): a batch split that spends less
// energy per iteration than the adaptive one for a bounded loss of time.
//
// The adaptive split makes every worker finish together, after
// T* = B / Σ rᵢ (rᵢ its throughput in samples per second). Each worker's
// samples cost it eᵢ = Pᵢ / rᵢ joules (Pᵢ: what computing draws above the
// phone's idle, as the worker declared it at registration), and taking part
// at all costs it cᵢ joules of radio per iteration (its push's measured
// airtime, Core.ObserveComm, times the radio's declared draw). Phones
// differ by an order of magnitude in eᵢ (docs/energy.md: the Meizu MX3's
// samples cost about seven times the Nexus 6P's), so the cheapest phones
// should do as much as time allows.
//
// EnergySlack s ≥ 1 is the knob: an iteration may take up to s·T*. Each
// worker can do at most capᵢ = ⌊rᵢ·s·T*⌋ samples in that time; the split
// fills the workers in order of cost per sample eᵢ + cᵢ/capᵢ (the radio
// amortised over what it could carry), each up to its cap, and whatever
// the floors leave goes one sample at a time to the worker that would
// finish earliest. A worker left without samples is spared for the
// iteration: it pushes nothing (no compute, no upload) and only applies
// the merged update. A worker on a charger (its reported battery charging
// or full) costs nothing from its battery: its eᵢ and cᵢ count as 0, so it
// is filled first. With s = 1 the caps add up to about B and the split is
// the adaptive one.
//
// The figures the split needs beyond throughput come from the worker's
// Register.Info (wire.InfoComputeWatts, wire.InfoRadioWatts): a worker that declares none weighs as the
// mean of those that did, and with none declared the split is the
// adaptive one. cmd/worker declares none today (a phone does not know its
// own draw without a power profile); the simulator declares each phone's
// power model (sim/energy.go).

// declaredPower reads a worker's declared draws from its Register's Info:
// finite, non-negative numbers; anything else is unknown (0).
func declaredPower(info map[string]string) (compute, radio float64) {
	read := func(k string) float64 {
		v, err := strconv.ParseFloat(info[k], 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 || v > 1e3 {
			return 0
		}
		return v
	}
	return read(wire.InfoComputeWatts), read(wire.InfoRadioWatts)
}

// splitEnergy writes the energy policy's split of c.cfg.GlobalBatch among
// ids (sorted) into dst; entries may be 0 (spared).
func (c *Core) splitEnergy(dst []int, ids []string) {
	n := len(ids)
	tput := make([]float64, n) // samples per second
	perJ := make([]float64, n) // joules per sample, -1 unknown
	radioJ := make([]float64, n)
	known, sumJ := 0, 0.0
	for i, id := range ids {
		p := c.peers[id]
		tput[i] = 1e9 * c.throughput(p)
		perJ[i], radioJ[i] = -1, 0
		if p.computeW > 0 && tput[i] > 0 {
			perJ[i] = p.computeW / tput[i]
			known++
			sumJ += perJ[i]
		}
		if p.park.seen {
			radioJ[i] = p.radioW * p.park.comm / 1e9
		}
		if p.battery.Known() && !p.battery.Discharging() {
			perJ[i], radioJ[i] = 0, 0 // on a charger: free for the battery
		}
	}
	valid := 0
	for _, r := range tput {
		if r > 0 && !math.IsInf(r, 0) {
			valid++
		}
	}
	if known == 0 || valid < n {
		// Nothing to weigh, or a worker not measured yet: adaptive.
		SplitThroughput(dst, c.cfg.GlobalBatch, tput)
		return
	}
	for i := range perJ {
		if perJ[i] < 0 {
			perJ[i] = sumJ / float64(known)
		}
	}
	B := c.cfg.GlobalBatch
	var sum float64
	for _, r := range tput {
		sum += r
	}
	tmax := c.cfg.EnergySlack * float64(B) / sum
	capOf := make([]int, n)
	cost := make([]float64, n)
	order := make([]int, n)
	for i := range ids {
		capOf[i] = int(math.Floor(tput[i] * tmax * (1 + 1e-12)))
		cost[i] = perJ[i] + radioJ[i]/float64(max(1, capOf[i]))
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		switch {
		case cost[a] < cost[b]:
			return -1
		case cost[a] > cost[b]:
			return 1
		}
		return 0
	})
	left := B
	for i := range dst {
		dst[i] = 0
	}
	for _, i := range order {
		take := min(left, capOf[i])
		dst[i] = take
		left -= take
	}
	for ; left > 0; left-- {
		best := -1
		for i := range dst {
			if best < 0 || float64(dst[i]+1)/tput[i] < float64(dst[best]+1)/tput[best] {
				best = i
			}
		}
		dst[best]++
	}
}
