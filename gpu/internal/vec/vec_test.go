package vec

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

func randSlice(r *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(r.NormFloat64())
	}
	return s
}

func sameBits(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
			return false
		}
	}
	return true
}

// paths runs f with the AVX-512 loops, the AVX2 loops and the NEON loops
// (each where the machine has them) and with the Go twins.
func paths(t *testing.T, f func(t *testing.T, asm bool)) {
	s512, s2, sn := useAVX512, useAVX2, useNEON
	defer func() { setAVX512(s512); setAVX2(s2); setNEON(sn) }()
	for _, p := range []struct {
		name               string
		avx512, avx2, neon bool
	}{{"avx512", true, false, false}, {"avx2", false, true, false}, {"neon", false, false, true}, {"false", false, false, false}} {
		if p.avx512 && !s512 || p.avx2 && !s2 || p.neon && !sn {
			continue
		}
		setAVX512(p.avx512)
		setAVX2(p.avx2)
		setNEON(p.neon)
		t.Run("asm="+p.name, func(t *testing.T) { f(t, p.avx512 || p.avx2 || p.neon) })
	}
}

// TestRowsAgainstTwin: CopyRows and AddRows on every tail length (0..40
// floats per row), strides wider than, equal to and narrower than the row
// (overlapping source rows), with a margin that must stay untouched.
func TestRowsAgainstTwin(t *testing.T) {
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(1, 1))
		for n := 0; n <= 40; n++ {
			for _, rows := range []int{0, 1, 3} {
				for _, st := range [][2]int{{n, n}, {n + 3, n + 7}, {n + 1, 1}, {2*n + 1, 2}} {
					ldd, lds := st[0], st[1]
					src := randSlice(r, span(rows, n, lds)+5)
					dst := randSlice(r, span(rows, n, ldd)+5)
					want := append([]float32(nil), dst...)
					got := append([]float32(nil), dst...)
					copyRowsGo(want, ldd, src, lds, rows, n)
					CopyRows(got, ldd, src, lds, rows, n)
					if !sameBits(got, want) {
						t.Fatalf("CopyRows rows=%d n=%d ldd=%d lds=%d: %v, want %v", rows, n, ldd, lds, got, want)
					}
					want = append(want[:0], dst...)
					got = append(got[:0], dst...)
					addRowsGo(want, ldd, src, lds, rows, n)
					AddRows(got, ldd, src, lds, rows, n)
					if !sameBits(got, want) {
						t.Fatalf("AddRows rows=%d n=%d ldd=%d lds=%d: %v, want %v", rows, n, ldd, lds, got, want)
					}
				}
			}
		}
		for taps := 0; taps <= 9; taps++ {
			for n := 0; n <= 20; n++ {
				lds := n + 4
				src := randSlice(r, span(taps, n, lds)+2)
				dst := randSlice(r, n+taps+3)
				want, got := append([]float32(nil), dst...), append([]float32(nil), dst...)
				if taps > 0 && n > 0 {
					addShiftedGo(want, src, lds, taps, n)
				}
				AddShifted(got, src, lds, taps, n)
				if !sameBits(got, want) {
					t.Fatalf("AddShifted taps=%d n=%d: %v, want %v", taps, n, got, want)
				}
			}
		}
		for n := 0; n <= 40; n++ {
			for _, rows := range []int{0, 1, 3} {
				ldd := n + 3
				got := randSlice(r, span(rows, n, ldd)+4)
				want := append([]float32(nil), got...)
				for i := 0; i < rows && n > 0; i++ {
					clear(want[i*ldd : i*ldd+n])
				}
				ZeroRows(got, ldd, rows, n)
				if !sameBits(got, want) {
					t.Fatalf("ZeroRows rows=%d n=%d: %v, want %v", rows, n, got, want)
				}
			}
		}
		d := []float32{1, 2, 3, 4, 5, 6}
		ZeroRows(d, 3, 2, 2)
		if !sameBits(d, []float32{0, 0, 3, 0, 0, 6}) {
			t.Errorf("ZeroRows: %v", d)
		}
	})
}

