//go:build opencl

package opencl

import "github.com/cotrain/cotrain/gpu"

// im2col and GEMM: the convolution every geometry can run (nn.go says
// how a batch becomes a few large products), and what a layer runs when
// no algorithm of conv_algo.go takes it.

// im2col is the im2col-and-GEMM convolution of one backend: its launch
// shapes and the scratch buffers of its products' operands. The backend
// launches its kernels and GEMMs; the workspace (the column matrices) is
// the caller's (ConvWorkspace).
type im2col struct {
	o *OpenCL
	// winTaps is about how many elements one item of im2col_win copies:
	// a block of max(1, winTaps/S) filter rows (all R of a 3×3 or 5×5
	// filter, two rows of AlexNet's 11×11). More per item divides less
	// often; fewer gives more items (parallelism) to small batches. The
	// same bits.
	winTaps int
	// copyRows copies batch tensors whose planes are not a multiple of 4
	// long into plain matrices before a GEMM reads them (plainRows);
	// false reads them through segmented addressing. The same bits.
	copyRows bool

	rowsA *clMem // batch tensors made plain matrices (plainRows), for operand A
	rowsB *clMem // and for operand B
	wT    *clMem // a transposed filter matrix (backwardData)
}

// newIm2col returns o's im2col convolution: 32 taps an item, rows copied.
func newIm2col(o *OpenCL) *im2col { return &im2col{o: o, winTaps: 32, copyRows: true} }

// expand writes the column matrix of cnt samples of one group at col[coloff:]:
// a block of filter rows at one column per item (im2col_win), or one item
// per element (im2col) when the matrix has fewer than 32 columns, too few
// for a work-group.
func (c *im2col) expand(g *gpu.ConvGeom, rows, cnt, ohw int, col *clMem, coloff int, x *clMem, xoff int) {
	o := c.o
	args := append([]any{col, coloff, x, xoff}, colArgs(*g, cnt)...)
	if cnt*ohw >= 32 {
		rb := min(g.R, max(1, c.winTaps/g.S))
		o.runPlanes(kIm2colWin, cnt*ohw, g.C/g.GroupCount(), (g.R+rb-1)/rb, append(args, rb)...)
		return
	}
	o.run1(kIm2col, rows*cnt*ohw, args...)
}

// col2im sets dx (cnt samples of one group, at dxoff) from the column matrix
// at col[coloff:]: over a sample's group per grid row (col2im_planes, _s1
// for stride 1) when it has at least 32 elements, else one item per
// element.
func (c *im2col) col2im(g *gpu.ConvGeom, cnt int, dx *clMem, dxoff int, col *clMem, coloff int) {
	o := c.o
	args := append([]any{dx, dxoff, col, coloff}, colArgs(*g, cnt)...)
	per := g.C / g.GroupCount() * g.H * g.W
	if per < 32 {
		o.run1(kCol2im, cnt*per, args...)
		return
	}
	id := kCol2imPlanes
	if g.StrideH == 1 && g.StrideW == 1 {
		id = kCol2imPlanesS1
	}
	o.runPlanes(id, per, cnt, 1, args...)
}

// colArgs are the arguments of im2col and col2im after the two buffers:
// samples, sample stride and geometry.
func colArgs(g gpu.ConvGeom, cnt int) []any {
	return []any{cnt, g.C * g.H * g.W, g.C / g.GroupCount(), g.H, g.W, g.R, g.S, g.StrideH, g.StrideW, g.PadH, g.PadW, g.OH, g.OW}
}

// plainRows is batchMat as a plain matrix: when the channels' planes of
// hw positions are not whole float4 groups (hw%4 ≠ 0: AlexNet's 55², 27²
// and 13² planes, MobileNet's 7²) and the matrix spans several samples,
// every load of the segmented matrix is 4 scalar loads, each with the
// segment's division; copying the rows×(cnt·hw) matrix into scratch s once
// (a plain copy: the product's bits do not change) lets the GEMM read it as
// float4 groups without divisions. Only for operands a GEMM reads.
func (c *im2col) plainRows(s **clMem, b *clBuf, n0, cnt, ch, rows, chans, hw int) mat {
	if !c.copyRows || cnt == 1 || hw%4 == 0 {
		return batchMat(b, n0, cnt, ch, chans, hw)
	}
	o := c.o
	dst := o.scratch(s, rows*cnt*hw)
	o.runPlanes(kRowsPlain, cnt*hw, rows, 1, dst, b.m, b.off+(n0*chans+ch)*hw, cnt, chans, hw)
	return plainMat(dst, 0, cnt*hw)
}

// chunkCols is the column matrix (rows × cnt·OH·OW) of samples [n0,
// n0+cnt) and group gi, as the forward and the filter gradient read it: x
// itself for a pointwise convolution, the kept matrix's columns, or im2col
// into the workspace col.
func (c *im2col) chunkCols(g *gpu.ConvGeom, xs, col *clBuf, kept bool, n0, cnt, gi int) mat {
	cg, rows, ohw := g.C/g.GroupCount(), g.ColRows(), g.OH*g.OW
	switch {
	case g.Pointwise():
		return c.plainRows(&c.rowsB, xs, n0, cnt, gi*cg, cg, g.C, ohw)
	case kept:
		return plainMat(col.m, col.off+gi*rows*g.N*ohw+n0*ohw, g.N*ohw)
	default:
		c.expand(g, rows, cnt, ohw, col.m, col.off, xs.m, xs.off+(n0*g.C+gi*cg)*g.H*g.W)
		return plainMat(col.m, col.off, cnt*ohw)
	}
}

