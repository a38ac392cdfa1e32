package cpu

import "github.com/cotrain/cotrain/gpu/internal/vec"

// Small output planes, batched.
//
// A convolution whose output plane is small (resnet18's 6×6 and 3×3 layers
// at 96×96, mobilenet_v2's last stages) gives each sample's product only
// OH·OW columns: 9 columns fill little more than half of one of the AVX2
// micro-kernel's 16-wide tiles, and the filter gradient's per-sample products
// are only OH·OW deep, each rewriting the whole of dW (9.4 MB for a 512→512
// 3×3 layer) and every chunk summing its own copy. The batched path lowers
// a group of samples side by side into one column matrix, COL
// ((C·R·S) × G·OH·OW, sample n's block of columns at (n-lo)·OH·OW), and
// multiplies once per group:
//
//	forward:         Y'  = W · COL,    Y' (K × G·OH·OW) scattered into y
//	backward data:   COL = Wᵀ · DY',   DY' gathered from dy, col2im per sample
//	backward filter: dW += DY' · COLᵀ  (one product G·OH·OW deep per group)
//
// The groups cut the batch into runs of about colBatchCols columns, at
// bounds that depend on N and OH·OW alone, so COL stays small and every
// result has the same bits at any thread count: the products are split by
// sgemm over blocks of their outputs only (GemmParallel). Forward and
// backward data compute every output element with the same arithmetic as
// the per-sample path (a column's place in a product does not change its
// sums), so they have its bits; the filter gradient sums a group's samples
// in one product (cut at sgemm's fixed depth blocks) instead of adding each
// sample's product into dW, so it rounds differently (and, with no chunks,
// needs no partial sums).
//
// The lowering, scatter and col2im run on the calling thread: they move
// O(C·R·S·G·OH·OW) floats against the product's K times as many
// multiply-adds.

const (
	// colBatchMaxHW is the largest output plane that takes the batched path
	// (BenchmarkConvForward's resnet18 layers: 3×3 and 6×6 planes).
	colBatchMaxHW = 64
	// colBatchCols is about the number of columns in one group's product.
	colBatchCols = 512
)

// colBatched reports whether g's passes run batched: one group, not
// depthwise, a small output plane. The forward and backward data passes
// of a Winograd convolution keep the Winograd path; its filter gradient is
// batched.
func (g *convGeom) colBatched() bool {
	return g.GroupCount() == 1 && !g.Depthwise() && g.OH*g.OW <= colBatchMaxHW
}

// useColBatch reports whether c runs g's passes on the batched path.
func (c *CPU) useColBatch(g *convGeom) bool { return !c.colOff && g.colBatched() }

// colGroups returns how many groups the batch is cut into: group i holds
// samples [i·N/groups, (i+1)·N/groups).
func (g *convGeom) colGroups() int {
	return max(1, min(g.N, (g.N*g.OH*g.OW+colBatchCols-1)/colBatchCols))
}

// colLower lowers samples [lo, hi) of x into c.colB: ColRows × (hi-lo)·OH·OW.
func (c *CPU) colLower(g *convGeom, x []float32, lo, hi int) []float32 {
	rows, ohw, chw := g.ColRows(), g.OH*g.OW, g.C*g.H*g.W
	cols := (hi - lo) * ohw
	c.colB = grow32(c.colB, rows*cols)
	for n := lo; n < hi; n++ {
		xn, at := x[n*chw:(n+1)*chw], c.colB[(n-lo)*ohw:]
		if g.Pointwise() {
			vec.CopyRows(at, cols, xn, ohw, g.C, ohw)
		} else {
			g.im2colLd(at, cols, xn)
		}
	}
	return c.colB
}

// colGather copies samples [lo, hi) of t (N × ch × OH·OW) side by side into
// c.colY: ch × (hi-lo)·OH·OW.
func (c *CPU) colGather(g *convGeom, t []float32, ch, lo, hi int) []float32 {
	ohw := g.OH * g.OW
	cols := (hi - lo) * ohw
	c.colY = grow32(c.colY, ch*cols)
	for n := lo; n < hi; n++ {
		vec.CopyRows(c.colY[(n-lo)*ohw:], cols, t[n*ch*ohw:(n+1)*ch*ohw], ohw, ch, ohw)
	}
	return c.colY
}

// colBatchForward is ConvForward on the batched path.
func (c *CPU) colBatchForward(g *convGeom, y, x, w, bias []float32) {
	rows, ohw, groups := g.ColRows(), g.OH*g.OW, g.colGroups()
	for gi := 0; gi < groups; gi++ {
		lo, hi := gi*g.N/groups, (gi+1)*g.N/groups
		cols := (hi - lo) * ohw
		col := c.colLower(g, x, lo, hi)
		c.colY = grow32(c.colY, g.K*cols)
		c.th.GemmParallel(false, false, g.K, cols, rows, 1, w, rows, col, cols, 0, c.colY, cols)
		for n := lo; n < hi; n++ {
			vec.CopyRows(y[n*g.K*ohw:], ohw, c.colY[(n-lo)*ohw:], cols, g.K, ohw)
		}
	}
	if bias != nil {
		addBias(y, bias, g.N, g.K, ohw)
	}
}

// colBatchData is ConvBackwardData on the batched path.
func (c *CPU) colBatchData(g *convGeom, dx, dy, w []float32) {
	rows, ohw, chw, groups := g.ColRows(), g.OH*g.OW, g.C*g.H*g.W, g.colGroups()
	for gi := 0; gi < groups; gi++ {
		lo, hi := gi*g.N/groups, (gi+1)*g.N/groups
		cols := (hi - lo) * ohw
		dyg := c.colGather(g, dy, g.K, lo, hi)
		c.colB = grow32(c.colB, rows*cols)
		c.th.GemmParallel(true, false, rows, cols, g.K, 1, w, rows, dyg, cols, 0, c.colB, cols)
		for n := lo; n < hi; n++ {
			dxn, at := dx[n*chw:(n+1)*chw], c.colB[(n-lo)*ohw:]
			if g.Pointwise() {
				vec.CopyRows(dxn, ohw, at, cols, g.C, ohw)
				continue
			}
			clear(dxn)
			g.col2imLd(dxn, at, cols)
		}
	}
}

// colBatchFilter is ConvBackwardFilter's weight gradient on the batched
// path: dW = Σ over groups of DY'·COLᵀ, the groups in order.
func (c *CPU) colBatchFilter(g *convGeom, dw, dy, x []float32) {
	rows, ohw, groups := g.ColRows(), g.OH*g.OW, g.colGroups()
	for gi := 0; gi < groups; gi++ {
		lo, hi := gi*g.N/groups, (gi+1)*g.N/groups
		cols := (hi - lo) * ohw
		col := c.colLower(g, x, lo, hi)
		dyg := c.colGather(g, dy, g.K, lo, hi)
		beta := float32(1)
		if gi == 0 {
			beta = 0
		}
		c.th.GemmParallel(false, true, g.K, rows, cols, 1, dyg, cols, col, cols, beta, dw, rows)
	}
}
