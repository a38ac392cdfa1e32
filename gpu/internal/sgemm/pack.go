package sgemm

import "github.com/cotrain/cotrain/gpu/internal/vec"

// Packing copies a block of op(A) or op(B) into the order the micro-kernel
// reads it, so that the kernel's loads are contiguous whatever the operands'
// layout: transposition costs nothing beyond the copy. Panels are padded
// with zeros to whole micro-panels; the padding's products are never stored.

// grow returns s resliced to n elements, reallocating only when it is too
// small (pack buffers grow to the largest block once, then are reused).
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// packA packs rows [ic, ic+mc) and depths [pc, pc+kb) of op(A) into
// micro-panels of ar.mr rows: panel r holds element (i, p) at r·mr·kb + p·mr + i.
func (t *Thread) packA(ar *arch, g *args, ic, mc, pc, kb int) []float32 {
	mr := ar.mr
	panels := (mc + mr - 1) / mr
	t.packedA = grow(t.packedA, panels*mr*kb)
	dst := t.packedA
	for r := 0; r < panels; r++ {
		rows := min(mr, mc-r*mr)
		d := dst[r*mr*kb : (r+1)*mr*kb]
		i0 := ic + r*mr
		if g.transA {
			// A is k×m: step p of the panel is a contiguous run of row pc+p.
			vec.CopyRows(d, mr, g.a[pc*g.lda+i0:], g.lda, kb, rows)
		} else if rows == 6 && mr == 6 {
			packRows6(d, g.a[i0*g.lda+pc:], g.lda, kb)
		} else {
			// A is m×k: row i of the panel is a contiguous run, scattered
			// with stride mr.
			for i := 0; i < rows; i++ {
				src := g.a[(i0+i)*g.lda+pc : (i0+i)*g.lda+pc+kb]
				for p, v := range src {
					d[p*mr+i] = v
				}
			}
		}
		if rows < mr {
			vec.ZeroRows(d[rows:], mr, kb, mr-rows)
		}
	}
	return dst
}

// packB packs depths [pc, pc+kb) and columns [jc, jc+nc) of op(B) into
// micro-panels of ar.nr columns: panel s holds element (p, j) at
// s·nr·kb + p·nr + j.
func (t *Thread) packB(ar *arch, g *args, pc, kb, jc, nc int) []float32 {
	nr := ar.nr
	panels := (nc + nr - 1) / nr
	t.packedB = grow(t.packedB, panels*nr*kb)
	dst := t.packedB
	for s := 0; s < panels; s++ {
		cols := min(nr, nc-s*nr)
		d := dst[s*nr*kb : (s+1)*nr*kb]
		j0 := jc + s*nr
		if g.transB {
			// B is n×k: column j of the panel is a contiguous run of row
			// j0+j. Eight rows at a time make each step one 32-byte write.
			j := 0
			for ; j+8 <= cols; j += 8 {
				vec.Transpose8(d[j:], nr, g.b[(j0+j)*g.ldb+pc:], g.ldb, kb)
			}
			for ; j < cols; j++ {
				src := g.b[(j0+j)*g.ldb+pc : (j0+j)*g.ldb+pc+kb]
				for p, v := range src {
					d[p*nr+j] = v
				}
			}
		} else {
			// B is k×n: step p of the panel is a contiguous run of row pc+p.
			vec.CopyRows(d, nr, g.b[pc*g.ldb+j0:], g.ldb, kb, cols)
		}
		if cols < nr {
			vec.ZeroRows(d[cols:], nr, kb, nr-cols)
		}
	}
	return dst
}

// packRows6 interleaves six rows of src (ld apart, kb long) into d:
// d[6p+i] = row i[p]. It is packA's full AVX panel of an untransposed A.
func packRows6(d, src []float32, ld, kb int) {
	r0 := src[:kb]
	r1 := src[ld : ld+kb]
	r2 := src[2*ld : 2*ld+kb]
	r3 := src[3*ld : 3*ld+kb]
	r4 := src[4*ld : 4*ld+kb]
	r5 := src[5*ld : 5*ld+kb]
	for p, v := range r0 {
		q := d[6*p : 6*p+6 : 6*p+6]
		q[0], q[1], q[2], q[3], q[4], q[5] = v, r1[p], r2[p], r3[p], r4[p], r5[p]
	}
}
