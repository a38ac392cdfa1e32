package vec

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Conv3Rows and Conv3RowsFlipped against their Go twins, bit for bit, at
// every tail length, with NaN, ±0, ±Inf and denormals among inputs and
// weights; the elements past n must stay untouched. A NaN only has to stay a
// NaN: which operand's payload survives a product of two NaNs depends on
// the operand order the compiler picks for the Go twin.
func TestConv3RowsAgainstTwin(t *testing.T) {
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-40, -1e-40, 3e38}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(3, 9))
		for n := 0; n <= 70; n++ {
			var x [3][]float32
			for i := range x {
				x[i] = randSlice(r, n+2)
				for j := range x[i] {
					if r.IntN(6) == 0 {
						x[i][j] = special[r.IntN(len(special))]
					}
				}
			}
			w := randSlice(r, 9)
			if n%7 == 0 {
				w[r.IntN(9)] = special[r.IntN(len(special))]
			}
			for _, k := range []struct {
				name    string
				f, twin func(out, x0, x1, x2, w []float32)
			}{{"Conv3Rows", Conv3Rows, conv3RowsGo}, {"Conv3RowsFlipped", Conv3RowsFlipped, conv3RowsFlippedGo}} {
				got, want := randSlice(r, n+3), make([]float32, n+3)
				copy(want, got)
				k.twin(want[:n], x[0], x[1], x[2], w)
				k.f(got[:n], x[0], x[1], x[2], w)
				if !sameBitsOrNaN(got, want) {
					t.Fatalf("%s n=%d:\n got %v\nwant %v", k.name, n, got, want)
				}
			}
		}
	})
}

// Conv3RowFilter against its twin, bit for bit, over every tail length and
// over several calls into the same sums (lanes restart at each call's
// first element).
func TestConv3RowFilterAgainstTwin(t *testing.T) {
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)), 1e-40}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(7, 7))
		for n := 0; n <= 70; n++ {
			got, want := randSlice(r, 48+4), make([]float32, 48+4)
			copy(want, got)
			for call := 0; call < 3; call++ {
				dy, x := randSlice(r, n), randSlice(r, n+2)
				if n%9 == 0 {
					for i := range x {
						if r.IntN(4) == 0 {
							x[i] = special[r.IntN(len(special))]
						}
					}
				}
				conv3RowFilterGo(want, dy, x)
				Conv3RowFilter(got, dy, x)
			}
			if !sameBitsOrNaN(got, want) {
				t.Fatalf("n=%d:\n got %v\nwant %v", n, got, want)
			}
		}
	})
}

// The twins add the nine products in the documented order: a case where
// the order shows (2^24 + 1 - 2^24 ...).
func TestConv3RowsOrder(t *testing.T) {
	w := []float32{1, 1, 1, 1, 1, 1, 1, 1, 1}
	x0 := []float32{1 << 24, 1, 1}
	x1 := []float32{-(1 << 24), 0, 0}
	x2 := []float32{0, 0, 0}
	out := make([]float32, 1)
	conv3RowsGo(out, x0, x1, x2, w)
	// ((2^24 + 1) + 1) rounds to 2^24 each time, then - 2^24: 0.
	if out[0] != 0 {
		t.Errorf("conv3RowsGo = %v, want 0 (left to right)", out[0])
	}
	conv3RowsFlippedGo(out, x0, x1, x2, w)
	// (1 + 1) + 2^24 = 2^24 + 2, then - 2^24: 2.
	if out[0] != 2 {
		t.Errorf("conv3RowsFlippedGo = %v, want 2 (right to left)", out[0])
	}
}

func BenchmarkConv3Rows(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const n = 64
	x0, x1, x2, w := randSlice(r, n+2), randSlice(r, n+2), randSlice(r, n+2), randSlice(r, 9)
	out := make([]float32, n)
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			conv3RowsGo(out, x0, x1, x2, w)
		}
	})
	b.Run("asm", func(b *testing.B) {
		for b.Loop() {
			Conv3Rows(out, x0, x1, x2, w)
		}
	})
}

// sameBitsOrNaN is sameBits with every NaN equal to every other.
func sameBitsOrNaN(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) && !(a[i] != a[i] && b[i] != b[i]) {
			return false
		}
	}
	return true
}
