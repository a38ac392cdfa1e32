package hub

import (
	"fmt"
	"math"
	"sort"
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
)

// String returns "fixed", "adaptive" or "policy(N)".
func (p BatchPolicy) String() string {
	switch p {
	case Fixed:
		return "fixed"
	case Adaptive:
		return "adaptive"
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

// SplitThroughput writes into dst shares of global proportional to
// throughput (samples per unit time, one per worker, len(throughput) ==
// len(dst)). Every worker first gets 1 sample, so that none is starved and
// each keeps reporting its speed; the other global-len(dst) samples are
// split in proportion to throughput by largest-remainder rounding: each
// worker gets the floor of its exact share, and the samples left over go one
// each to the largest fractional parts (ties to the lower index). The shares
// therefore sum exactly to global and differ from the exact proportional
// share by less than 2.
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
	w := make([]float64, n)
	total := 0.0
	for i, x := range throughput {
		if !valid(x) {
			x = mean
		}
		w[i] = x
		total += x
	}
	rest := global - n
	frac := make([]float64, n)
	given := 0
	for i := range dst {
		exact := float64(rest) * w[i] / total
		fl := math.Floor(exact)
		dst[i] = 1 + int(fl)
		frac[i] = exact - fl
		given += int(fl)
	}
	// Largest remainders first; a stable sort keeps ties in index order.
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return frac[order[a]] > frac[order[b]] })
	// Floating-point error could in principle make the floors sum to one
	// more or less than rest; walking the order in a loop absorbs either.
	for k := 0; given < rest; k++ {
		dst[order[k%n]]++
		given++
	}
	for k := n - 1; given > rest; k-- {
		i := order[(k%n+n)%n]
		if dst[i] > 1 {
			dst[i]--
			given--
		}
	}
}

// smooth returns the exponential moving average of a per-sample time after
// observing x: alpha*x + (1-alpha)*old, or x itself for the first
// observation (have false).
func smooth(old, x, alpha float64, have bool) float64 {
	if !have {
		return x
	}
	return alpha*x + (1-alpha)*old
}
