package gpu

import (
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// TestActivations checks ReLU and ReLU6 and their gradients at the kinks
// (gradient 0 there, as PyTorch), on NaN and ±0, and on a range long enough
// to be split over threads.
func TestActivations(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	nan, negZero := float32(math.NaN()), float32(math.Copysign(0, -1))
	special := []float32{-1, negZero, 0, 0.5, 6, 7, nan, -7}
	rng := rand.New(rand.NewPCG(8, 8))
	x := append(special, randSlice(rng, 100000)...)
	for i := len(special); i < len(x); i++ {
		x[i] *= 5
	}
	dy := randSlice(rng, len(x))
	c := NewCPU()
	for _, a := range []Act{ReLU, ReLU6} {
		y, dx := make([]float32, len(x)), make([]float32, len(x))
		c.Activate(a, Host(y), Host(x))
		c.ActivateBackward(a, Host(dx), Host(dy), Host(x))
		for i, v := range x {
			want, pass := max(v, 0), v > 0
			if a == ReLU6 {
				want, pass = min(max(v, 0), 6), v > 0 && v < 6
			}
			wantDx := float32(0)
			if pass {
				wantDx = dy[i]
			}
			if math.Float32bits(y[i]) != math.Float32bits(want) || math.Float32bits(dx[i]) != math.Float32bits(wantDx) {
				t.Fatalf("%v at x=%v: y %v dx %v, want %v and %v", a, v, y[i], dx[i], want, wantDx)
			}
		}
	}
}

// BenchmarkActivate: lenet5's first ReLU at batch 64 (64×6×28×28).
func BenchmarkActivate(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	x, dy := Host(randSlice(rng, 64*6*28*28)), Host(randSlice(rng, 64*6*28*28))
	c := NewCPU()
	y, dx := c.Alloc(x.Len()), c.Alloc(x.Len())
	b.Run("relu/forward", func(b *testing.B) {
		for b.Loop() {
			c.Activate(ReLU, y, x)
		}
	})
	b.Run("relu/backward", func(b *testing.B) {
		for b.Loop() {
			c.ActivateBackward(ReLU, dx, dy, x)
		}
	})
}
