package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// naiveGemm is the reference: the textbook triple loop in float64.
func naiveGemm(transA, transB bool, m, n, k int, alpha float32, a, b []float32, beta float32, c []float32) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				av, bv := a[i*k+p], b[p*n+j]
				if transA {
					av = a[p*m+i]
				}
				if transB {
					bv = b[j*k+p]
				}
				s += float64(av) * float64(bv)
			}
			c[i*n+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*n+j]))
		}
	}
}

func TestGemmAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	b := NewCPU()
	for _, sz := range [][3]int{{1, 1, 1}, {3, 5, 7}, {64, 64, 64}, {65, 33, 129}, {10, 200, 3}, {130, 70, 300}} {
		m, n, k := sz[0], sz[1], sz[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}} {
				name := fmt.Sprintf("%dx%dx%d/tA=%v,tB=%v/alpha=%v,beta=%v", m, n, k, tr[0], tr[1], ab[0], ab[1])
				a, bb, c := gputest.Rand(r, m*k), gputest.Rand(r, k*n), gputest.Rand(r, m*n)
				want := append([]float32(nil), c...)
				naiveGemm(tr[0], tr[1], m, n, k, ab[0], a, bb, ab[1], want)
				b.Gemm(tr[0], tr[1], m, n, k, ab[0], gpu.Host(a), gpu.Host(bb), ab[1], gpu.Host(c))
				for i := range c {
					// Tolerance: float32 accumulation over k terms of unit size.
					if d := math.Abs(float64(c[i] - want[i])); d > 1e-5*float64(k)+1e-5*math.Abs(float64(want[i])) {
						t.Fatalf("%s: element %d = %v, want %v", name, i, c[i], want[i])
					}
				}
			}
		}
	}
}

func TestGemmZeroSizes(t *testing.T) {
	b := NewCPU()
	c := gpu.Host{1, 2, 3, 4}
	b.Gemm(false, false, 2, 2, 0, 1, gpu.Host{}, gpu.Host{}, 0.5, c)
	if c[0] != 0.5 || c[3] != 2 {
		t.Errorf("k=0 must scale C by beta: %v", c)
	}
	b.Gemm(false, false, 0, 2, 3, 1, gpu.Host{}, gpu.Host(make([]float32, 6)), 0, gpu.Host{}) // no panic
}

// BenchmarkSgemm puts the naive loop and the backend side by side over
// square sizes; GFLOPS is reported as a metric (2mnk per product).
func BenchmarkSgemm(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{64, 128, 256, 512, 1024} {
		a, bb, c := gputest.Rand(r, n*n), gputest.Rand(r, n*n), make([]float32, n*n)
		flops := 2 * float64(n) * float64(n) * float64(n)
		if n <= 256 {
			b.Run(fmt.Sprintf("naive/%d", n), func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					naiveGemm(false, false, n, n, n, 1, a, bb, 0, c)
				}
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
		b.Run(fmt.Sprintf("cpu/%d", n), func(b *testing.B) {
			be := NewCPU()
			ha, hb, hc := gpu.Host(a), gpu.Host(bb), gpu.Host(c)
			for i := 0; i < b.N; i++ {
				be.Gemm(false, false, n, n, n, 1, ha, hb, 0, hc)
			}
			b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
		})
	}
}
