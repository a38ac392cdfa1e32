package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ReLU6 and its gradient against their Go twins at every tail length, with
// NaN, ±0, ±Inf, denormals and the kinks 0 and 6 among the inputs; the
// elements past n must stay untouched.
func TestReLU6AgainstTwin(t *testing.T) {
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-40, -1e-40, 6, -6, math.Nextafter32(6, 0), math.Nextafter32(6, 7), 5.5}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(6, 6))
		for n := 0; n <= 70; n++ {
			x, dy := randSlice(r, n), randSlice(r, n)
			for i := range x {
				x[i] *= 4 // reach past 6
				if r.IntN(3) == 0 {
					x[i] = special[r.IntN(len(special))]
				}
				if r.IntN(5) == 0 {
					dy[i] = special[r.IntN(len(special))]
				}
			}
			y, want := randSlice(r, n+3), randSlice(r, n+3)
			copy(want, y)
			relu6Go(want, x)
			ReLU6(y, x)
			if !sameBits(y, want) {
				t.Fatalf("ReLU6 n=%d: x %v\n got %v\nwant %v", n, x, y, want)
			}
			copy(want, y)
			relu6BackwardGo(want, dy, x)
			ReLU6Backward(y, dy, x)
			if !sameBits(y, want) {
				t.Fatalf("ReLU6Backward n=%d: x %v dy %v\n got %v\nwant %v", n, x, dy, y, want)
			}
		}
	})
}

// The Go twins follow Go's min/max and PyTorch's gradient on the corners.
func TestReLU6Semantics(t *testing.T) {
	nan := float32(math.NaN())
	negZero := float32(math.Copysign(0, -1))
	x := []float32{-1, negZero, 0, 3, 6, 7, nan, float32(math.Inf(1))}
	y := make([]float32, len(x))
	relu6Go(y, x)
	want := []float32{0, 0, 0, 3, 6, 6, nan, 6}
	for i := range want {
		if math.Float32bits(y[i]) != math.Float32bits(want[i]) && !(y[i] != y[i] && want[i] != want[i]) {
			t.Errorf("relu6(%v) = %v, want %v", x[i], y[i], want[i])
		}
	}
	if math.Signbit(float64(y[1])) {
		t.Error("relu6(-0) kept the sign")
	}
	dy := []float32{1, 1, 1, 1, 1, 1, 1, 1}
	relu6BackwardGo(y, dy, x)
	wantD := []float32{0, 0, 0, 1, 0, 0, 0, 0}
	if !sameBits(y, wantD) {
		t.Errorf("relu6 gradient %v, want %v", y, wantD)
	}
}

func BenchmarkReLU6(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, dy, y := randSlice(r, 1<<16), randSlice(r, 1<<16), make([]float32, 1<<16)
	for i := range x {
		x[i] *= 4
	}
	b.Run("forward/go", func(b *testing.B) {
		for b.Loop() {
			relu6Go(y, x)
		}
	})
	b.Run("forward", func(b *testing.B) {
		for b.Loop() {
			ReLU6(y, x)
		}
	})
	b.Run("backward/go", func(b *testing.B) {
		for b.Loop() {
			relu6BackwardGo(y, dy, x)
		}
	})
	b.Run("backward", func(b *testing.B) {
		for b.Loop() {
			ReLU6Backward(y, dy, x)
		}
	})
}
