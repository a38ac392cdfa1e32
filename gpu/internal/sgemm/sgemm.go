// Package sgemm is cotrain's single-precision matrix product for the CPU
// backend: C = alpha·op(A)·op(B) + beta·C on row-major matrices, blocked for
// the caches, with packed operands and micro-kernels in assembly (AVX-512 or
// AVX2+FMA on amd64, chosen at run time; NEON on arm64) or in Go (other
// architectures and the purego build tag).
//
// Caller's duties:
//  1. Give every goroutine that multiplies its own Thread (the zero value is
//     ready): it holds the pack buffers, which grow once and are then reused,
//     so a steady caller allocates nothing.
//  2. Call Thread.Gemm for a product on the calling goroutine alone, or
//     Thread.GemmParallel to let it use up to GOMAXPROCS threads of the
//     package's worker pool when the product is large enough to pay for it.
//  3. Use Thread.Parallel for other work split into independent parts (a
//     batch's samples); a Task's Run gets the executing thread's Thread for
//     its own products and scratch (Thread.Floats).
//
// Results are reproducible bit for bit on one machine: they depend neither on
// GOMAXPROCS nor on scheduling. Parallel products are split over blocks of
// rows and columns of C only, never over k, and the sum over k is cut into
// blocks at fixed points (every 256) and accumulated in increasing order with
// fused multiply-adds. The assembly families (AVX-512, AVX2 and NEON) all
// give the same bits, on any machine; the pure-Go family rounds every product
// on its own (no fused multiply-add, on every target), so it gives other bits,
// the same on every target.
package sgemm

import "fmt"

// args is one product's operands, as given to Gemm.
type args struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a, b, c        []float32
	lda, ldb, ldc  int
	pa             *PackedA // op(A) packed beforehand, or nil
}

// Gemm computes C = alpha·op(A)·op(B) + beta·C on the calling goroutine.
// Matrices are row-major: op(A) is m×k, op(B) k×n and C m×n; A is stored
// m×k (lda ≥ k), or k×m (lda ≥ m) when transA is set, and likewise B is
// n×k (ldb ≥ k) when transB is set, else k×n (ldb ≥ n); ldc ≥ n. When beta is
// 0, C is not read. Inconsistent sizes panic: they are the caller's bug.
func (t *Thread) Gemm(transA, transB bool, m, n, k int, alpha float32, a []float32, lda int, b []float32, ldb int, beta float32, c []float32, ldc int) {
	g := args{transA, transB, m, n, k, alpha, beta, a, b, c, lda, ldb, ldc, nil}
	if g.trivial() {
		return
	}
	t.rect(t.arch(), &g, 0, m, 0, n)
}

// check panics unless the slices and leading dimensions hold the matrices.
func (g *args) check() {
	g.checkA()
	g.checkBC()
}

func (g *args) checkA() {
	ra, ca := g.m, g.k
	if g.transA {
		ra, ca = g.k, g.m
	}
	switch {
	case g.m < 0 || g.n < 0 || g.k < 0:
		panic(fmt.Sprintf("sgemm: negative size %dx%dx%d", g.m, g.n, g.k))
	case !fits(len(g.a), ra, ca, g.lda):
		panic(fmt.Sprintf("sgemm: A of %d elements, lda %d cannot hold %dx%d", len(g.a), g.lda, ra, ca))
	}
}

func (g *args) checkBC() {
	rb, cb := g.k, g.n
	if g.transB {
		rb, cb = g.n, g.k
	}
	switch {
	case g.m < 0 || g.n < 0 || g.k < 0:
		panic(fmt.Sprintf("sgemm: negative size %dx%dx%d", g.m, g.n, g.k))
	case !fits(len(g.b), rb, cb, g.ldb):
		panic(fmt.Sprintf("sgemm: B of %d elements, ldb %d cannot hold %dx%d", len(g.b), g.ldb, rb, cb))
	case !fits(len(g.c), g.m, g.n, g.ldc):
		panic(fmt.Sprintf("sgemm: C of %d elements, ldc %d cannot hold %dx%d", len(g.c), g.ldc, g.m, g.n))
	}
}

// fits reports whether n elements with leading dimension ld hold rows×cols.
func fits(n, rows, cols, ld int) bool {
	if rows == 0 || cols == 0 {
		return ld >= cols
	}
	return ld >= cols && n >= (rows-1)*ld+cols
}

// trivial checks g and does the products that need no kernel: an empty C,
// and k = 0 or alpha = 0, where C = beta·C (zeroed, not read, when beta is 0).
func (g *args) trivial() bool {
	if g.pa != nil {
		g.checkBC()
	} else {
		g.check()
	}
	if g.m == 0 || g.n == 0 {
		return true
	}
	if g.k > 0 && g.alpha != 0 {
		return false
	}
	for i := 0; i < g.m; i++ {
		row := g.c[i*g.ldc : i*g.ldc+g.n]
		if g.beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= g.beta
		}
	}
	return true
}

