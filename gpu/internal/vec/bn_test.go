package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The batch-norm loops against their Go twins at every tail length, with
// special values among the inputs: bit for bit (NaN for NaN), and the
// elements past n untouched.
func TestBNAgainstTwin(t *testing.T) {
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-40, -1e-40, 3e38}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(8, 1))
		for n := 0; n <= 70; n++ {
			x, dy := randSlice(r, n), randSlice(r, n)
			if n%5 == 0 {
				for i := range x {
					if r.IntN(4) == 0 {
						x[i] = special[r.IntN(len(special))]
					}
					if r.IntN(4) == 0 {
						dy[i] = special[r.IntN(len(special))]
					}
				}
			}
			mean, scale, shift := float32(r.NormFloat64()), float32(r.NormFloat64()), float32(r.NormFloat64())
			got, want := randSlice(r, n+3), make([]float32, n+3)
			copy(want, got)
			bnApplyGo(want, x, mean, scale, shift)
			BNApply(got, x, mean, scale, shift)
			if !sameBitsOrNaN(got, want) {
				t.Fatalf("BNApply n=%d:\n got %v\nwant %v", n, got, want)
			}
			copy(want, got)
			bnBackwardDataGo(want, dy, x, scale, shift, 0.75, mean)
			BNBackwardData(got, dy, x, scale, shift, 0.75, mean)
			if !sameBitsOrNaN(got, want) {
				t.Fatalf("BNBackwardData n=%d:\n got %v\nwant %v", n, got, want)
			}
			if a, b := Sum64(x), sum64Go(x); !same64(a, b) {
				t.Fatalf("Sum64 n=%d: %v, twin %v", n, a, b)
			}
			if a, b := SqDev64(x, float64(mean)), sqDev64Go(x, float64(mean)); !same64(a, b) {
				t.Fatalf("SqDev64 n=%d: %v, twin %v", n, a, b)
			}
			s1, t1 := sumDyDevGo(dy, x, mean)
			s2, t2 := SumDyDev(dy, x, mean)
			if !same64(s1, s2) || !same64(t1, t2) {
				t.Fatalf("SumDyDev n=%d: (%v, %v), twin (%v, %v)", n, s2, t2, s1, t1)
			}
		}
	})
}

func same64(a, b float64) bool {
	return math.Float64bits(a) == math.Float64bits(b) || (a != a && b != b)
}

// SumDyDev's twin adds every element once, whichever lane it lands in, and
// computes x - mean before the product.
func TestSumDyDevOrder(t *testing.T) {
	dy := make([]float32, 14)
	dy[0], dy[8] = 1<<30, 1 // lane 0: 2^30 + 1, exact in float64
	dy[1], dy[5] = 1, 1
	s, _ := sumDyDevGo(dy, make([]float32, 14), 0)
	if s != 1<<30+3 {
		t.Errorf("sum %v, want %v", s, float64(1<<30+3))
	}
	_, d := sumDyDevGo([]float32{2, 3}, []float32{1.5, -1}, 0.5)
	if d != 2*1+3*-1.5 {
		t.Errorf("Σ dy·(x-mean) = %v, want %v", d, 2*1+3*-1.5)
	}
}

func BenchmarkBN(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 4096
	x, dy, y := randSlice(r, n), randSlice(r, n), make([]float32, n)
	for _, k := range []struct {
		name string
		f    func()
	}{
		{"apply/go", func() { bnApplyGo(y, x, 0.1, 1.5, 0.2) }},
		{"apply", func() { BNApply(y, x, 0.1, 1.5, 0.2) }},
		{"backward/go", func() { bnBackwardDataGo(y, dy, x, 1.5, 0.1, 0.3, 0.2) }},
		{"backward", func() { BNBackwardData(y, dy, x, 1.5, 0.1, 0.3, 0.2) }},
		{"sum64/go", func() { sum64Go(x) }},
		{"sum64", func() { Sum64(x) }},
		{"sqdev64/go", func() { sqDev64Go(x, 0.2) }},
		{"sqdev64", func() { SqDev64(x, 0.2) }},
		{"sums/go", func() { sumDyDevGo(dy, x, 0.2) }},
		{"sums", func() { SumDyDev(dy, x, 0.2) }},
	} {
		b.Run(k.name, func(b *testing.B) {
			for b.Loop() {
				k.f()
			}
		})
	}
}
