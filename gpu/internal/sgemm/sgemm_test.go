package sgemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// naive is the reference: the textbook triple loop in float64 over strided
// row-major storage.
func naive(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			var s float64
			for p := 0; p < k; p++ {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				av, bv := a[ai], b[bi]
				s += float64(av) * float64(bv)
			}
			if beta == 0 {
				c[i*ldc+j] = float32(float64(alpha) * s)
			} else {
				c[i*ldc+j] = float32(float64(alpha)*s + float64(beta)*float64(c[i*ldc+j]))
			}
		}
	}
}

// problem is one random product with padded leading dimensions.
type problem struct {
	transA, transB bool
	m, n, k        int
	lda, ldb, ldc  int
	alpha, beta    float32
	a, b, c        []float32
}

func newProblem(r *rand.Rand, transA, transB bool, m, n, k int, alpha, beta float32, pad int) *problem {
	p := &problem{transA: transA, transB: transB, m: m, n: n, k: k, alpha: alpha, beta: beta}
	ra, ca := m, k
	if transA {
		ra, ca = k, m
	}
	rb, cb := k, n
	if transB {
		rb, cb = n, k
	}
	p.lda, p.ldb, p.ldc = ca+pad, cb+pad, n+pad
	p.a, p.b, p.c = randSlice(r, ra*p.lda), randSlice(r, rb*p.ldb), randSlice(r, m*p.ldc)
	if beta == 0 {
		for i := range p.c {
			p.c[i] = float32(math.NaN())
		}
	}
	return p
}

func (p *problem) want() []float32 {
	w := slices.Clone(p.c)
	naive(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, w, p.ldc)
	return w
}

// compare checks got against the float64 reference: float32 accumulation over
// k terms of unit size, and leaves C's padding columns untouched.
func (p *problem) compare(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if i%p.ldc >= p.n {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: wrote padding element %d: %v", name, i, g)
			}
			continue
		}
		if !(math.Abs(g-w) <= 2e-6*float64(p.k+1)*(1+math.Abs(float64(p.alpha)))+1e-6*math.Abs(w)) {
			t.Fatalf("%s: C(%d,%d) = %v, want %v", name, i/p.ldc, i%p.ldc, g, w)
		}
	}
}

var transposes = [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}}

// TestGemmAgainstNaive covers every family on sizes around its tiles and
// blocks (edge tiles in both directions, k across the kc = 256 cut), all
// four transpose combinations, alpha and beta including beta = 0 over a C of
// NaN, and k = 0 and 1.
func TestGemmAgainstNaive(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	sizes := [][3]int{{1, 1, 1}, {1, 1, 0}, {3, 5, 0}, {7, 9, 1}, {6, 64, 3}, {13, 70, 33}, {65, 33, 129},
		{10, 200, 3}, {130, 17, 300}, {150, 530, 260}, {5, 1, 513}}
	for _, ar := range archs {
		func() {
			th := Thread{fam: ar}
			for _, sz := range sizes {
				m, n, k := sz[0], sz[1], sz[2]
				// The pure-Go family, and -short (the arm64 run under qemu in
				// CI), skip the largest products.
				if m*n*k > 1e6 && (ar == goArch || testing.Short()) {
					continue
				}
				for _, tr := range transposes {
					for _, ab := range [][2]float32{{1, 0}, {0.5, 1}, {-2, 0.25}, {0, 0.5}} {
						for _, pad := range []int{0, 3} {
							name := fmt.Sprintf("%s/%dx%dx%d/tA=%v,tB=%v/alpha=%v,beta=%v/pad=%d", ar.name, m, n, k, tr[0], tr[1], ab[0], ab[1], pad)
							p := newProblem(r, tr[0], tr[1], m, n, k, ab[0], ab[1], pad)
							want := p.want()
							th.Gemm(p.transA, p.transB, m, n, k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, p.c, p.ldc)
							p.compare(t, name, p.c, want)
						}
					}
				}
			}
		}()
	}
}

// TestFamiliesAgree checks that the assembly families round alike: with the
// same kc cut and fused multiply-adds in the same order, AVX-512 and AVX2
// give the same bits, so a node's weights do not depend on which it has.
func TestFamiliesAgree(t *testing.T) {
	var asm []*arch
	for _, ar := range archs {
		if ar != goArch {
			asm = append(asm, ar)
		}
	}
	if len(asm) < 2 {
		t.Skipf("%d assembly families on this machine", len(asm))
	}
	r := rand.New(rand.NewPCG(9, 9))
	for _, tr := range transposes {
		p := newProblem(r, tr[0], tr[1], 77, 150, 600, 0.5, 0.25, 1)
		var ref []float32
		for _, ar := range asm {
			c := slices.Clone(p.c)
			th := Thread{fam: ar}
			th.Gemm(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, c, p.ldc)
			if ref == nil {
				ref = c
			} else if !slices.Equal(ref, c) {
				t.Errorf("tA=%v,tB=%v: %s differs from %s", tr[0], tr[1], ar.name, asm[0].name)
			}
		}
	}
}

