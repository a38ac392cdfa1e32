package solver

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestMatMulGrad checks both operands' gradients against finite
// differences: a plain M×K by K×P product, one with a batch axis (two
// heads), and broadcast leading dims (B shared by the heads; each operand
// broadcast along one axis).
func TestMatMulGrad(t *testing.T) {
	for _, c := range []struct {
		a, b []int
	}{{[]int{3, 4}, []int{4, 2}}, {[]int{2, 3, 4}, []int{2, 4, 5}}, {[]int{2, 3, 4}, []int{1, 4, 5}},
		{[]int{2, 1, 3, 2}, []int{1, 3, 2, 4}}} {
		l := NewMatMul("mm", c.a, c.b)
		bad, err := gradCheck{Tol: 1e-2, Floor: 1e-2}.layer(l, []Shape{DimsShape(c.a), DimsShape(c.b)}, 2)
		report(t, "matmul", bad, err)
	}
}

// TestMatMulMatchesNaive compares the product with the definition's loops,
// for a batch of 2 samples of 3 products each.
func TestMatMulMatchesNaive(t *testing.T) {
	const N, H, M, K, P = 2, 3, 4, 5, 2
	be := cpu.NewCPU()
	l := NewMatMul("mm", []int{H, M, K}, []int{H, K, P})
	if _, err := l.Setup([]Shape{DimsShape([]int{H, M, K}), DimsShape([]int{H, K, P})}); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 8))
	a, b := make([]float32, N*H*M*K), make([]float32, N*H*K*P)
	uniform(a, r)
	uniform(b, r)
	y := be.Alloc(N * H * M * P)
	l.Forward(&Pass{B: be, N: N}, y, []gpu.Buffer{uploaded(be, a), uploaded(be, b)})
	got := download(be, y)
	for s := range N * H {
		for i := range M {
			for j := range P {
				var want float64
				for k := range K {
					want += float64(a[(s*M+i)*K+k]) * float64(b[(s*K+k)*P+j])
				}
				if g := got[(s*M+i)*P+j]; abs64(float64(g)-want) > 1e-5 {
					t.Fatalf("product %d [%d][%d] = %g, want %g", s, i, j, g, want)
				}
			}
		}
	}
}

// TestMatMulBroadcastMatchesNaive: leading dims 2×1 by 1×3 give 2×3
// products, product (i, j) multiplying A's i and B's j, as numpy's
// matmul does.
func TestMatMulBroadcastMatchesNaive(t *testing.T) {
	const N, M, K, P = 2, 3, 4, 2
	be := cpu.NewCPU()
	ad, bd := []int{2, 1, M, K}, []int{1, 3, K, P}
	l := NewMatMul("mm", ad, bd)
	out, err := l.Setup([]Shape{DimsShape(ad), DimsShape(bd)})
	if err != nil {
		t.Fatal(err)
	}
	if want := DimsShape([]int{2, 3, M, P}); out != want {
		t.Fatalf("output %v, want %v", out, want)
	}
	r := rand.New(rand.NewPCG(9, 10))
	a, b := make([]float32, N*2*M*K), make([]float32, N*3*K*P)
	uniform(a, r)
	uniform(b, r)
	y := be.Alloc(N * 6 * M * P)
	l.Forward(&Pass{B: be, N: N}, y, []gpu.Buffer{uploaded(be, a), uploaded(be, b)})
	got := download(be, y)
	for s := range N {
		for i := range 2 {
			for j := range 3 {
				pa, pb, po := s*2+i, s*3+j, (s*2+i)*3+j
				for m := range M {
					for q := range P {
						var want float64
						for k := range K {
							want += float64(a[(pa*M+m)*K+k]) * float64(b[(pb*K+k)*P+q])
						}
						if g := got[(po*M+m)*P+q]; abs64(float64(g)-want) > 1e-5 {
							t.Fatalf("product (%d, %d, %d) [%d][%d] = %g, want %g", s, i, j, m, q, g, want)
						}
					}
				}
			}
		}
	}
}

// TestMatMulRefusesShapes: operands that do not multiply are an error.
func TestMatMulRefusesShapes(t *testing.T) {
	for _, c := range [][2][]int{{{3, 4}, {5, 2}}, {{2, 3, 4}, {3, 4, 5}}, {{4}, {4}}, {{3, 4}, {2, 4, 5}}} {
		if _, err := NewMatMul("mm", c[0], c[1]).Setup([]Shape{DimsShape(c[0]), DimsShape(c[1])}); err == nil {
			t.Errorf("%v by %v: no error", c[0], c[1])
		}
	}
}

// BenchmarkMatMul times a training pass of attention's scores, Q·Kᵀ of 4
// heads of 64 steps by 16 dimensions, for a batch of 16: 64 small
// products a call, one Gemm each; "shared" broadcasts one Kᵀ over the
// four heads (its gradient summed over them).
func BenchmarkMatMul(b *testing.B) {
	const n, h, tt, d = 16, 4, 64, 16
	for _, c := range []struct {
		name string
		kh   int // Kᵀ's heads: h, or 1 broadcast
	}{{"heads", h}, {"shared", 1}} {
		b.Run(c.name, func(b *testing.B) {
			be := cpu.NewCPU()
			q, k := []int{h, tt, d}, []int{c.kh, d, tt}
			net, err := NewNet(be, DimsShape(q), []Node{
				{Layer: NewReshape("k", q)}, // a second input from the first: Kᵀ as data
				{Layer: NewSlice("kh", q, []int{0, 0, 0}, []int{1, 1, 1}, []int{c.kh, tt, d}), Inputs: []int{0}},
				{Layer: NewReshape("kt", k), Inputs: []int{1}},
				{Layer: NewMatMul("mm", q, k), Inputs: []int{0, 2}},
			})
			if err != nil {
				b.Fatal(err)
			}
			benchNet(b, net, n)
		})
	}
}
