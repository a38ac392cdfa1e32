package cpu

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// Convolution on the CPU.
//
// The general path lowers each sample and group to a matrix product
// (im2col + Gemm, as Caffe does): the column matrix col is (C/G·R·S)×(OH·OW),
// row (c·R+r)·S+s holding the input pixel under kernel tap (c, r, s) for every
// output position (zero where the tap falls on padding). Then
//
//	forward:         y_g  = W_g · col                 (K/G × OH·OW)
//	backward data:   col  = W_gᵀ · dy_g, then col2im  (summed into dx)
//	backward filter: dW_g += dy_g · colᵀ              (over the batch)
//
// The backward filter product reads col transposed: the GEMM's packing
// transposes it eight rows at a time in registers (vec.Transpose8), which
// costs less than lowering straight into colᵀ (im2row's five-float runs at
// a stride of C/G·R·S: measured 2.5% of a LeNet step).
//
// A 1×1 convolution of stride 1 without padding needs no lowering at all: its
// column matrix is the input itself. Dense 3×3 convolutions of stride 1 with
// enough channels and outputs run forward and backward data as Winograd
// F(2×2, 3×3) instead (winograd.go).
//
// Threads (see par.go): forward and backward data are split over the
// batch's samples, each thread lowering into its own scratch and multiplying
// on its own. The filters are packed for the micro-kernel once per call
// (sgemm.PackedA) and shared. The backward filter pass, a sum over the batch,
// is cut into filterChunks chunks of samples fixed by N alone; each chunk
// sums its samples in order into its own buffer and the chunks are added in
// order, so dW has the same bits at every thread count.
//
// Depthwise convolution (Groups == C) has a column matrix R·S times larger
// than its input for a product of a single row, so it runs as a direct loop.

// ConvWorkspace implements Backend: one sample's and one group's column
// matrix, used by the calling thread; the pool's helper threads lower into
// their own scratch (sgemm.Thread.Floats).
func (*CPU) ConvWorkspace(geom gpu.ConvGeom) int {
	g := convGeom{geom}
	if g.Depthwise() || g.Pointwise() {
		return 0
	}
	return g.ColRows() * g.OH * g.OW
}

// colBuf returns n elements of column-matrix scratch for thread th: the
// caller's workspace on the calling thread, th's own scratch on a helper.
func (c *CPU) colBuf(th *sgemm.Thread, ws []float32, n int) []float32 {
	if th == &c.th {
		return ws[:n]
	}
	return th.Floats(0, n)
}

// check panics unless the buffers have the geometry's sizes (our own bug).
func (g *convGeom) check(op string, x, w, y, bias, ws []float32) {
	okBias := bias == nil || len(bias) == g.K
	if len(x) != g.N*g.C*g.H*g.W || len(w) != g.K*g.ColRows() || len(y) != g.N*g.K*g.OH*g.OW || !okBias ||
		g.OH <= 0 || g.OW <= 0 {
		panic(fmt.Sprintf("gpu: %s: buffers x %d, w %d, y %d, bias %d do not fit %+v", op, len(x), len(w), len(y), len(bias), *g))
	}
	if !g.Depthwise() && !g.Pointwise() && len(ws) < g.ColRows()*g.OH*g.OW {
		panic(fmt.Sprintf("gpu: %s: workspace of %d elements, need %d", op, len(ws), g.ColRows()*g.OH*g.OW))
	}
}

