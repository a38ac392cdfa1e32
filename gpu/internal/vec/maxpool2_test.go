package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// MaxPool2 against its Go twin on every row tail (0..40 windows), with row
// strides wider than the windows, NaN, ±0, ±Inf among the inputs, and a
// margin after the output that must stay untouched.
func TestMaxPool2AgainstTwin(t *testing.T) {
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), float32(math.Inf(-1))}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(5, 2))
		for ow := 0; ow <= 40; ow++ {
			for _, extra := range []int{0, 1, 3} {
				w, oh := 2*ow+extra, 1+r.IntN(3)
				x := randSlice(r, 2*oh*w)
				for i := range x {
					if r.IntN(4) == 0 {
						x[i] = special[r.IntN(len(special))]
					}
				}
				got, want := randSlice(r, ow*oh+5), make([]float32, ow*oh+5)
				copy(want, got)
				maxPool2Go(want, x, w, ow, oh)
				MaxPool2(got, x, w, ow, oh)
				if !sameBitsOrNaN(got, want) {
					t.Fatalf("ow=%d w=%d oh=%d: x %v\n got %v\nwant %v", ow, w, oh, x, got, want)
				}
			}
		}
	})
}

// The twin follows Go's max: +0 beats -0 and NaN wins.
func TestMaxPool2Semantics(t *testing.T) {
	nz := float32(math.Copysign(0, -1))
	y := make([]float32, 2)
	maxPool2Go(y, []float32{nz, nz, float32(math.NaN()), -1, nz, 0, -2, -3}, 4, 2, 1)
	if math.Signbit(float64(y[0])) || y[0] != 0 || y[1] == y[1] {
		t.Errorf("got %v, want [+0 NaN]", y)
	}
}

func BenchmarkMaxPool2(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, y := randSlice(r, 28*28), make([]float32, 14*14)
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			maxPool2Go(y, x, 28, 14, 14)
		}
	})
	b.Run("asm", func(b *testing.B) {
		for b.Loop() {
			MaxPool2(y, x, 28, 14, 14)
		}
	})
}