// forward runs the products of a convolution's forward (not depthwise)
// in chunks of nb samples, adding the bias bs (nil: none) and applying the
// activation act (0 none, 1 ReLU, 2 ReLU6): in the GEMMs' epilogue where
// it may run (epilogueOn), else in a bias_act pass after them. Unless
// kept, each chunk and group is expanded into col in turn; kept
// (ConvForwardKeep), col receives every group's matrix of the whole batch
// (group gi's at gi·rows·N·OH·OW) and each chunk's product reads its
// columns there: the same products, so the same bits.
func (c *im2col) forward(g *gpu.ConvGeom, ys, xs, wsl, bs, col *clBuf, nb int, kept bool, act int) {
	o := c.o
	grp := g.GroupCount()
	cg, kg, rows, ohw := g.C/grp, g.K/grp, g.ColRows(), g.OH*g.OW
	if kept {
		for gi := 0; gi < grp; gi++ {
			c.expand(g, rows, g.N, ohw, col.m, col.off+gi*rows*g.N*ohw, xs.m, xs.off+gi*cg*g.H*g.W)
		}
	}
	epi := o.epilogueOn()
	for n0 := 0; n0 < g.N; n0 += nb {
		cnt := min(nb, g.N-n0)
		for gi := 0; gi < grp; gi++ {
			var e epilogue
			if epi {
				e.act = act
				if bs != nil { // row r of group gi's product is output channel gi·kg + r
					e.bias, e.off = bs.m, bs.off+gi*kg
				}
			}
			src := c.chunkCols(g, xs, col, kept, n0, cnt, gi)
			o.gemmEpi(false, false, kg, cnt*ohw, rows, 1, plainMat(wsl.m, wsl.off+gi*kg*rows, rows), src,
				0, batchMat(ys, n0, cnt, gi*kg, g.K, ohw), e)
		}
	}
	if !epi {
		o.biasAct(ys, bs, g.N, g.K, ohw, act)
	}
}

// backwardData sets dx from dy and w (not depthwise) in chunks of nb
// samples: a pointwise convolution's product writes dx directly; others
// multiply by the transposed filters into col, then col2im.
func (c *im2col) backwardData(g *gpu.ConvGeom, dxs, dys, wsl, col *clBuf, nb int) {
	o := c.o
	grp := g.GroupCount()
	cg, kg, rows, ohw := g.C/grp, g.K/grp, g.ColRows(), g.OH*g.OW
	for n0 := 0; n0 < g.N; n0 += nb {
		cnt := min(nb, g.N-n0)
		for gi := 0; gi < grp; gi++ {
			wt := plainMat(wsl.m, wsl.off+gi*kg*rows, rows) // W_g (kg×rows), read transposed
			src := c.plainRows(&c.rowsB, dys, n0, cnt, gi*kg, kg, g.K, ohw)
			if g.Pointwise() {
				o.gemm(true, false, rows, cnt*ohw, kg, 1, wt, src, 0, batchMat(dxs, n0, cnt, gi*cg, g.C, ohw))
				continue
			}
			// W_gᵀ made explicit (rows×kg): gemm_nn instead of gemm_tn (conv.cl's transpose).
			wT := o.scratch(&c.wT, rows*kg)
			o.run1(kTranspose, rows*kg, wT, 0, wsl.m, wsl.off+gi*kg*rows, kg, rows)
			o.gemm(false, false, rows, cnt*ohw, kg, 1, plainMat(wT, 0, kg), src, 0, plainMat(col.m, col.off, cnt*ohw))
			c.col2im(g, cnt, dxs.m, dxs.off+(n0*g.C+gi*cg)*g.H*g.W, col.m, col.off)
		}
	}
}

// backwardFilter sets dw from dy and the column matrices of x (not
// depthwise) in chunks of nb samples, the gradient accumulating over them:
// expanded here into col chunk by chunk unless kept, else already in col
// as forward kept them, each chunk's product reading its columns there.
func (c *im2col) backwardFilter(g *gpu.ConvGeom, dws, dys, xs, col *clBuf, nb int, kept bool) {
	o := c.o
	grp := g.GroupCount()
	kg, rows, ohw := g.K/grp, g.ColRows(), g.OH*g.OW
	for n0 := 0; n0 < g.N; n0 += nb {
		cnt := min(nb, g.N-n0)
		beta := float32(1)
		if n0 == 0 {
			beta = 0
		}
		for gi := 0; gi < grp; gi++ {
			src := c.chunkCols(g, xs, col, kept, n0, cnt, gi) // read transposed
			o.gemm(false, true, kg, rows, cnt*ohw, 1, c.plainRows(&c.rowsA, dys, n0, cnt, gi*kg, kg, g.K, ohw), src,
				beta, plainMat(dws.m, dws.off+gi*kg*rows, rows))
		}
	}
}
