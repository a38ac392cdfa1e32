package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// bnRef is a naive float64 batch normalisation: the slow reference the CPU
// kernels are checked against. It follows PyTorch's definitions literally.
type bnRef struct {
	y, mean, invStd, runMean, runVar []float64
	dx, dgamma, dbeta                []float64
}

// bnAt returns the index of element (n, c, i) of an N×C×HW tensor.
func bnAt(g gpu.BNGeom, n, c, i int) int { return (n*g.C+c)*g.HW + i }

func refBatchNormTrain(g gpu.BNGeom, x, gamma, beta, runMean, runVar, dy []float32) bnRef {
	m := g.N * g.HW
	r := bnRef{
		y: make([]float64, len(x)), dx: make([]float64, len(x)),
		mean: make([]float64, g.C), invStd: make([]float64, g.C),
		runMean: make([]float64, g.C), runVar: make([]float64, g.C),
		dgamma: make([]float64, g.C), dbeta: make([]float64, g.C),
	}
	mom := float64(g.Momentum)
	for c := 0; c < g.C; c++ {
		var s float64
		for n := 0; n < g.N; n++ {
			for i := 0; i < g.HW; i++ {
				s += float64(x[bnAt(g, n, c, i)])
			}
		}
		mean := s / float64(m)
		var ss float64
		for n := 0; n < g.N; n++ {
			for i := 0; i < g.HW; i++ {
				d := float64(x[bnAt(g, n, c, i)]) - mean
				ss += d * d
			}
		}
		v := ss / float64(m)
		unbiased := v
		if m > 1 {
			unbiased = ss / float64(m-1)
		}
		inv := 1 / math.Sqrt(v+float64(g.Eps))
		r.mean[c], r.invStd[c] = mean, inv
		r.runMean[c] = (1-mom)*float64(runMean[c]) + mom*mean
		r.runVar[c] = (1-mom)*float64(runVar[c]) + mom*unbiased
		var sdy, sdyx float64
		for n := 0; n < g.N; n++ {
			for i := 0; i < g.HW; i++ {
				j := bnAt(g, n, c, i)
				xh := (float64(x[j]) - mean) * inv
				r.y[j] = float64(gamma[c])*xh + float64(beta[c])
				if dy != nil {
					sdy += float64(dy[j])
					sdyx += float64(dy[j]) * xh
				}
			}
		}
		r.dbeta[c], r.dgamma[c] = sdy, sdyx
		if dy == nil {
			continue
		}
		for n := 0; n < g.N; n++ {
			for i := 0; i < g.HW; i++ {
				j := bnAt(g, n, c, i)
				xh := (float64(x[j]) - mean) * inv
				r.dx[j] = float64(gamma[c]) * inv / float64(m) *
					(float64(m)*float64(dy[j]) - sdy - xh*sdyx)
			}
		}
	}
	return r
}

func randVec(r *rand.Rand, n int, mean, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(mean + std*r.NormFloat64())
	}
	return v
}

// closeTo reports the first element of got that differs from want by more
// than atol + rtol*|want|.
func closeTo(t *testing.T, what string, got []float32, want []float64, atol, rtol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i := range got {
		g, w := float64(got[i]), want[i]
		if math.IsNaN(g) || math.Abs(g-w) > atol+rtol*math.Abs(w) {
			t.Fatalf("%s[%d] = %v, want %v (atol %g, rtol %g)", what, i, g, w, atol, rtol)
		}
	}
}

var bnCases = []struct {
	name      string
	g         gpu.BNGeom
	mean, std float64 // of the input
}{
	{"2d", gpu.BNGeom{N: 4, C: 3, HW: 25, Eps: 1e-5, Momentum: 0.1}, 0.5, 2},
	{"one-sample", gpu.BNGeom{N: 1, C: 5, HW: 7, Eps: 1e-5, Momentum: 0.1}, -1, 0.5},
	{"1d", gpu.BNGeom{N: 16, C: 6, HW: 1, Eps: 1e-3, Momentum: 0.3}, 0, 1},
	{"two-values", gpu.BNGeom{N: 2, C: 2, HW: 1, Eps: 1e-5, Momentum: 0.1}, 3, 1},
	{"odd-hw", gpu.BNGeom{N: 3, C: 2, HW: 13, Eps: 1e-5, Momentum: 1}, 0, 3},
	// A large offset: E[x²]-E[x]² would lose most digits here.
	{"offset", gpu.BNGeom{N: 32, C: 2, HW: 100, Eps: 1e-5, Momentum: 0.1}, 1000, 1},
}

