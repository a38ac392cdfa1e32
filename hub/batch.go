package hub

import (
	"fmt"
	"math"
)

// BatchPolicy decides how the global batch is split among the workers of an
// iteration.
type BatchPolicy uint8

const (
	// Fixed gives every worker an equal share; the remainder goes one
	// sample each to the first workers in id order.
	Fixed BatchPolicy = iota + 1
	// Adaptive gives every worker a share proportional to its measured
	// throughput (samples per second), so that every worker takes about as
	// long on its batch; see SplitThroughput and Config.Smoothing.
	Adaptive
	// Energy lets an iteration take up to Config.EnergySlack times the
	// adaptive one's time and fills the workers whose samples cost the
	// least energy first (energy.go); a worker may get no batch.
	Energy
)

// String returns "fixed", "adaptive", "energy" or "policy(N)".
func (p BatchPolicy) String() string {
	switch p {
	case Fixed:
		return "fixed"
	case Adaptive:
		return "adaptive"
	case Energy:
		return "energy"
	}
	return fmt.Sprintf("policy(%d)", uint8(p))
}

// SplitEqual writes into dst (one entry per worker) equal shares of global:
// global/len(dst) each, plus one for the first global%len(dst) workers.
// The shares sum to global; each is at least 1 when global >= len(dst).
func SplitEqual(dst []int, global int) {
	if len(dst) == 0 {
		return
	}
	q, r := global/len(dst), global%len(dst)
	for i := range dst {
		dst[i] = q
		if i < r {
			dst[i]++
		}
	}
}

// SplitThroughput writes into dst (one entry per worker) the split of
// global samples that finishes soonest: worker i needs dst[i]/throughput[i]
// (throughput in samples per unit time, len(throughput) == len(dst)) and the
// split minimises the largest of those times, with every worker given at
// least 1 sample so that none is starved and each keeps reporting its
// speed. The shares sum exactly to global.
//
// Rounding matters: with a fast phone and one 5 times slower, the nearest
// proportional split of 64 can hand the slow phone the one sample that makes
// it finish last. The split starts from the floor of each exact
// proportional share and gives the samples left over one at a time to the
// worker that would finish earliest with one more (ties to the lower index);
// that greedy order is optimal for identical samples.
//
// A throughput that is not a positive finite number (a worker not measured
// yet) counts as the mean of the valid ones; if none is valid the split is
// SplitEqual's. The caller guarantees global >= len(dst) (Config.Validate
// bounds MaxWorkers by GlobalBatch).
func SplitThroughput(dst []int, global int, throughput []float64) {
	n := len(dst)
	if n == 0 {
		return
	}
	if len(throughput) != n {
		panic(fmt.Sprintf("hub: SplitThroughput: %d throughputs for %d workers", len(throughput), n))
	}
	if global < n {
		panic(fmt.Sprintf("hub: SplitThroughput: %d samples for %d workers", global, n))
	}
	valid := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	var sum float64
	var good int
	for _, x := range throughput {
		if valid(x) {
			sum += x
			good++
		}
	}
	if good == 0 {
		SplitEqual(dst, global)
		return
	}
	mean := sum / float64(good)
	rate := func(i int) float64 {
		if x := throughput[i]; valid(x) {
			return x
		}
		return mean
	}
	total := 0.0
	for i := range dst {
		total += rate(i)
	}
	given := 0
	for i := range dst {
		dst[i] = max(1, int(math.Floor(float64(global)*rate(i)/total)))
		given += dst[i]
	}
	// The floors leave at most n samples; the minimum of 1 can overshoot
	// (global close to n), and then the worker finishing last gives one
	// back (ties to the higher index).
	for ; given < global; given++ {
		best := 0
		for i := 1; i < n; i++ {
			if float64(dst[i]+1)/rate(i) < float64(dst[best]+1)/rate(best) {
				best = i
			}
		}
		dst[best]++
	}
	for ; given > global; given-- {
		worst := -1
		for i := n - 1; i >= 0; i-- {
			if dst[i] > 1 && (worst < 0 || float64(dst[i])/rate(i) > float64(dst[worst])/rate(worst)) {
				worst = i
			}
		}
		dst[worst]--
	}
}

// smooth returns the exponential moving average of a per-sample time after
// observing x: alpha*x + (1-alpha)*old, or x itself for the first
// observation (have false).
func smooth(old, x, alpha float64, have bool) float64 {
	if !have {
		return x
	}
	return float64(alpha*x) + float64((1-alpha)*old) // float64(): not fused on any target
}