// rect computes the rows [i0, i1) and columns [j0, j1) of C with family ar:
// the loops of Goto and van de Geijn's algorithm. Each kc-deep slice of op(B)'s
// columns is packed once into nr-wide micro-panels, each mc×kc block of op(A)
// into mr-high micro-panels, and the micro-kernel runs over every pair, the A
// micro-panel staying in L1 while B's panel streams from L2.
func (t *Thread) rect(ar *arch, g *args, i0, i1, j0, j1 int) {
	for jc := j0; jc < j1; jc += ar.nc {
		nc := min(ar.nc, j1-jc)
		for pc := 0; pc < g.k; pc += kc {
			kb := min(kc, g.k-pc)
			beta := g.beta
			if pc > 0 {
				beta = 1
			}
			bp := t.packB(ar, g, pc, kb, jc, nc)
			for ic := i0; ic < i1; ic += ar.mc {
				mc := min(ar.mc, i1-ic)
				var ap []float32
				if g.pa != nil {
					ap = g.pa.block(pc, ic, kb)
				} else {
					ap = t.packA(ar, g, ic, mc, pc, kb)
				}
				t.macro(ar, g, ap, bp, ic, mc, jc, nc, kb, beta)
			}
		}
	}
}

// macro runs the micro-kernel over an mc×nc block of C from packed panels.
// A tile narrower than its kernel's vectors goes through the tile buffer, so
// that the kernel never writes outside C; its arithmetic is the same.
func (t *Thread) macro(ar *arch, g *args, ap, bp []float32, ic, mc, jc, nc, kb int, beta float32) {
	alpha, ldc := g.alpha, g.ldc
	for ir := 0; ir < mc; ir += ar.mr {
		rows := min(ar.mr, mc-ir)
		a := &ap[ir*kb]
		for jr := 0; jr < nc; jr += ar.nr {
			cols := min(ar.nr, nc-jr)
			vecs := (cols + ar.vl - 1) / ar.vl
			kern := ar.kern[rows-1][vecs-1]
			b := &bp[jr*kb]
			ci := (ic+ir)*ldc + jc + jr
			if cols == vecs*ar.vl {
				kern(kb, a, b, &g.c[ci], ldc, alpha, beta)
				continue
			}
			tile := t.tile[:]
			if beta != 0 {
				for i := 0; i < rows; i++ {
					copy(tile[i*ar.nr:i*ar.nr+cols], g.c[ci+i*ldc:ci+i*ldc+cols])
				}
			}
			kern(kb, a, b, &tile[0], ar.nr, alpha, beta)
			for i := 0; i < rows; i++ {
				copy(g.c[ci+i*ldc:ci+i*ldc+cols], tile[i*ar.nr:i*ar.nr+cols])
			}
		}
	}
}

// PackedA is op(A) packed once for several products with the same A and
// different B: a convolution's filter over a batch. Pack it, then call
// Thread.GemmPacked, from any number of goroutines at once (it is only read).
// A product through PackedA has the bits of the same product through Gemm.
type PackedA struct {
	ar     *arch
	m, k   int
	stride int // floats per kc-deep block: m rounded up to mr, times kc
	data   []float32
}

// Pack packs op(A) (m×k; stored as for Gemm) with the family Gemm uses,
// reusing p's memory when large enough. p keeps no reference to a.
func (p *PackedA) Pack(transA bool, m, k int, a []float32, lda int) {
	p.pack(archs[0], transA, m, k, a, lda)
}

// pack is Pack for family ar.
func (p *PackedA) pack(ar *arch, transA bool, m, k int, a []float32, lda int) {
	g := args{transA: transA, m: m, k: k, a: a, lda: lda}
	g.checkA()
	mp := (m + ar.mr - 1) / ar.mr * ar.mr
	p.ar, p.m, p.k, p.stride = ar, m, k, mp*kc
	blocks := (k + kc - 1) / kc
	p.data = grow(p.data, blocks*p.stride)
	var t Thread
	for pc := 0; pc < k; pc += kc {
		kb := min(kc, k-pc)
		// packA packs into t's buffer; pack the whole of m as one block.
		t.packedA = p.data[pc/kc*p.stride : pc/kc*p.stride+mp*kb]
		t.packA(ar, &g, 0, m, pc, kb)
	}
}

// block returns the packed micro-panels of rows [ic, m) at depth block pc.
func (p *PackedA) block(pc, ic, kb int) []float32 {
	off := pc/kc*p.stride + ic*kb
	return p.data[off:]
}

// GemmPacked computes C = alpha·op(A)·op(B) + beta·C on the calling
// goroutine with op(A) from pa (m×k as packed); B and C are as for Gemm.
func (t *Thread) GemmPacked(pa *PackedA, transB bool, n int, alpha float32, b []float32, ldb int, beta float32, c []float32, ldc int) {
	if pa.ar == nil {
		panic("sgemm: GemmPacked with an unpacked PackedA")
	}
	g := args{transB: transB, m: pa.m, n: n, k: pa.k, alpha: alpha, beta: beta, b: b, c: c, ldb: ldb, ldc: ldc, pa: pa}
	if g.trivial() {
		return
	}
	t.rect(pa.ar, &g, 0, pa.m, 0, n)
}