func TestBatchNormTrainAndBackward(t *testing.T) {
	for _, tc := range bnCases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			g, n := tc.g, tc.g.N*tc.g.C*tc.g.HW
			x := randVec(r, n, tc.mean, tc.std)
			dy := randVec(r, n, 0, 1)
			gamma, beta := randVec(r, g.C, 1, 0.3), randVec(r, g.C, 0, 0.3)
			rm0, rv0 := randVec(r, g.C, 0, 1), randVec(r, g.C, 2, 0.1)
			want := refBatchNormTrain(g, x, gamma, beta, rm0, rv0, dy)

			b := NewCPU()
			y, sm, si := make(gpu.Host, n), make(gpu.Host, g.C), make(gpu.Host, g.C)
			rm, rv := append(gpu.Host(nil), rm0...), append(gpu.Host(nil), rv0...)
			b.BatchNormTrain(g, y, gpu.Host(x), gpu.Host(gamma), gpu.Host(beta), rm, rv, sm, si)
			closeTo(t, "y", y, want.y, 1e-5, 1e-4)
			closeTo(t, "saveMean", sm, want.mean, 0, 1e-6)
			closeTo(t, "saveInvStd", si, want.invStd, 0, 1e-6)
			closeTo(t, "runMean", rm, want.runMean, 1e-6, 1e-6)
			closeTo(t, "runVar", rv, want.runVar, 1e-6, 1e-6)

			dx, dg, db := make(gpu.Host, n), make(gpu.Host, g.C), make(gpu.Host, g.C)
			b.BatchNormBackward(g, dx, dg, db, gpu.Host(dy), gpu.Host(x), gpu.Host(gamma), sm, si)
			closeTo(t, "dx", dx, want.dx, 1e-5, 1e-3)
			closeTo(t, "dgamma", dg, want.dgamma, 1e-4, 1e-4)
			closeTo(t, "dbeta", db, want.dbeta, 1e-5, 1e-5)

			// Each output may be skipped; the others are unchanged by that.
			dx2 := make(gpu.Host, n)
			b.BatchNormBackward(g, dx2, nil, nil, gpu.Host(dy), gpu.Host(x), gpu.Host(gamma), sm, si)
			b.BatchNormBackward(g, nil, nil, db, gpu.Host(dy), gpu.Host(x), gpu.Host(gamma), sm, si)
			for i := range dx {
				if dx[i] != dx2[i] {
					t.Fatalf("dx[%d] = %v without dgamma/dbeta, %v with", i, dx2[i], dx[i])
				}
			}
			closeTo(t, "dbeta alone", db, want.dbeta, 1e-5, 1e-5)
		})
	}
}

// bnLoss64 is Σ w*y of a training-mode batch norm, all in float64: the
// function whose derivatives the closed-form backward must give.
func bnLoss64(g gpu.BNGeom, x, gamma, beta, w []float64) float64 {
	m := float64(g.N * g.HW)
	var loss float64
	for c := 0; c < g.C; c++ {
		var s, ss float64
		for n := 0; n < g.N; n++ {
			for i := 0; i < g.HW; i++ {
				s += x[bnAt(g, n, c, i)]
			}
		}
		mean := s / m
		for n := 0; n < g.N; n++ {
			for i := 0; i < g.HW; i++ {
				d := x[bnAt(g, n, c, i)] - mean
				ss += d * d
			}
		}
		inv := 1 / math.Sqrt(ss/m+float64(g.Eps))
		for n := 0; n < g.N; n++ {
			for i := 0; i < g.HW; i++ {
				j := bnAt(g, n, c, i)
				loss += w[j] * (gamma[c]*(x[j]-mean)*inv + beta[c])
			}
		}
	}
	return loss
}