// TestParallelSameBits checks the determinism contract: GemmParallel gives
// Gemm's bits at every GOMAXPROCS, on shapes split along n and along m.
func TestParallelSameBits(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	r := rand.New(rand.NewPCG(5, 5))
	sizes := [][3]int{{300, 700, 300}, {500, 40, 600}, {64, 500, 800}}
	if testing.Short() {
		sizes = [][3]int{{100, 200, 300}, {200, 30, 300}}
	}
	for _, sz := range sizes {
		for _, tr := range transposes {
			p := newProblem(r, tr[0], tr[1], sz[0], sz[1], sz[2], 1, 1, 2)
			var th Thread
			ref := slices.Clone(p.c)
			th.Gemm(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, ref, p.ldc)
			for _, procs := range []int{1, 2, 3, 8} {
				runtime.GOMAXPROCS(procs)
				c := slices.Clone(p.c)
				th.GemmParallel(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, c, p.ldc)
				if !slices.Equal(ref, c) {
					t.Fatalf("%v tA=%v,tB=%v: GOMAXPROCS=%d differs from the serial product", sz, tr[0], tr[1], procs)
				}
			}
		}
	}
}

// TestGemmAllocatesNothing: after the first call has grown the pack
// buffers, neither Gemm nor GemmParallel allocates.
func TestGemmAllocatesNothing(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	runtime.GOMAXPROCS(2)
	r := rand.New(rand.NewPCG(6, 6))
	p := newProblem(r, false, true, 200, 300, 400, 1, 0, 0)
	var th Thread
	serial := func() { th.Gemm(false, true, 200, 300, 400, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc) }
	parallel := func() { th.GemmParallel(false, true, 200, 300, 400, 1, p.a, p.lda, p.b, p.ldb, 0, p.c, p.ldc) }
	for name, f := range map[string]func(){"Gemm": serial, "GemmParallel": parallel} {
		f()
		if n := testing.AllocsPerRun(10, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}

// sumTask is a Task for the pool tests: part i writes out[i].
type sumTask struct{ out []int }

func (s *sumTask) Run(_ *Thread, i int) { s.out[i] = i * i }

func TestParallelRunsEveryPartOnce(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	var th Thread
	for _, procs := range []int{1, 2, 4} {
		runtime.GOMAXPROCS(procs)
		for _, n := range []int{0, 1, 2, 3, 17, 100} {
			task := &sumTask{out: make([]int, n)}
			for i := range task.out {
				task.out[i] = -1
			}
			th.Parallel(n, task)
			for i, v := range task.out {
				if v != i*i {
					t.Fatalf("GOMAXPROCS=%d n=%d: part %d = %d", procs, n, i, v)
				}
			}
		}
	}
}

func TestGemmBadSizesPanic(t *testing.T) {
	var th Thread
	for _, tc := range []struct {
		name string
		f    func()
		want string
	}{
		{"short A", func() {
			th.Gemm(false, false, 2, 2, 2, 1, make([]float32, 3), 2, make([]float32, 4), 2, 0, make([]float32, 4), 2)
		}, "A of 3"},
		{"small ldb", func() {
			th.Gemm(false, true, 2, 2, 3, 1, make([]float32, 6), 3, make([]float32, 6), 2, 0, make([]float32, 4), 2)
		}, "ldb 2"},
		{"short C", func() {
			th.Gemm(false, false, 2, 2, 2, 1, make([]float32, 4), 2, make([]float32, 4), 2, 0, make([]float32, 3), 2)
		}, "C of 3"},
		{"negative", func() { th.Gemm(false, false, -1, 2, 2, 1, nil, 2, nil, 2, 0, nil, 2) }, "negative"},
	} {
		func() {
			defer func() {
				msg := fmt.Sprint(recover())
				if !strings.HasPrefix(msg, "sgemm: ") || !strings.Contains(msg, tc.want) {
					t.Errorf("%s: panic %q, want one naming %q", tc.name, msg, tc.want)
				}
			}()
			tc.f()
		}()
	}
}

// TestGemmPackedSameBits: a product through PackedA has Gemm's bits, for
// both layouts of A, across the kc cut, and PackedA can be repacked smaller.
func TestGemmPackedSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	var pa PackedA
	var th Thread
	for _, sz := range [][3]int{{50, 64, 500}, {7, 33, 3}, {200, 70, 40}} {
		for _, tr := range transposes {
			p := newProblem(r, tr[0], tr[1], sz[0], sz[1], sz[2], 0.5, 1, 1)
			ref := slices.Clone(p.c)
			th.Gemm(p.transA, p.transB, p.m, p.n, p.k, p.alpha, p.a, p.lda, p.b, p.ldb, p.beta, ref, p.ldc)
			pa.Pack(p.transA, p.m, p.k, p.a, p.lda)
			th.GemmPacked(&pa, p.transB, p.n, p.alpha, p.b, p.ldb, p.beta, p.c, p.ldc)
			if !slices.Equal(ref, p.c) {
				t.Fatalf("%v tA=%v,tB=%v: GemmPacked differs from Gemm", sz, tr[0], tr[1])
			}
		}
	}
}
