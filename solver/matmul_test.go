package solver

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// TestMatMulGrad checks both operands' gradients against finite
// differences: a plain M×K by K×P product and one with a batch axis (two
// heads).
func TestMatMulGrad(t *testing.T) {
	for _, c := range []struct {
		a, b []int
	}{{[]int{3, 4}, []int{4, 2}}, {[]int{2, 3, 4}, []int{2, 4, 5}}} {
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
// products a call, one Gemm each.
func BenchmarkMatMul(b *testing.B) {
	be := cpu.NewCPU()
	const n, h, tt, d = 16, 4, 64, 16
	q, k := []int{h, tt, d}, []int{h, d, tt}
	net, err := NewNet(be, DimsShape(q), []Node{
		{Layer: NewReshape("k", q)}, // a second input from the first: Kᵀ as data of the same size
		{Layer: NewReshape("kt", k), Inputs: []int{-1}},
		{Layer: NewMatMul("mm", q, k), Inputs: []int{0, 1}},
	})
	if err != nil {
		b.Fatal(err)
	}
	benchNet(b, net, n)
}