// span returns the output positions [lo, hi) whose input index
// o·stride - pad + tap falls inside [0, in).
func span(out, stride, pad, tap, in int) (lo, hi int) {
	// o·stride >= pad - tap  and  o·stride <= in - 1 + pad - tap
	lo = min(max(ceilDiv(pad-tap, stride), 0), out)
	hi = min(floorDiv(in-1+pad-tap, stride)+1, out)
	return lo, max(hi, lo)
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

// im2col writes the column matrix of one sample's group: x is Cg×H×W.
// Each row of col is OH runs of OW taken from input rows StrideH·W apart, so
// with StrideW 1 a row is one strided copy (vec.CopyRows) plus the padding's
// zeros.
func (g *convGeom) im2col(col, x []float32) { g.im2colLd(col, g.OH*g.OW, x) }

// im2colLd is im2col with col's rows ld floats apart (ld ≥ OH·OW): a
// sample's block of columns in a batched column matrix (colbatch.go).
func (g *convGeom) im2colLd(col []float32, ld int, x []float32) {
	cg, ohw := g.C/g.GroupCount(), g.OH*g.OW
	var sp spans
	sp.fill(g)
	for c := 0; c < cg; c++ {
		xc := x[c*g.H*g.W : (c+1)*g.H*g.W]
		for r := 0; r < g.R; r++ {
			hlo, hhi := sp.h(g, r)
			for s := 0; s < g.S; s++ {
				row := col[((c*g.R+r)*g.S+s)*ld : ((c*g.R+r)*g.S+s)*ld+ohw]
				wlo, whi := sp.w(g, s)
				if hlo >= hhi || wlo >= whi { // the tap reads padding only (a plane narrower than the padding)
					clear(row)
					continue
				}
				clear(row[:hlo*g.OW])
				clear(row[hhi*g.OW:])
				ih, iw := hlo*g.StrideH-g.PadH+r, wlo*g.StrideW-g.PadW+s
				if g.StrideW == 1 && g.OW >= 16 {
					if wlo > 0 {
						vec.ZeroRows(row[hlo*g.OW:], g.OW, hhi-hlo, wlo)
					}
					if whi < g.OW {
						vec.ZeroRows(row[hlo*g.OW+whi:], g.OW, hhi-hlo, g.OW-whi)
					}
					vec.CopyRows(row[hlo*g.OW+wlo:], g.OW, xc[ih*g.W+iw:], g.StrideH*g.W, hhi-hlo, whi-wlo)
					continue
				}
				stridedRows(row[hlo*g.OW:hhi*g.OW], g.OW, wlo, whi, xc[ih*g.W+iw:], g.StrideH*g.W, g.StrideW)
			}
		}
	}
}

// stridedRows is im2col's row for a column stride over 1, or for narrow
// output rows (under 16 floats, where a copy call per row of 3 floats cost
// more than the floats: resnet18's 3×3 planes): out holds rows of ow
// floats, each zero outside [wlo, whi) and, inside, every sw-th float of
// the input row that starts ldx floats after the previous one in x. The
// geometry sits in locals (a loop over g's fields reloads them after every
// store, which may alias them); strides 1 and 2 have their own loops.
func stridedRows(out []float32, ow, wlo, whi int, x []float32, ldx, sw int) {
	n := whi - wlo
	for o := 0; o+ow <= len(out); o += ow {
		r := out[o : o+ow : o+ow]
		for j := range r[:wlo] {
			r[j] = 0
		}
		for j := range r[whi:] {
			r[whi+j] = 0
		}
		dst := r[wlo:whi]
		src := x[:(n-1)*sw+1]
		switch sw {
		case 1:
			for j := range dst {
				dst[j] = src[j]
			}
		case 2:
			for j := range dst {
				dst[j] = src[2*j]
			}
		default:
			for j := range dst {
				dst[j] = src[j*sw]
			}
		}
		if o+ow < len(out) {
			x = x[ldx:]
		}
	}
}

// spans holds span's results for every kernel row r and column s of a
// geometry, computed once per call: span divides, and the lowering loops
// would otherwise divide for every (c, r, s) — more than a LeNet row's copy
// costs. Kernels over 16 wide or high compute them as they go.
type spans struct {
	hs, ws [16][2]int
	ok     bool
}

func (sp *spans) fill(g *convGeom) {
	if g.R > len(sp.hs) || g.S > len(sp.ws) {
		return
	}
	for r := 0; r < g.R; r++ {
		sp.hs[r][0], sp.hs[r][1] = span(g.OH, g.StrideH, g.PadH, r, g.H)
	}
	for s := 0; s < g.S; s++ {
		sp.ws[s][0], sp.ws[s][1] = span(g.OW, g.StrideW, g.PadW, s, g.W)
	}
	sp.ok = true
}

// h returns the output rows whose input row under kernel row r is inside.
func (sp *spans) h(g *convGeom, r int) (lo, hi int) {
	if sp.ok {
		return sp.hs[r][0], sp.hs[r][1]
	}
	return span(g.OH, g.StrideH, g.PadH, r, g.H)
}

// w returns the output columns whose input column under kernel column s is
// inside.
func (sp *spans) w(g *convGeom, s int) (lo, hi int) {
	if sp.ok {
		return sp.ws[s][0], sp.ws[s][1]
	}
	return span(g.OW, g.StrideW, g.PadW, s, g.W)
}

// zero clears a short slice in place.
func zero(s []float32) {
	for i := range s {
		s[i] = 0
	}
}

// col2im adds the column matrix back into one sample's group dx (Cg×H×W):
// with StrideW 1, each row of col is one strided add (vec.AddRows).
func (g *convGeom) col2im(dx, col []float32) { g.col2imLd(dx, col, g.OH*g.OW) }

// col2imLd is col2im with col's rows ld floats apart (ld ≥ OH·OW).
func (g *convGeom) col2imLd(dx, col []float32, ld int) {
	cg := g.C / g.GroupCount()
	var sp spans
	sp.fill(g)
	if g.StrideW == 1 && g.PadW == 0 {
		// Every tap s covers whole output rows: add the S shifted rows of
		// an output row into its input row at once (vec.AddShifted), in
		// the same order as below, so the bits are the same.
		for c := 0; c < cg; c++ {
			dxc := dx[c*g.H*g.W : (c+1)*g.H*g.W]
			for r := 0; r < g.R; r++ {
				hlo, hhi := sp.h(g, r)
				rows := col[(c*g.R+r)*g.S*ld:]
				for oh := hlo; oh < hhi; oh++ {
					ih := oh*g.StrideH - g.PadH + r
					vec.AddShifted(dxc[ih*g.W:], rows[oh*g.OW:], ld, g.S, g.OW)
				}
			}
		}
		return
	}
	for c := 0; c < cg; c++ {
		dxc := dx[c*g.H*g.W : (c+1)*g.H*g.W]
		for r := 0; r < g.R; r++ {
			hlo, hhi := sp.h(g, r)
			for s := 0; s < g.S; s++ {
				row := col[((c*g.R+r)*g.S+s)*ld:]
				wlo, whi := sp.w(g, s)
				if hlo >= hhi || wlo >= whi {
					continue
				}
				ih, iw := hlo*g.StrideH-g.PadH+r, wlo*g.StrideW-g.PadW+s
				if g.StrideW == 1 && g.OW >= 16 {
					vec.AddRows(dxc[ih*g.W+iw:], g.StrideH*g.W, row[hlo*g.OW+wlo:], g.OW, hhi-hlo, whi-wlo)
					continue
				}
				for oh := hlo; oh < hhi; oh++ {
					src := row[oh*g.OW+wlo : oh*g.OW+whi]
					dst := dxc[(oh*g.StrideH-g.PadH+r)*g.W:]
					i := iw
					for _, v := range src {
						dst[i] += v
						i += g.StrideW
					}
				}
			}
		}
	}
}

// filterChunks is the number of chunks the batch is cut into for the
// backward filter pass (fewer when the batch is smaller): enough parts for
// the threads of a phone, few enough that summing the chunks stays cheap.
// Changing it changes dW's rounding.
const filterChunks = 8

// packFilters packs every group's filter for the micro-kernel: W_g (K/G ×
// C/G·R·S) for the forward pass, or its transpose for backward data.
func (c *CPU) packFilters(g *convGeom, w []float32, transposed bool) {
	grp := g.GroupCount()
	kg, rows := g.K/grp, g.ColRows()
	if len(c.packed) < grp {
		c.packed = make([]sgemm.PackedA, grp)
	}
	for gi := 0; gi < grp; gi++ {
		wg := w[gi*kg*rows : (gi+1)*kg*rows]
		if transposed {
			c.packed[gi].Pack(true, rows, kg, wg, rows)
		} else {
			c.packed[gi].Pack(false, kg, rows, wg, rows)
		}
	}
}

// convWork estimates a conv pass's work for cpuJob's part sizes: its
// multiply-adds, at about sixteen per element-sized unit of run's scale.
func (g *convGeom) convWork() int { return g.N * g.K * g.OH * g.OW * g.ColRows() / 16 }

// ConvForward implements Backend.
func (c *CPU) ConvForward(geom gpu.ConvGeom, y, x, w, bias, ws gpu.Buffer) {
	g := convGeom{geom}
	ys, xs, wsl, bs, col := h(y), h(x), h(w), h(bias), h(ws)
	g.check("ConvForward", xs, wsl, ys, bs, col)
	if c.useWino(&g) {
		c.winoFilters(&g, wsl, false)
		if g.winoBatched(false) {
			c.winoBatch(&g, ys, xs, bs, false)
			return
		}
	} else if c.useColBatch(&g) {
		c.colBatchForward(&g, ys, xs, wsl, bs)
		return
	} else if !g.Depthwise() {
		c.packFilters(&g, wsl, false)
	}
	j := &c.job
	j.op, j.conv, j.y, j.x, j.w, j.b, j.ws = opConvForward, g, ys, xs, wsl, bs, col
	c.run(j, g.N, g.convWork())
}

// convForward is ConvForward for samples [lo, hi) on thread th.
func (c *CPU) convForward(th *sgemm.Thread, g *convGeom, y, x, w, bias, ws []float32, lo, hi int) {
	ohw := g.OH * g.OW
	if g.Depthwise() && g.dw3Padded() {
		g.depthwise3x3PaddedForward(th, y, x, w, lo, hi)
	} else if g.Depthwise() && g.dw3() {
		g.depthwise3x3Forward(y, x, w, lo, hi)
	} else if g.Depthwise() {
		g.depthwiseForward(y, x, w, lo, hi)
	} else if c.useWino(g) {
		chw, khw := g.C*g.H*g.W, g.K*ohw
		for n := lo; n < hi; n++ {
			c.winoSample(th, y[n*khw:(n+1)*khw], x[n*chw:(n+1)*chw], g.C, g.H, g.W, g.K, g.OH, g.OW, g.PadH, g.PadW)
		}
	} else {
		grp := g.GroupCount()
		cg, kg, rows := g.C/grp, g.K/grp, g.ColRows()
		for n := lo; n < hi; n++ {
			for gi := 0; gi < grp; gi++ {
				xg := x[(n*g.C+gi*cg)*g.H*g.W : (n*g.C+(gi+1)*cg)*g.H*g.W]
				cm := xg
				if !g.Pointwise() {
					cm = c.colBuf(th, ws, rows*ohw)
					g.im2col(cm, xg)
				}
				yg := y[(n*g.K+gi*kg)*ohw : (n*g.K+(gi+1)*kg)*ohw]
				th.GemmPacked(&c.packed[gi], false, ohw, 1, cm, ohw, 0, yg, ohw)
			}
		}
	}
	if bias != nil {
		addBias(y[lo*g.K*ohw:hi*g.K*ohw], bias, hi-lo, g.K, ohw)
	}
}

// ConvBackwardData implements Backend.
func (c *CPU) ConvBackwardData(geom gpu.ConvGeom, dx, dy, w, ws gpu.Buffer) {
	g := convGeom{geom}
	dxs, dys, wsl, col := h(dx), h(dy), h(w), h(ws)
	g.check("ConvBackwardData", dxs, wsl, dys, nil, col)
	if c.useWino(&g) {
		c.winoFilters(&g, wsl, true)
		if g.winoBatched(true) {
			c.winoBatch(&g, dxs, dys, nil, true)
			return
		}
	} else if c.useColBatch(&g) {
		c.colBatchData(&g, dxs, dys, wsl)
		return
	} else if !g.Depthwise() {
		c.packFilters(&g, wsl, true)
	}
	j := &c.job
	j.op, j.conv, j.dx, j.dy, j.w, j.ws = opConvBackwardData, g, dxs, dys, wsl, col
	c.run(j, g.N, g.convWork())
}

// convBackwardData is ConvBackwardData for samples [lo, hi) on thread th.
func (c *CPU) convBackwardData(th *sgemm.Thread, g *convGeom, dx, dy, w, ws []float32, lo, hi int) {
	if g.Depthwise() && g.dw3PaddedData() {
		g.depthwise3x3PaddedData(th, dx, dy, w, lo, hi)
		return
	}
	if g.Depthwise() && g.dw3() && g.K == g.C && g.StrideH == 1 && g.StrideW == 1 {
		g.depthwise3x3BackwardData(dx, dy, w, lo, hi)
		return
	}
	if g.Depthwise() {
		g.depthwiseBackwardData(dx, dy, w, lo, hi)
		return
	}
	if c.useWino(g) {
		chw, khw := g.C*g.H*g.W, g.K*g.OH*g.OW
		for n := lo; n < hi; n++ {
			c.winoSample(th, dx[n*chw:(n+1)*chw], dy[n*khw:(n+1)*khw], g.K, g.OH, g.OW, g.C, g.H, g.W, 2-g.PadH, 2-g.PadW)
		}
		return
	}
	grp := g.GroupCount()
	cg, kg, rows, ohw := g.C/grp, g.K/grp, g.ColRows(), g.OH*g.OW
	for n := lo; n < hi; n++ {
		for gi := 0; gi < grp; gi++ {
			dxg := dx[(n*g.C+gi*cg)*g.H*g.W : (n*g.C+(gi+1)*cg)*g.H*g.W]
			dyg := dy[(n*g.K+gi*kg)*ohw : (n*g.K+(gi+1)*kg)*ohw]
			if g.Pointwise() {
				th.GemmPacked(&c.packed[gi], false, ohw, 1, dyg, ohw, 0, dxg, ohw)
				continue
			}
			cm := c.colBuf(th, ws, rows*ohw)
			th.GemmPacked(&c.packed[gi], false, ohw, 1, dyg, ohw, 0, cm, ohw)
			clear(dxg)
			g.col2im(dxg, cm)
		}
	}
}

// ConvBackwardFilter implements Backend.
func (c *CPU) ConvBackwardFilter(geom gpu.ConvGeom, dw, dbias, dy, x, ws gpu.Buffer) {
	g := convGeom{geom}
	dws, dbs, dys, xs, col := h(dw), h(dbias), h(dy), h(x), h(ws)
	g.check("ConvBackwardFilter", xs, dws, dys, dbs, col)
	if dbs != nil {
		c.BiasGrad(dbias, dy, g.N, g.K, g.OH*g.OW)
	}
	if g.Depthwise() {
		// Split over output channels: each one's sums keep their order.
		j := &c.job
		j.op, j.conv, j.w, j.dy, j.x = opDepthwiseFilter, g, dws, dys, xs
		c.run(j, g.K, 2*len(dys))
		return
	}
	if c.useWino(&g) {
		c.winoFilter(&g, dws, dys, xs)
		return
	}
	if c.useColBatch(&g) {
		c.colBatchFilter(&g, dws, dys, xs)
		return
	}
	chunks := min(g.N, filterChunks)
	size := len(dws)
	if need := (chunks - 1) * size; cap(c.partial) < need {
		c.partial = make([]float32, need)
	}
	j := &c.job
	j.op, j.conv, j.dy, j.x, j.w, j.ws = opConvBackwardFilter, g, dys, xs, dws, col
	c.runParts(j, g.N, chunks)
	if chunks > 1 {
		// The chunks' sums in chunk order, split over ranges of weights
		// (each weight's additions keep their order).
		j.op, j.w, j.batch = opSumPartials, dws, chunks
		c.run(j, size, chunks*size)
	}
}

// sumPartials adds the partial filter gradients of chunks 1..chunks-1 to
// dw[lo:hi], in chunk order.
func (c *CPU) sumPartials(dw []float32, chunks, lo, hi int) {
	size := len(dw)
	for ci := 1; ci < chunks; ci++ {
		p := c.partial[(ci-1)*size : ci*size]
		vec.AddRows(dw[lo:hi], 0, p[lo:hi], 0, 1, hi-lo)
	}
}

// convBackwardFilterChunk sums the filter gradient of samples [lo, hi) into
// chunk's buffer: dW itself for chunk 0, a partial sum for the others.
func (c *CPU) convBackwardFilterChunk(th *sgemm.Thread, g *convGeom, chunk int, dw, dy, x, ws []float32, lo, hi int) {
	if chunk > 0 {
		dw = c.partial[(chunk-1)*len(dw) : chunk*len(dw)]
	}
	grp := g.GroupCount()
	cg, kg, rows, ohw := g.C/grp, g.K/grp, g.ColRows(), g.OH*g.OW
	for n := lo; n < hi; n++ {
		beta := float32(1)
		if n == lo {
			beta = 0
		}
		for gi := 0; gi < grp; gi++ {
			xg := x[(n*g.C+gi*cg)*g.H*g.W : (n*g.C+(gi+1)*cg)*g.H*g.W]
			dyg := dy[(n*g.K+gi*kg)*ohw : (n*g.K+(gi+1)*kg)*ohw]
			dwg := dw[gi*kg*rows : (gi+1)*kg*rows]
			if g.Pointwise() {
				// x_g is the C/G×H·W column matrix: use it transposed in place.
				th.Gemm(false, true, kg, rows, ohw, 1, dyg, ohw, xg, ohw, beta, dwg, rows)
				continue
			}
			cm := c.colBuf(th, ws, rows*ohw)
			g.im2col(cm, xg)
			th.Gemm(false, true, kg, rows, ohw, 1, dyg, ohw, cm, ohw, beta, dwg, rows)
		}
	}
}

// The depthwise loops: output channel k reads input channel k/m, where
// m = K/C is the channel multiplier, through its own R×S filter.

func (g *convGeom) depthwiseForward(y, x, w []float32, lo, hi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	var sp spans
	sp.fill(g)
	for n := lo; n < hi; n++ {
		for k := 0; k < g.K; k++ {
			yk := y[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			xc := x[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			wk := w[k*g.R*g.S : (k+1)*g.R*g.S]
			clear(yk)
			for r := 0; r < g.R; r++ {
				hlo, hhi := sp.h(g, r)
				for s := 0; s < g.S; s++ {
					wlo, whi := sp.w(g, s)
					wv := wk[r*g.S+s]
					for oh := hlo; oh < hhi; oh++ {
						out := yk[oh*g.OW : (oh+1)*g.OW]
						in := xc[(oh*g.StrideH-g.PadH+r)*g.W:]
						iw := wlo*g.StrideW - g.PadW + s
						for ow := wlo; ow < whi; ow++ {
							out[ow] += float32(wv * in[iw])
							iw += g.StrideW
						}
					}
				}
			}
		}
	}
}

func (g *convGeom) depthwiseBackwardData(dx, dy, w []float32, lo, hi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	var sp spans
	sp.fill(g)
	clear(dx[lo*g.C*hw : hi*g.C*hw])
	for n := lo; n < hi; n++ {
		for k := 0; k < g.K; k++ {
			dyk := dy[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			dxc := dx[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			wk := w[k*g.R*g.S : (k+1)*g.R*g.S]
			for r := 0; r < g.R; r++ {
				hlo, hhi := sp.h(g, r)
				for s := 0; s < g.S; s++ {
					wlo, whi := sp.w(g, s)
					wv := wk[r*g.S+s]
					for oh := hlo; oh < hhi; oh++ {
						src := dyk[oh*g.OW : (oh+1)*g.OW]
						dst := dxc[(oh*g.StrideH-g.PadH+r)*g.W:]
						iw := wlo*g.StrideW - g.PadW + s
						for ow := wlo; ow < whi; ow++ {
							dst[iw] += float32(wv * src[ow])
							iw += g.StrideW
						}
					}
				}
			}
		}
	}
}

// depthwiseBackwardFilter sums dW of output channels [klo, khi) over the
// batch, one tap at a time over each plane.
func (g *convGeom) depthwiseBackwardFilter(dw, dy, x []float32, klo, khi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	var sp spans
	sp.fill(g)
	clear(dw[klo*g.R*g.S : khi*g.R*g.S])
	for n := 0; n < g.N; n++ {
		for k := klo; k < khi; k++ {
			dyk := dy[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			xc := x[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			dwk := dw[k*g.R*g.S : (k+1)*g.R*g.S]
			for r := 0; r < g.R; r++ {
				hlo, hhi := sp.h(g, r)
				for s := 0; s < g.S; s++ {
					wlo, whi := sp.w(g, s)
					var sum float32
					for oh := hlo; oh < hhi; oh++ {
						src := dyk[oh*g.OW : (oh+1)*g.OW]
						in := xc[(oh*g.StrideH-g.PadH+r)*g.W:]
						iw := wlo*g.StrideW - g.PadW + s
						for ow := wlo; ow < whi; ow++ {
							sum += float32(src[ow] * in[iw])
							iw += g.StrideW
						}
					}
					dwk[r*g.S+s] += sum
				}
			}
		}
	}
}

// convGeom is a gpu.ConvGeom with the CPU backend's kernels as methods.
type convGeom struct{ gpu.ConvGeom }

// cg is g with the CPU backend's kernels as methods.
func cg(g *gpu.ConvGeom) *convGeom { return &convGeom{*g} }