func to64(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// The reference's closed-form gradients agree with float64 central
// differences of the forward pass, so the kernels checked against the
// reference are checked against the definition.
func TestBatchNormReferenceGradient(t *testing.T) {
	for _, tc := range bnCases[:5] {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(9, uint64(len(tc.name))))
			g, n := tc.g, tc.g.N*tc.g.C*tc.g.HW
			x, w := randVec(r, n, tc.mean, tc.std), randVec(r, n, 0, 1)
			gamma, beta := randVec(r, g.C, 1, 0.3), randVec(r, g.C, 0, 0.3)
			ref := refBatchNormTrain(g, x, gamma, beta, make([]float32, g.C), make([]float32, g.C), w)
			x64, g64, b64, w64 := to64(x), to64(gamma), to64(beta), to64(w)
			const step = 1e-6
			for _, p := range []struct {
				name string
				vals []float64
				want []float64
			}{{"dx", x64, ref.dx}, {"dgamma", g64, ref.dgamma}, {"dbeta", b64, ref.dbeta}} {
				for i, v := range p.vals {
					p.vals[i] = v + step
					lp := bnLoss64(g, x64, g64, b64, w64)
					p.vals[i] = v - step
					lm := bnLoss64(g, x64, g64, b64, w64)
					p.vals[i] = v
					if num := (lp - lm) / (2 * step); math.Abs(num-p.want[i]) > 1e-6+1e-5*math.Abs(num) {
						t.Fatalf("%s[%d] = %v, central difference %v", p.name, i, p.want[i], num)
					}
				}
			}
		})
	}
}

func TestBatchNormInfer(t *testing.T) {
	for _, tc := range bnCases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(8, uint64(len(tc.name))))
			g, n := tc.g, tc.g.N*tc.g.C*tc.g.HW
			x := randVec(r, n, tc.mean, tc.std)
			gamma, beta := randVec(r, g.C, 1, 0.3), randVec(r, g.C, 0, 0.3)
			rm, rv := randVec(r, g.C, tc.mean, 0.1), randVec(r, g.C, tc.std*tc.std, 0.1)
			want := make([]float64, n)
			for nn := 0; nn < g.N; nn++ {
				for c := 0; c < g.C; c++ {
					for i := 0; i < g.HW; i++ {
						j := bnAt(g, nn, c, i)
						want[j] = float64(gamma[c])*(float64(x[j])-float64(rm[c]))/
							math.Sqrt(float64(rv[c])+float64(g.Eps)) + float64(beta[c])
					}
				}
			}
			rm0, rv0 := append([]float32(nil), rm...), append([]float32(nil), rv...)
			y := make(gpu.Host, n)
			NewCPU().BatchNormInfer(g, y, gpu.Host(x), gpu.Host(gamma), gpu.Host(beta), gpu.Host(rm), gpu.Host(rv))
			closeTo(t, "y", y, want, 1e-5, 1e-4)
			for c := range rm {
				if rm[c] != rm0[c] || rv[c] != rv0[c] {
					t.Fatalf("inference changed the running statistics of channel %d", c)
				}
			}
		})
	}
}

// With one value per channel (M = 1) PyTorch refuses to train; the kernels
// must at least stay finite: y = beta, dx = 0, running variance decays.
func TestBatchNormSingleValue(t *testing.T) {
	g := gpu.BNGeom{N: 1, C: 3, HW: 1, Eps: 1e-5, Momentum: 0.1}
	b := NewCPU()
	x, dy := gpu.Host{5, -2, 1e6}, gpu.Host{1, -3, 0.5}
	gamma, beta := gpu.Host{2, 0.5, 1}, gpu.Host{0.25, -1, 3}
	rm, rv, sm, si, y := gpu.Host{0, 0, 0}, gpu.Host{1, 1, 1}, make(gpu.Host, 3), make(gpu.Host, 3), make(gpu.Host, 3)
	b.BatchNormTrain(g, y, x, gamma, beta, rm, rv, sm, si)
	dx, dg, db := make(gpu.Host, 3), make(gpu.Host, 3), make(gpu.Host, 3)
	b.BatchNormBackward(g, dx, dg, db, dy, x, gamma, sm, si)
	for c := 0; c < 3; c++ {
		for _, v := range []float32{y[c], rm[c], rv[c], sm[c], si[c], dx[c], dg[c], db[c]} {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("channel %d: non-finite value %v", c, v)
			}
		}
		if y[c] != beta[c] {
			t.Errorf("y[%d] = %v, want beta %v", c, y[c], beta[c])
		}
		if math.Abs(float64(dx[c])) > 1e-6*math.Abs(float64(gamma[c]*si[c]*dy[c])) {
			t.Errorf("dx[%d] = %v, want 0", c, dx[c])
		}
		if want := float32(0.9); rv[c] != want {
			t.Errorf("runVar[%d] = %v, want %v", c, rv[c], want)
		}
		if want := 0.1 * float64(x[c]); math.Abs(float64(rm[c])-want) > 1e-6*math.Abs(want) {
			t.Errorf("runMean[%d] = %v, want %v", c, rm[c], want)
		}
	}
}