// TestElementwiseAgainstTwin: ReLU, its gradient and AddScalar at every
// tail length, with NaN, ±0, ±Inf and denormals among the inputs.
func TestElementwiseAgainstTwin(t *testing.T) {
	special := []float32{float32(math.NaN()), float32(math.Copysign(0, -1)), 0, float32(math.Inf(1)),
		float32(math.Inf(-1)), 1e-40, -1e-40, 6, -6}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(2, 2))
		for n := 0; n <= 70; n++ {
			x, dy := randSlice(r, n), randSlice(r, n)
			for i := range x {
				if r.IntN(3) == 0 {
					x[i] = special[r.IntN(len(special))]
				}
				if r.IntN(5) == 0 {
					dy[i] = special[r.IntN(len(special))]
				}
			}
			y, want := randSlice(r, n+3), randSlice(r, n+3)
			copy(want, y)
			reluGo(want, x)
			ReLU(y, x)
			if !sameBits(y, want) {
				t.Fatalf("ReLU n=%d: x %v\n got %v\nwant %v", n, x, y, want)
			}
			copy(want, y)
			reluBackwardGo(want, dy, x)
			ReLUBackward(y, dy, x)
			if !sameBits(y, want) {
				t.Fatalf("ReLUBackward n=%d: x %v dy %v\n got %v\nwant %v", n, x, dy, y, want)
			}
			if got, want := Sum(dy), sumGo(dy); math.Float32bits(got) != math.Float32bits(want) {
				t.Fatalf("Sum n=%d: %v, want %v", n, got, want)
			}
			got, w := append([]float32(nil), dy...), append([]float32(nil), dy...)
			for i := range w {
				w[i] += 0.375
			}
			AddScalar(got, 0.375)
			if !sameBits(got, w) {
				t.Fatalf("AddScalar n=%d: %v, want %v", n, got, w)
			}
		}
	})
}

// TestSumOrder pins sumGo's order on a case where it shows: 16 lanes, then
// pairwise.
func TestSumOrder(t *testing.T) {
	s := make([]float32, 17)
	s[0], s[16], s[8] = 1<<24, 1, 1 // lane 0: 2^24+1 rounds to 2^24; lane 8 adds 1 later
	if got := sumGo(s); got != 1<<24 {
		t.Errorf("sumGo = %v, want %v", got, float32(1<<24))
	}
	for n := 0; n < 3; n++ {
		if got := sumGo(make([]float32, n)); got != 0 {
			t.Errorf("empty sum %v", got)
		}
	}
}

// TestReLUSemantics pins the Go twins to Go's max and to PyTorch's gradient
// rule, so that the assembly, checked against them, is pinned too.
func TestReLUSemantics(t *testing.T) {
	nan := float32(math.NaN())
	x := []float32{-1, float32(math.Copysign(0, -1)), 0, 2, nan}
	y := make([]float32, len(x))
	reluGo(y, x)
	for i, v := range x {
		if w := max(v, 0); math.Float32bits(y[i]) != math.Float32bits(w) {
			t.Errorf("relu(%v) = %v, want max(x, 0) = %v", v, y[i], w)
		}
	}
	dy := []float32{5, 5, 5, 5, 5}
	reluBackwardGo(y, dy, x)
	if !sameBits(y, []float32{0, 0, 0, 5, 0}) {
		t.Errorf("relu gradient %v", y)
	}
}

func TestRowsPanicOnShortSlices(t *testing.T) {
	defer func() {
		if msg := fmt.Sprint(recover()); msg == "<nil>" {
			t.Error("no panic")
		}
	}()
	CopyRows(make([]float32, 10), 5, make([]float32, 10), 5, 3, 5)
}

// BenchmarkCopyRows: lenet-caffe conv2's lowering rows (8 floats, 12 apart)
// and a long row, assembly against the Go loop.
func BenchmarkCopyRows(b *testing.B) {
	for _, sh := range [][3]int{{8, 8, 12}, {24, 24, 28}, {1024, 1024, 1024}} {
		n, ldd, lds := sh[0], sh[1], sh[2]
		rows := 4096 / n
		src, dst := make([]float32, span(rows, n, lds)), make([]float32, span(rows, n, ldd))
		b.Run(fmt.Sprintf("n=%d/vec", n), func(b *testing.B) {
			for b.Loop() {
				CopyRows(dst, ldd, src, lds, rows, n)
			}
		})
		b.Run(fmt.Sprintf("n=%d/go", n), func(b *testing.B) {
			for b.Loop() {
				copyRowsGo(dst, ldd, src, lds, rows, n)
			}
		})
	}
}

