package avg

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// lengths cover every tail of every loop (32-, 16- and 8-wide rounds)
// and a few long vectors.
var lengths = func() []int {
	var out []int
	for n := 0; n <= 70; n++ {
		out = append(out, n)
	}
	return append(out, 1000, 4099, 65536+13)
}()

// values returns n floats of mixed sign and magnitude, subnormals included.
func values(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		switch r.IntN(8) {
		case 0:
			v[i] = math.Float32frombits(r.Uint32N(1 << 23)) // subnormal
		case 1:
			v[i] = float32(r.NormFloat64() * 1e30)
		case 2:
			v[i] = 0
		default:
			v[i] = float32(r.NormFloat64())
		}
		if r.IntN(2) == 0 {
			v[i] = -v[i]
		}
	}
	return v
}

// guarded returns a slice of n with sentinels on both sides in its array,
// so a write past either end shows.
func guarded[T float32 | float64](n int, fill T) (s []T, check func() bool) {
	const pad = 20
	all := make([]T, n+2*pad)
	for i := range all {
		all[i] = fill
	}
	return all[pad : pad+n], func() bool {
		for _, v := range slices.Concat(all[:pad], all[pad+n:]) {
			if v != fill {
				return false
			}
		}
		return true
	}
}

// paths runs f with the assembly and then with the Go loops.
func paths(t *testing.T, f func(t *testing.T)) {
	for _, asm := range []bool{true, false} {
		prev := setAVX512(asm)
		t.Run(fmt.Sprintf("asm=%v", useAVX512), f)
		setAVX512(prev)
	}
}

func TestFirstNonFinite(t *testing.T) {
	paths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 1))
		bad := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
			math.Float32frombits(0x7f800001), math.Float32frombits(0xffffffff)}
		for _, n := range lengths {
			src := values(r, n)
			src = append(src, bad[0])[:n] // a NaN just past the end must not count
			if got := FirstNonFinite(src); got != -1 {
				t.Fatalf("n=%d finite: got index %d, want -1", n, got)
			}
			if n == 0 {
				continue
			}
			// One or two non-finite values: the first is reported.
			for try := 0; try < 8; try++ {
				s := slices.Clone(src)
				i := r.IntN(n)
				s[i] = bad[r.IntN(len(bad))]
				if j := r.IntN(n); j > i {
					s[j] = bad[r.IntN(len(bad))]
				}
				if got := FirstNonFinite(s); got != i {
					t.Fatalf("n=%d, %v at %d: got %d", n, s[i], i, got)
				}
			}
		}
	})
}

func TestAddScaledAndMeanAgainstLoop(t *testing.T) {
	paths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(2, 2))
		for _, n := range lengths {
			for _, w := range []float64{1, 64, 37, 1 << 20, -3, 0.3, 1e9} {
				src := values(r, n)
				acc0 := make([]float64, n)
				for i := range acc0 {
					acc0[i] = r.NormFloat64() * math.Pow(10, float64(r.IntN(20)-10))
				}
				want := slices.Clone(acc0)
				for i, g := range src {
					want[i] += float64(w * float64(g))
				}
				acc, ok := guarded[float64](n, 9)
				copy(acc, acc0)
				AddScaled(acc, w, src)
				if !ok() {
					t.Fatalf("AddScaled n=%d w=%v wrote past the slice", n, w)
				}
				for i := range acc {
					if math.Float64bits(acc[i]) != math.Float64bits(want[i]) {
						t.Fatalf("AddScaled n=%d w=%v [%d]: %v, want %v", n, w, i, acc[i], want[i])
					}
				}
			}
			for _, div := range []float64{1, 3, 128, 4096, 1e-3} {
				acc := make([]float64, n)
				for i := range acc {
					acc[i] = float64(values(r, 1)[0]) * float64(1+r.IntN(5000))
				}
				if n > 2 {
					acc[1] = 1e300 // overflows float32: +Inf either way
					acc[2] = 1e-300
				}
				dst, ok := guarded[float32](n, 5)
				Mean(dst, acc, div)
				if !ok() {
					t.Fatalf("Mean n=%d wrote past the slice", n)
				}
				for i, s := range acc {
					if want := float32(s / div); math.Float32bits(dst[i]) != math.Float32bits(want) {
						t.Fatalf("Mean n=%d /%v [%d]: %v, want %v", n, div, i, dst[i], want)
					}
				}
			}
		}
	})
}

// TestAddScaled4: the four-source pass gives the bits of four AddScaled
// calls in order, on every tail, with integer and other weights.
func TestAddScaled4(t *testing.T) {
	paths(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(4, 4))
		for _, n := range lengths {
			for _, w := range [][4]float64{{64, 64, 64, 64}, {1, 37, 1 << 20, 3}, {64, 0.3, 64, 64}} {
				var src [4][]float32
				for k := range src {
					src[k] = values(r, n)
				}
				want := make([]float64, n)
				for i := range want {
					want[i] = r.NormFloat64() * 1e3
				}
				acc, ok := guarded[float64](n, 9)
				copy(acc, want)
				for k := range src {
					addScaledGo(want, w[k], src[k])
				}
				AddScaled4(acc, &w, &src)
				if !ok() {
					t.Fatalf("n=%d w=%v: wrote past the slice", n, w)
				}
				for i := range acc {
					if math.Float64bits(acc[i]) != math.Float64bits(want[i]) {
						t.Fatalf("n=%d w=%v [%d]: %v, want %v", n, w, i, acc[i], want[i])
					}
				}
			}
		}
	})
}

func TestLengthMismatchPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"AddScaled": func() { AddScaled(make([]float64, 3), 1, make([]float32, 4)) },
		"Mean":      func() { Mean(make([]float32, 3), make([]float64, 4), 1) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s with unequal lengths did not panic", name)
				}
			}()
			f()
		}()
	}
}

// BenchmarkAvg: the loops over a lenet-caffe gradient (431,080 values),
// assembly and Go side by side (AddScaled4: four gradients into one
// accumulator; its MB/s counts the four sources).
func BenchmarkAvg(b *testing.B) {
	const n = 431080
	r := rand.New(rand.NewPCG(3, 3))
	src := values(r, n)
	dst := make([]float32, n)
	acc := make([]float64, n)
	for _, asm := range []bool{true, false} {
		prev := setAVX512(asm)
		name := "go"
		if useAVX512 {
			name = "avx512"
		}
		b.Run("FirstNonFinite/"+name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for range b.N {
				FirstNonFinite(src)
			}
		})
		b.Run("AddScaled/"+name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for range b.N {
				AddScaled(acc, 64, src)
			}
		})
		b.Run("AddScaled4/"+name, func(b *testing.B) {
			w := [4]float64{64, 64, 64, 64}
			four := [4][]float32{src, values(r, n), values(r, n), values(r, n)}
			b.SetBytes(4 * 4 * n)
			for range b.N {
				AddScaled4(acc, &w, &four)
			}
		})
		b.Run("Mean/"+name, func(b *testing.B) {
			b.SetBytes(4 * n)
			for range b.N {
				Mean(dst, acc, 4096)
			}
		})
		setAVX512(prev)
	}
}
