package solver

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

func TestDropoutSetup(t *testing.T) {
	cases := []struct {
		p       float32
		wantErr bool
	}{
		{0, false}, {0.5, false}, {0.999, false},
		{-0.1, true}, {1, true}, {1.5, true}, {float32(math.NaN()), true},
	}
	for _, tc := range cases {
		l := NewDropout("drop", tc.p)
		out, err := l.Setup([]Shape{{3, 4, 5}})
		if (err != nil) != tc.wantErr {
			t.Errorf("p=%v: error %v, want error %v", tc.p, err, tc.wantErr)
		}
		if err == nil && (out != Shape{3, 4, 5} || l.Kind() != "dropout") {
			t.Errorf("p=%v: out %v kind %q", tc.p, out, l.Kind())
		}
	}
	if _, err := NewDropout("drop", 0.5).Setup([]Shape{{1, 1, 1}, {1, 1, 1}}); err == nil {
		t.Error("two inputs accepted")
	}
}

// dropoutInput returns n samples of shape s drawn from [1, 2): never zero,
// so a dropped element is told apart from a kept one.
func dropoutInput(n int, s Shape, r *rand.Rand) []float32 {
	x := make([]float32, n*s.Size())
	for i := range x {
		x[i] = float32(1 + r.Float64()) // never 0
	}
	return x
}

func TestDropoutTraining(t *testing.T) {
	s := Shape{8, 50, 50} // 20000 elements per sample
	const n = 5
	for _, p := range []float32{0.1, 0.5, 0.9} {
		l := NewDropout("drop", p)
		h := newNormHarness(t, l, s, n)
		r := rand.New(rand.NewPCG(2, 3))
		x := dropoutInput(n, s, r)
		h.pass.Rand = rand.New(rand.NewPCG(42, 0))
		y := h.forward(x, n, true)
		keep := float32(1 / (1 - float64(p)))
		dropped := 0
		for i := range y {
			switch y[i] {
			case 0:
				dropped++
			case x[i] * keep:
			default:
				t.Fatalf("p=%v: y[%d] = %v for x %v: neither 0 nor x/(1-p) = %v", p, i, y[i], x[i], x[i]*keep)
			}
		}
		// The dropped count is binomial: stay within 5 standard deviations.
		total := float64(len(y))
		sd := math.Sqrt(total * float64(p) * (1 - float64(p)))
		if d := math.Abs(float64(dropped) - total*float64(p)); d > 5*sd {
			t.Errorf("p=%v: %d of %v dropped, %.1f standard deviations from the expected %v", p, dropped, total, d/sd, total*float64(p))
		}

		// Neighbours are independent: both of a pair (2i, 2i+1), two words
		// of one Philox block, are dropped with probability p².
		both, pairs := 0, len(y)/2
		for i := 0; i+1 < len(y); i += 2 {
			if y[i] == 0 && y[i+1] == 0 {
				both++
			}
		}
		p2 := float64(p) * float64(p)
		sd2 := math.Sqrt(float64(pairs) * p2 * (1 - p2))
		if d := math.Abs(float64(both) - float64(pairs)*p2); d > 5*sd2 {
			t.Errorf("p=%v: %d of %d pairs both dropped, want about %.0f", p, both, pairs, float64(pairs)*p2)
		}

		// The gradient is dy times the same mask.
		dy := make([]float32, len(y))
		for i := range dy {
			dy[i] = float32(r.NormFloat64())
		}
		dx := h.backward(dy)
		for i := range dx {
			want := dy[i] * keep
			if y[i] == 0 {
				want = 0
			}
			if dx[i] != want {
				t.Fatalf("p=%v: dx[%d] = %v, want %v", p, i, dx[i], want)
			}
		}

		// The next step draws a fresh mask.
		if y2 := h.forward(x, n, true); slices.Equal(y, y2) {
			t.Errorf("p=%v: two training steps drew the same mask", p)
		}
	}
}