// TestMaxPool2BackwardAgainstTwin: every window count per row up to 40
// (full chunks of 16 and every tail), rows wider than the windows, values
// drawn from a small set so that ties (±0 included) decide; din starts as
// NaN so that a write outside the windows shows. A NaN input makes both
// paths report false.
func TestMaxPool2BackwardAgainstTwin(t *testing.T) {
	values := []float32{-1, 0, float32(math.Copysign(0, -1)), 1, 2}
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(4, 4))
		for ow := 0; ow <= 40; ow++ {
			for _, oh := range []int{1, 3} {
				for _, w := range []int{2 * ow, 2*ow + 1, 2*ow + 5} {
					x := make([]float32, 2*oh*w+1)
					for i := range x {
						x[i] = values[r.IntN(len(values))]
					}
					dy := randSlice(r, oh*ow)
					if len(dy) > 0 {
						dy[0] = float32(math.Copysign(0, -1))
					}
					want, got := make([]float32, len(x)), make([]float32, len(x))
					for i := range want {
						want[i], got[i] = float32(math.NaN()), float32(math.NaN())
					}
					okWant := maxPool2BackwardGo(want, x, dy, w, ow, oh)
					okGot := MaxPool2Backward(got, x, dy, w, ow, oh)
					if !okWant || !okGot || !sameBits(got, want) {
						t.Fatalf("ow=%d oh=%d w=%d: ok %v/%v\n got %v\nwant %v", ow, oh, w, okGot, okWant, got, want)
					}
					if ow > 0 {
						x[r.IntN(2*ow)+w] = float32(math.NaN())
						if MaxPool2Backward(got, x, dy, w, ow, oh) || maxPool2BackwardGo(want, x, dy, w, ow, oh) {
							t.Fatalf("ow=%d oh=%d w=%d: NaN not reported", ow, oh, w)
						}
					}
				}
			}
		}
	})
}

// BenchmarkMaxPool2Backward: lenet-caffe's first pooling plane (24×24).
func BenchmarkMaxPool2Backward(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x, dy, din := randSlice(r, 24*24), randSlice(r, 12*12), make([]float32, 24*24)
	b.Run("vec", func(b *testing.B) {
		for b.Loop() {
			MaxPool2Backward(din, x, dy, 24, 12, 12)
		}
	})
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			maxPool2BackwardGo(din, x, dy, 24, 12, 12)
		}
	})
}

// TestTranspose8AgainstTwin: every k up to 50 (full blocks of 16 and every
// tail), destination rows wider than eight with a margin that must stay.
func TestTranspose8AgainstTwin(t *testing.T) {
	paths(t, func(t *testing.T, _ bool) {
		r := rand.New(rand.NewPCG(5, 5))
		for k := 0; k <= 50; k++ {
			for _, ld := range [][2]int{{8, k}, {11, k + 3}} {
				ldd, lds := ld[0], ld[1]
				// An exact destination when k is odd or a multiple of 16 (the
				// slices' ends must not be overrun), a margin that must stay
				// otherwise.
				margin := 3
				if k%2 == 1 || k%16 == 0 {
					margin = 0
				}
				src := randSlice(r, 7*lds+k+margin)
				got := randSlice(r, max(k-1, 0)*ldd+8+margin)
				want := append([]float32(nil), got...)
				for p := 0; p < k; p++ {
					for j := 0; j < 8; j++ {
						want[p*ldd+j] = src[j*lds+p]
					}
				}
				Transpose8(got, ldd, src, lds, k)
				if !sameBits(got, want) {
					t.Fatalf("k=%d ldd=%d lds=%d:\n got %v\nwant %v", k, ldd, lds, got, want)
				}
			}
		}
	})
}

// BenchmarkReLU puts ReLU and its gradient beside their Go twins (the
// dispatched loop: AVX-512, AVX2 or the twin, as this machine has).
func BenchmarkReLU(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	x, dy, y := randSlice(r, 1<<16), randSlice(r, 1<<16), make([]float32, 1<<16)
	for _, c := range []struct {
		name string
		f    func()
	}{
		{"forward/go", func() { reluGo(y, x) }},
		{"forward", func() { ReLU(y, x) }},
		{"backward/go", func() { reluBackwardGo(y, dy, x) }},
		{"backward", func() { ReLUBackward(y, dy, x) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				c.f()
			}
		})
	}
}
