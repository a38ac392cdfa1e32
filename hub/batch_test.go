package hub

import (
	"math"
	"slices"
	"testing"
)

func TestSplitEqual(t *testing.T) {
	cases := []struct {
		global, n int
		want      []int
	}{
		{32, 3, []int{11, 11, 10}},
		{30, 3, []int{10, 10, 10}},
		{5, 5, []int{1, 1, 1, 1, 1}},
		{7, 1, []int{7}},
		{64, 5, []int{13, 13, 13, 13, 12}},
	}
	for _, c := range cases {
		got := make([]int, c.n)
		SplitEqual(got, c.global)
		if !slices.Equal(got, c.want) {
			t.Errorf("SplitEqual(%d over %d) = %v, want %v", c.global, c.n, got, c.want)
		}
	}
}

func TestSplitThroughput(t *testing.T) {
	cases := []struct {
		name   string
		global int
		tput   []float64
		want   []int
	}{
		// 64 in proportion 1:2:3 → 10.67, 21.33, 32: floors 10, 21, 32
		// (63); one more would finish each at 11 units, a tie that goes
		// to the first.
		{"1:2:3", 64, []float64{1, 2, 3}, []int{11, 21, 32}},
		// paper-table1's phones: the nearest proportional split, 54 and
		// 10, has the slow phone finish last (0.441 s against 0.424);
		// 55 and 9 finish at 0.432 and 0.396.
		{"nexus and meizu", 64, []float64{127.3, 22.7}, []int{55, 9}},
		{"equal", 10, []float64{5, 5, 5}, []int{4, 3, 3}},
		{"tiny global", 3, []float64{1, 100, 10000}, []int{1, 1, 1}},
		{"one very slow", 20, []float64{1e-6, 1, 1}, []int{1, 10, 9}},
		{"unknown counts as mean", 32, []float64{0, 2, 4}, []int{11, 7, 14}},
		{"none known", 10, []float64{0, math.NaN(), math.Inf(1)}, []int{4, 3, 3}},
	}
	for _, c := range cases {
		got := make([]int, len(c.tput))
		SplitThroughput(got, c.global, c.tput)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

// TestSplitThroughputProperties checks on many random inputs that shares sum
// exactly to the global batch, are at least 1, and finish as soon as the
// plain greedy split: from 1 sample each, every further sample to the
// worker that would finish earliest with it, which is optimal for identical
// samples.
func TestSplitThroughputProperties(t *testing.T) {
	seed := uint64(1)
	next := func() float64 { // splitmix-style, deterministic
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return float64((z^(z>>31))>>11) / (1 << 53)
	}
	makespan := func(shares []int, tput []float64) float64 {
		m := 0.0
		for i, s := range shares {
			m = max(m, float64(s)/tput[i])
		}
		return m
	}
	for range 2000 {
		n := 1 + int(next()*12)
		global := n + int(next()*500)
		tput := make([]float64, n)
		for i := range tput {
			tput[i] = 0.01 + next()*100
		}
		got := make([]int, n)
		SplitThroughput(got, global, tput)
		ref := make([]int, n)
		for i := range ref {
			ref[i] = 1
		}
		for range global - n {
			best := 0
			for i := range ref {
				if float64(ref[i]+1)/tput[i] < float64(ref[best]+1)/tput[best] {
					best = i
				}
			}
			ref[best]++
		}
		sum := 0
		for i, s := range got {
			sum += s
			if s < 1 {
				t.Fatalf("global %d tput %v: share %d of worker %d", global, tput, s, i)
			}
		}
		if sum != global {
			t.Fatalf("global %d tput %v: shares %v sum to %d", global, tput, got, sum)
		}
		if g, r := makespan(got, tput), makespan(ref, tput); g > r*(1+1e-12) {
			t.Fatalf("global %d tput %v: shares %v finish at %v, the greedy split %v at %v", global, tput, got, g, ref, r)
		}
	}
}

func TestSmooth(t *testing.T) {
	if got := smooth(0, 10, 0.3, false); got != 10 {
		t.Errorf("first observation: %v, want 10", got)
	}
	if got := smooth(10, 20, 0.3, true); math.Abs(got-13) > 1e-12 {
		t.Errorf("smooth(10, 20, 0.3) = %v, want 13", got)
	}
}

// TestAdaptiveShares checks the core's use of the policy: measured
// per-sample times beat the registered speed, and the speed is used until
// a measurement exists.
func TestAdaptiveShares(t *testing.T) {
	c := &Core{cfg: DefaultConfig(), peers: map[string]*peer{
		"a": {id: "a", speed: 100},
		"b": {id: "b", speed: 300},
	}}
	c.cfg.GlobalBatch = 42
	got := c.shares([]string{"a", "b"})
	// 10 and 32 finish at 0.100 s and 0.107 s; 11 and 31 at 0.110 s.
	if got["a"] != 10 || got["b"] != 32 {
		t.Errorf("from speeds 100:300: %v, want a 10, b 32", got)
	}
	// b measured at 1 ms per sample (1000/s), a still at its 100/s guess.
	c.peers["b"].perSample, c.peers["b"].measured = 1e6, true
	got = c.shares([]string{"a", "b"})
	if got["a"] != 3 || got["b"] != 39 {
		t.Errorf("a 100/s, b 1000/s: %v, want a 3, b 39", got)
	}
	c.cfg.Batch = Fixed
	if got = c.shares([]string{"a", "b"}); got["a"] != 21 || got["b"] != 21 {
		t.Errorf("fixed: %v, want 21 each", got)
	}
}
