package sgemm

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
	gblas "gonum.org/v1/gonum/blas/gonum"
)

// gflops reports 2mnk per product as GFLOPS.
func gflops(b *testing.B, m, n, k int) {
	b.ReportMetric(2*float64(m)*float64(n)*float64(k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
}

// benchShape times one product shape with the naive loop (small shapes
// only), gonum's Sgemm, every family of this package on one thread
// (avx512/, avx2/, neon/, go/), and the package's entry point as the CPU
// backend calls it (sgemm/: GemmParallel with the best family, on GOMAXPROCS
// threads; compare -cpu 1,2).
func benchShape(b *testing.B, name string, tA, tB bool, m, n, k int) {
	r := rand.New(rand.NewPCG(2, 2))
	p := newProblem(r, tA, tB, m, n, k, 1, 0, 0)
	if m*n*k <= 256*256*256 {
		b.Run("naive/"+name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				naive(tA, tB, m, n, k, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
			}
			gflops(b, m, n, k)
		})
	}
	b.Run("gonum/"+name, func(b *testing.B) {
		ta, tb := blas.NoTrans, blas.NoTrans
		if tA {
			ta = blas.Trans
		}
		if tB {
			tb = blas.Trans
		}
		var impl gblas.Implementation
		for i := 0; i < b.N; i++ {
			impl.Sgemm(ta, tb, m, n, k, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
		}
		gflops(b, m, n, k)
	})
	for _, ar := range archs {
		if ar == goArch && m*n*k > 256*256*256 {
			continue
		}
		b.Run(ar.name+"/"+name, func(b *testing.B) {
			var th Thread
			g := args{tA, tB, m, n, k, 1, 0, p.a, p.b, p.c, p.lda, p.ldb, p.ldc, nil}
			for i := 0; i < b.N; i++ {
				th.rect(ar, &g, 0, m, 0, n)
			}
			gflops(b, m, n, k)
		})
	}
	b.Run("sgemm/"+name, func(b *testing.B) {
		var th Thread
		for i := 0; i < b.N; i++ {
			th.GemmParallel(tA, tB, m, n, k, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc)
		}
		gflops(b, m, n, k)
	})
}

// BenchmarkSquare: square products from 64 to 1024, no transposes.
// scripts/bench_sgemm.sh compares the best family with OpenBLAS.
func BenchmarkSquare(b *testing.B) {
	for _, n := range []int{64, 128, 256, 512, 1024} {
		benchShape(b, fmt.Sprint(n), false, false, n, n, n)
	}
}

// BenchmarkLeNetCaffe: the products of one lenet-caffe training step at
// batch 64 (per sample for the convolutions), as gpu's CPU backend issues
// them: name m×n×k and transposes.
func BenchmarkLeNetCaffe(b *testing.B) {
	for _, s := range []struct {
		name    string
		tA, tB  bool
		m, n, k int
	}{
		{"conv1.fwd", false, false, 20, 576, 25},
		{"conv1.dw", false, true, 20, 25, 576},
		{"conv2.fwd", false, false, 50, 64, 500},
		{"conv2.dx", true, false, 500, 64, 50},
		{"conv2.dw", false, true, 50, 500, 64},
		{"ip1.fwd", false, true, 64, 500, 800},
		{"ip1.dx", false, false, 64, 800, 500},
		{"ip1.dw", true, false, 500, 800, 64},
		{"ip2.fwd", false, true, 64, 10, 500},
	} {
		benchShape(b, fmt.Sprintf("%s/%dx%dx%d", s.name, s.m, s.n, s.k), s.tA, s.tB, s.m, s.n, s.k)
	}
}
