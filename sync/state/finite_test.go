package state

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// naiveNonFinite is the reference: a test per element.
func naiveNonFinite(v []float32) int {
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return i
		}
	}
	return -1
}

// TestFirstNonFinite puts NaN, +Inf and -Inf at every position of slices
// of many lengths (block edges included), next to the largest finite
// values, and compares the fast scan with the reference.
func TestFirstNonFinite(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
		math.Float32frombits(0x7fc00001), math.Float32frombits(0xff800001)}
	for _, n := range []int{0, 1, 3, 4, 5, 255, 256, 257, 515, 1030} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64())
			if i%7 == 0 {
				v[i] = math.MaxFloat32 * float32(1-2*(i%2))
			}
		}
		if got := firstNonFinite(v); got != -1 {
			t.Fatalf("n=%d: finite slice reported at %d", n, got)
		}
		for pos := 0; pos < n; pos += 1 + n/40 {
			for _, b := range bad {
				old := v[pos]
				v[pos] = b
				if got, want := firstNonFinite(v), naiveNonFinite(v); got != want {
					t.Fatalf("n=%d, %v at %d: got %d, want %d", n, b, pos, got, want)
				}
				v[pos] = old
			}
		}
	}
	// Slices that start at every offset of a word: the scan reads pairs of
	// floats, which then straddle the backing array's 8-byte words.
	base := make([]float32, 300)
	for off := range 3 {
		w := base[off : off+257]
		for pos := range w {
			w[pos] = float32(math.NaN())
			if got := firstNonFinite(w); got != pos {
				t.Fatalf("offset %d, NaN at %d: got %d", off, pos, got)
			}
			w[pos] = 0
		}
	}
	v := []float32{1, 2, float32(math.Inf(1)), float32(math.NaN())}
	if err := CheckFinite("grad", v); !errors.Is(err, ErrNonFinite) || err.Error() != "state: non-finite value: grad[2] = +Inf" {
		t.Errorf("CheckFinite: %v", err)
	}
}

// BenchmarkCheckFinite compares the scan with the per-element reference on
// a lenet-caffe-sized gradient (431,080 floats).
func BenchmarkCheckFinite(b *testing.B) {
	v := make([]float32, 431080)
	for i := range v {
		v[i] = float32(i%1000) * 1e-3
	}
	b.Run("naive", func(b *testing.B) {
		b.SetBytes(int64(4 * len(v)))
		for b.Loop() {
			if naiveNonFinite(v) != -1 {
				b.Fatal("found")
			}
		}
	})
	b.Run("scan", func(b *testing.B) {
		b.SetBytes(int64(4 * len(v)))
		for b.Loop() {
			if CheckFinite("g", v) != nil {
				b.Fatal("found")
			}
		}
	})
}
