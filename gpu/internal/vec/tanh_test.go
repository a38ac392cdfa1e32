package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestTanhAccuracy sweeps float32 inputs densely over the range where
// tanh is not yet ±1 (and past it, and NaN) and checks the polynomial
// kernel against math.Tanh in float64: at most 1 float32 ulp apart (both
// round a float64 value near the exact one, so they may differ only at
// near-ties), signed zeros kept.
func TestTanhAccuracy(t *testing.T) {
	ulps := func(a, b float32) int64 {
		d := int64(math.Float32bits(a)) - int64(math.Float32bits(b))
		if math.Signbit(float64(a)) != math.Signbit(float64(b)) {
			return math.MaxInt64
		}
		return max(d, -d)
	}
	worst, n := int64(0), 0
	for v := float32(-20); v <= 20; v = math.Nextafter32(v, 200) + float32(math.Abs(float64(v)))*1e-4 {
		for _, x := range []float32{v, v * 1e-3, v * 1e-7} {
			n++
			got, want := Tanh32(x), float32(math.Tanh(float64(x)))
			worst = max(worst, ulps(got, want))
			if ulps(got, want) > 1 {
				t.Fatalf("tanh(%v) = %v, want %v", x, got, want)
			}
		}
	}
	if v := Tanh32(float32(math.NaN())); v == v {
		t.Errorf("tanh(NaN) = %v", v)
	}
	t.Logf("%d inputs: worst %d ulp", n, worst)
}

// BenchmarkTanh puts the polynomial kernel next to math.Tanh (the naive
// way) on 1M activations, one thread.
func BenchmarkTanh(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 6))
	x, y := make([]float32, 1<<20), make([]float32, 1<<20)
	for i := range x {
		x[i] = 6*rng.Float32() - 3
	}
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			for i, v := range x {
				y[i] = float32(math.Tanh(float64(v)))
			}
		}
	})
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			for i, v := range x {
				y[i] = Tanh32(v)
			}
		}
	})
}