// A channel of a large batch must keep its statistics to float32 precision.
func TestBatchNormLargeBatchAccuracy(t *testing.T) {
	g := gpu.BNGeom{N: 256, C: 1, HW: 4096, Eps: 1e-5, Momentum: 1}
	r := rand.New(rand.NewPCG(3, 4))
	x := randVec(r, g.N*g.HW, 100, 0.01)
	want := refBatchNormTrain(g, x, []float32{1}, []float32{0}, []float32{0}, []float32{0}, nil)
	y := make(gpu.Host, len(x))
	rm, rv, sm, si := make(gpu.Host, 1), make(gpu.Host, 1), make(gpu.Host, 1), make(gpu.Host, 1)
	NewCPU().BatchNormTrain(g, y, gpu.Host(x), gpu.Host{1}, gpu.Host{0}, rm, rv, sm, si)
	closeTo(t, "mean", sm, want.mean, 0, 1e-7)
	closeTo(t, "invStd", si, want.invStd, 0, 1e-6)
	closeTo(t, "runVar", rv, want.runVar, 0, 1e-6)
}

func TestBatchNormShapeMismatchPanics(t *testing.T) {
	g := gpu.BNGeom{N: 2, C: 3, HW: 4, Eps: 1e-5, Momentum: 0.1}
	b := NewCPU()
	c3 := func() gpu.Host { return make(gpu.Host, 3) }
	cases := []struct {
		name string
		call func()
	}{
		{"x too short", func() {
			b.BatchNormTrain(g, make(gpu.Host, 23), make(gpu.Host, 23), c3(), c3(), c3(), c3(), c3(), c3())
		}},
		{"y differs", func() {
			b.BatchNormTrain(g, make(gpu.Host, 20), make(gpu.Host, 24), c3(), c3(), c3(), c3(), c3(), c3())
		}},
		{"gamma short", func() {
			b.BatchNormInfer(g, make(gpu.Host, 24), make(gpu.Host, 24), make(gpu.Host, 2), c3(), c3(), c3())
		}},
		{"dgamma short", func() {
			b.BatchNormBackward(g, nil, make(gpu.Host, 2), nil, make(gpu.Host, 24), make(gpu.Host, 24), c3(), c3(), c3())
		}},
		{"nil gamma", func() {
			b.BatchNormInfer(g, make(gpu.Host, 24), make(gpu.Host, 24), nil, c3(), c3(), c3())
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			tc.call()
		})
	}
}

// BenchmarkBatchNorm puts the kernels beside the naive float64 reference.
func BenchmarkBatchNorm(b *testing.B) {
	for _, g := range []gpu.BNGeom{
		{N: 32, C: 64, HW: 1, Eps: 1e-5, Momentum: 0.1},      // after a linear layer
		{N: 8, C: 32, HW: 56 * 56, Eps: 1e-5, Momentum: 0.1}, // a MobileNet stage
	} {
		n := g.N * g.C * g.HW
		r := rand.New(rand.NewPCG(1, 1))
		x, dy := randVec(r, n, 0, 1), randVec(r, n, 0, 1)
		gamma, beta := randVec(r, g.C, 1, 0.1), randVec(r, g.C, 0, 0.1)
		rm, rv, sm, si := make(gpu.Host, g.C), make(gpu.Host, g.C), make(gpu.Host, g.C), make(gpu.Host, g.C)
		y, dx, dg, db := make(gpu.Host, n), make(gpu.Host, n), make(gpu.Host, g.C), make(gpu.Host, g.C)
		cpu := NewCPU()
		size := fmt.Sprintf("N%d_C%d_HW%d", g.N, g.C, g.HW)
		b.Run("train/"+size, func(b *testing.B) {
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				cpu.BatchNormTrain(g, y, gpu.Host(x), gpu.Host(gamma), gpu.Host(beta), rm, rv, sm, si)
			}
		})
		b.Run("backward/"+size, func(b *testing.B) {
			b.SetBytes(int64(12 * n))
			for b.Loop() {
				cpu.BatchNormBackward(g, dx, dg, db, gpu.Host(dy), gpu.Host(x), gpu.Host(gamma), sm, si)
			}
		})
		b.Run("naive-train+backward/"+size, func(b *testing.B) {
			b.SetBytes(int64(20 * n))
			for b.Loop() {
				refBatchNormTrain(g, x, gamma, beta, rm, rv, dy)
			}
		})
	}
}
