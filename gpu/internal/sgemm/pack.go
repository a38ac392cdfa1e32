package sgemm

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
			for p := 0; p < kb; p++ {
				src := g.a[(pc+p)*g.lda+i0 : (pc+p)*g.lda+i0+rows]
				dp := d[p*mr : p*mr+rows]
				for i, v := range src {
					dp[i] = v
				}
			}
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
			for p := 0; p < kb; p++ {
				clear(d[p*mr+rows : (p+1)*mr])
			}
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
			// B is n×k: column j of the panel is a contiguous run of row j0+j.
			for j := 0; j < cols; j++ {
				src := g.b[(j0+j)*g.ldb+pc : (j0+j)*g.ldb+pc+kb]
				for p, v := range src {
					d[p*nr+j] = v
				}
			}
		} else {
			// B is k×n: step p of the panel is a contiguous run of row pc+p.
			for p := 0; p < kb; p++ {
				copy(d[p*nr:p*nr+cols], g.b[(pc+p)*g.ldb+j0:(pc+p)*g.ldb+j0+cols])
			}
		}
		if cols < nr {
			for p := 0; p < kb; p++ {
				clear(d[p*nr+cols : (p+1)*nr])
			}
		}
	}
	return dst
}
