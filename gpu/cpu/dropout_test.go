package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// cpuMask returns the CPU backend's mask of n elements.
func cpuMask(n int, seed uint64, p float32) []float32 {
	m := make(gpu.Host, n)
	NewCPU().DropoutMask(m, seed, p)
	return m
}

// dropoutSeeds have bits in both halves, one in the high half only, and
// neighbours, so each half of the key is exercised.
var dropoutSeeds = []uint64{1, 2, 1 << 32, 0x9e3779b97f4a7c15, math.MaxUint64}

// within reports whether count is within 5 standard deviations of a
// binomial(n, q) count's mean.
func within(count, n int, q float64) (ok bool, sds float64) {
	sd := math.Sqrt(float64(n) * q * (1 - q))
	d := math.Abs(float64(count) - float64(n)*q)
	return d <= 5*sd, d / sd
}

// Every element is 0 or 1/(1-p), and the kept fraction over a large mask
// is binomial around 1-p.
func TestDropoutMaskKeptFraction(t *testing.T) {
	const n = 1 << 20
	for _, p := range []float32{0.05, 0.1, 0.3, 0.5, 0.9} {
		keep := float32(1 / (1 - float64(p)))
		for _, seed := range dropoutSeeds {
			m := cpuMask(n, seed, p)
			kept := 0
			for i, v := range m {
				switch v {
				case keep:
					kept++
				case 0:
				default:
					t.Fatalf("p=%v seed %#x: mask[%d] = %v, want 0 or %v", p, seed, i, v, keep)
				}
			}
			if ok, sds := within(kept, n, 1-float64(p)); !ok {
				t.Errorf("p=%v seed %#x: %d of %d kept, %.1f standard deviations from %v", p, seed, kept, n, sds, float64(n)*(1-float64(p)))
			}
		}
	}
	// p == 0 keeps everything at exactly 1.
	for i, v := range cpuMask(1001, 7, 0) {
		if v != 1 {
			t.Fatalf("p=0: mask[%d] = %v", i, v)
		}
	}
}

// Two seeds give independent masks: the positions where they agree are
// binomial around p² + (1-p)², for seeds that differ in one bit of either
// half of the key.
func TestDropoutMaskSeedsIndependent(t *testing.T) {
	const n = 1 << 18
	const p = 0.5
	for _, pair := range [][2]uint64{{1, 2}, {1, 1 << 32}, {0x9e3779b97f4a7c15, 0x9e3779b97f4a7c14}, {0, math.MaxUint64}} {
		a, b := cpuMask(n, pair[0], p), cpuMask(n, pair[1], p)
		same := 0
		for i := range a {
			if a[i] == b[i] {
				same++
			}
		}
		if ok, sds := within(same, n, p*p+(1-p)*(1-p)); !ok {
			t.Errorf("seeds %#x and %#x: %d of %d positions agree, %.1f standard deviations from independent masks", pair[0], pair[1], same, n, sds)
		}
	}
	// A mask is not its neighbour seed's shifted by a few elements either.
	a, b := cpuMask(n, 5, p), cpuMask(n+64, 6, p)
	for shift := 0; shift <= 64; shift++ {
		if slices.Equal(a, b[shift:shift+n]) {
			t.Fatalf("seed 6's mask shifted by %d is seed 5's", shift)
		}
	}
}

// Neighbouring elements are independent: at lags inside a Philox block (1,
// 2, 3), across blocks (4, 5, 8) and across samples of a batch (4096: a
// dropout layer after a linear layer of 4096), both elements of disjoint
// pairs (i, i+lag) are dropped with probability p²; and the number of runs
// of equal values is what a Bernoulli sequence has (Wald–Wolfowitz).
func TestDropoutMaskNeighboursIndependent(t *testing.T) {
	const n = 1 << 20
	for _, p := range []float32{0.2, 0.5, 0.8} {
		for _, seed := range dropoutSeeds[:3] {
			m := cpuMask(n, seed, p)
			for _, lag := range []int{1, 2, 3, 4, 5, 8, 4096} {
				both, pairs := 0, 0
				// Disjoint pairs: i in the first half of each block of 2·lag.
				for i := 0; i+lag < n; i++ {
					if i%(2*lag) >= lag {
						continue
					}
					pairs++
					if m[i] == 0 && m[i+lag] == 0 {
						both++
					}
				}
				if ok, sds := within(both, pairs, float64(p)*float64(p)); !ok {
					t.Errorf("p=%v seed %#x lag %d: %d of %d pairs both dropped, %.1f standard deviations from p²", p, seed, lag, both, pairs, sds)
				}
			}
			runs, dropped := 1, 0
			for i := range m {
				if m[i] == 0 {
					dropped++
				}
				if i > 0 && (m[i] == 0) != (m[i-1] == 0) {
					runs++
				}
			}
			n0, n1 := float64(dropped), float64(n-dropped)
			mu := 2*n0*n1/n + 1
			sd := math.Sqrt((mu - 1) * (mu - 2) / (n - 1))
			if d := math.Abs(float64(runs) - mu); d > 5*sd {
				t.Errorf("p=%v seed %#x: %d runs, %.1f standard deviations from the %.0f of independent elements", p, seed, runs, d/sd, mu)
			}
		}
	}
}

// A mask's element i depends on (seed, i) only: a shorter mask is a
// prefix of a longer one (a smaller batch sees the first samples' masks),
// and a view is masked from its own start.
func TestDropoutMaskPrefixAndViews(t *testing.T) {
	long := cpuMask(103, 9, 0.4)
	for _, n := range []int{0, 1, 3, 4, 5, 64, 102} {
		if got := cpuMask(n, 9, 0.4); !slices.Equal(got, long[:n]) {
			t.Errorf("mask of %d: not the first %d elements of the mask of 103", n, n)
		}
	}
	c := NewCPU()
	buf := c.Alloc(110)
	c.Fill(buf, -1)
	c.DropoutMask(c.View(buf, 7, 103), 9, 0.4)
	all := buf.(gpu.Host)
	if !slices.Equal(all[7:], long) || slices.ContainsFunc(all[:7], func(v float32) bool { return v != -1 }) {
		t.Error("a view at offset 7 is not masked as a buffer of its own, or elements outside it changed")
	}
	// Split over threads or not, the same mask.
	big := cpuMask(1<<16+3, 9, 0.4)
	one := NewCPU()
	one.SetThreads(1)
	m := make(gpu.Host, len(big))
	one.DropoutMask(m, 9, 0.4)
	if !slices.Equal(m, big) {
		t.Error("one thread and several made different masks")
	}
}

func TestDropoutMaskBadProbability(t *testing.T) {
	for _, p := range []float32{-0.1, 1, 2, float32(math.NaN())} {
		t.Run(fmt.Sprint(p), func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("p=%v accepted", p)
				}
			}()
			NewCPU().DropoutMask(make(gpu.Host, 4), 1, p)
		})
	}
}

func BenchmarkDropoutMask(b *testing.B) {
	m := make(gpu.Host, 32*4096) // one of AlexNet's dropout layers at batch 32
	c := NewCPU()
	b.SetBytes(int64(4 * len(m)))
	var seed uint64
	for b.Loop() {
		seed++
		c.DropoutMask(m, seed, 0.5)
	}
}