func TestDropoutDeterminism(t *testing.T) {
	s := Shape{4, 7, 7}
	const n = 3
	run := func(seed uint64, batches ...int) [][]float32 {
		h := newNormHarness(t, NewDropout("drop", 0.3), s, n)
		h.pass.Rand = rand.New(rand.NewPCG(seed, 11))
		x := dropoutInput(n, s, rand.New(rand.NewPCG(1, 1)))
		var outs [][]float32
		for _, b := range batches {
			outs = append(outs, h.forward(x[:b*s.Size()], b, true))
		}
		return outs
	}
	a, b, c := run(7, 3, 1, 2), run(7, 3, 1, 2), run(8, 3, 1, 2)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Errorf("step %d: same seed, different outputs", i)
		}
	}
	if slices.Equal(a[0], c[0]) {
		t.Error("different seeds drew the same mask")
	}
}

func TestDropoutIdentity(t *testing.T) {
	s := Shape{3, 5, 5}
	const n = 4
	cases := []struct {
		name  string
		p     float32
		train bool
	}{
		{"eval", 0.5, false},
		{"p=0 training", 0, true},
		{"p=0 eval", 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newNormHarness(t, NewDropout("drop", tc.p), s, n)
			r := rand.New(rand.NewPCG(4, 4))
			x := dropoutInput(n, s, r)
			gen := rand.New(rand.NewPCG(5, 5))
			h.pass.Rand = gen
			y := h.forward(x, n, tc.train)
			if !slices.Equal(x, y) {
				t.Fatal("output differs from input")
			}
			dy := dropoutInput(n, s, r)
			if dx := h.backward(dy); !slices.Equal(dx, dy) {
				t.Fatal("input gradient differs from output gradient")
			}
			// Nothing was drawn: the generator is where a fresh one starts.
			if gen.Uint64() != rand.New(rand.NewPCG(5, 5)).Uint64() {
				t.Error("an identity pass drew from Pass.Rand")
			}
		})
	}
}

// After an eval Forward, Backward must not reuse an older training mask.
func TestDropoutEvalAfterTrain(t *testing.T) {
	s := Shape{2, 3, 3}
	h := newNormHarness(t, NewDropout("drop", 0.5), s, 2)
	x := dropoutInput(2, s, rand.New(rand.NewPCG(1, 2)))
	h.forward(x, 2, true)
	h.forward(x, 2, false)
	if dx := h.backward(x); !slices.Equal(dx, x) {
		t.Error("eval-mode Backward applied the training mask")
	}
}

func TestDropoutGradients(t *testing.T) {
	// The checker reseeds Pass.Rand before each Forward, so every evaluation
	// sees the same mask and the layer is linear in its input.
	checkGrads(t, NewDropout("drop", 0.4), Shape{3, 4, 4}, 2, 1e-2)
}

func TestDropoutNoAllocation(t *testing.T) {
	s := Shape{4, 6, 6}
	l := NewDropout("drop", 0.25)
	h := newNormHarness(t, l, s, 8)
	b := h.b
	x, y, dy, dx := b.Alloc(8*s.Size()), b.Alloc(8*s.Size()), b.Alloc(8*s.Size()), b.Alloc(8*s.Size())
	b.Fill(x, 2)
	h.pass.N, h.pass.Train = 8, true
	ins, dins := []gpu.Buffer{x}, []gpu.Buffer{dx}
	allocs := testing.AllocsPerRun(20, func() {
		l.Forward(&h.pass, y, ins)
		l.Backward(&h.pass, dins, dy, ins, y, false)
	})
	if allocs != 0 {
		t.Errorf("%v allocations per Forward+Backward", allocs)
	}
}

func BenchmarkDropoutForward(b *testing.B) {
	s := Shape{32, 56, 56}
	const n = 8
	l := NewDropout("drop", 0.2)
	h := newNormHarness(b, l, s, n)
	x, y := h.b.Alloc(n*s.Size()), h.b.Alloc(n*s.Size())
	h.pass.N, h.pass.Train = n, true
	ins := []gpu.Buffer{x}
	b.SetBytes(int64(8 * n * s.Size()))
	for b.Loop() {
		l.Forward(&h.pass, y, ins)
	}
}
