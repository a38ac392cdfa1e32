//go:build opencl

package opencl

import "github.com/cotrain/cotrain/gpu"

import "fmt"

// Convolution, pooling and batch normalisation on OpenCL.
//
// A convolution runs as GEMMs over whole batches, not per sample as on the
// CPU (gpu/cpu/conv.go): im2col writes the column matrix of nb samples side by
// side, (C/G·R·S)×(nb·OH·OW), and one product per group covers them. The
// batch tensors themselves (x, y, dy, dx, stored N×C×(H·W)) enter the
// products in place as segmented matrices (see mat and gemm.cl): y of nb
// samples is read and written as one K×(nb·OH·OW) matrix. A step is then a
// few large launches per layer instead of two per sample and group, which is
// what a fast GPU needs:
//
//	forward:         y_g  = W_g · col                 (K/G × nb·OH·OW)
//	backward data:   col  = W_gᵀ · dy_g, then col2im
//	backward filter: dW_g = dy_g · colᵀ               (k runs over nb·OH·OW)
//
// nb is the whole batch unless the column matrix would exceed
// convWorkspaceCap; then the batch is cut into chunks of nb samples (the
// filter gradient accumulating over chunks with beta 1). Pointwise
// convolutions use x itself as the column matrix; depthwise ones run direct
// kernels; 3×3 stride-1 ones may run the forward and the data gradient by
// Winograd (winograd.go); stride-1 ones with small planes may run
// all three passes by FFT (fft.go).

// convWorkspaceCap is the largest column matrix (elements) ConvWorkspace asks
// for: an eighth of the device's memory, at most 64 Mi elements (256 MiB).
func (o *OpenCL) convWorkspaceCap() int {
	c := int64(64 << 20)
	if o.info.GlobalMem > 0 {
		c = min(c, o.info.GlobalMem/4/8)
	}
	return int(c)
}

// ConvWorkspace implements Backend: the column matrix of as many samples as
// fit under convWorkspaceCap, at least one; for a convolution that runs
// Winograd (winograd.go), room for its transformed tiles too; for
// one that runs FFT (fft.go), room for its spectra.
func (o *OpenCL) ConvWorkspace(g gpu.ConvGeom) int {
	if g.Depthwise() || g.Pointwise() {
		return 0
	}
	per := g.ColRows() * g.OH * g.OW
	n := per * max(1, min(g.N, o.convWorkspaceCap()/per))
	if a := o.algoFor(&g); a != nil {
		n = max(n, a.workspace(&g))
	}
	return n
}

// convBufs unwraps and checks the convolution's buffers (bias may be nil)
// and returns how many samples one column matrix of the workspace holds.
func (o *OpenCL) convBufs(op string, g *gpu.ConvGeom, x, w, y, bias, ws gpu.Buffer) (xs, wsl, ys, bs, col *clBuf, nb int) {
	xs, wsl, ys, bs, col = o.buf(x), o.buf(w), o.buf(y), o.buf(bias), o.buf(ws)
	okBias := bs == nil || bs.n == g.K
	if xs.n != g.N*g.C*g.H*g.W || wsl.n != g.K*g.ColRows() || ys.n != g.N*g.K*g.OH*g.OW || !okBias || g.OH <= 0 || g.OW <= 0 {
		panic(fmt.Sprintf("gpu: %s: buffers x %d, w %d, y %d do not fit %+v", op, xs.n, wsl.n, ys.n, *g))
	}
	return xs, wsl, ys, bs, col, o.chunk(op, g, col)
}

// chunk is how many samples one column matrix of the workspace ws holds: the
// batch is expanded and multiplied in chunks of that many (the whole batch
// for convolutions without a column matrix).
func (o *OpenCL) chunk(op string, g *gpu.ConvGeom, ws *clBuf) int {
	if g.Depthwise() || g.Pointwise() {
		return g.N
	}
	per := g.ColRows() * g.OH * g.OW
	if ws == nil || ws.n < per {
		panic(fmt.Sprintf("gpu: %s: workspace too small for %+v", op, *g))
	}
	return min(g.N, ws.n/per)
}

// batchMat is the segmented matrix of channels [ch, ch+rowsOf) of samples
// [n0, n0+cnt) of an N×chans×hw tensor: row = channel, column = (sample, pixel).
func batchMat(b *clBuf, n0, cnt, ch, chans, hw int) mat {
	m := mat{m: b.m, off: b.off + (n0*chans+ch)*hw, ld: hw}
	if cnt > 1 {
		m.segl, m.segs = hw, chans*hw
	}
	return m
}

// dw3Kernels returns the depthwise forward and data-gradient kernels
// specialised for 3×3 filters at g's stride (1 or 2, the same both ways),
// or ok false where there are none.
func dw3Kernels(g gpu.ConvGeom) (forward, backwardData kernelID, ok bool) {
	if g.R != 3 || g.S != 3 || g.StrideH != g.StrideW || g.StrideH < 1 || g.StrideH > 2 {
		return 0, 0, false
	}
	if g.StrideH == 1 {
		return kDwForward3S1, kDwBackwardData3S1, true
	}
	return kDwForward3S2, kDwBackwardData3S2, true
}

// dwArgs are the trailing arguments of the depthwise kernels.
func dwArgs(g gpu.ConvGeom) []any {
	return []any{g.N, g.C, g.K, g.H, g.W, g.R, g.S, g.StrideH, g.StrideW, g.PadH, g.PadW, g.OH, g.OW}
}

// ConvForward implements Backend.
func (o *OpenCL) ConvForward(g gpu.ConvGeom, y, x, w, bias, ws gpu.Buffer) {
	o.convForwardAct(g, y, x, w, bias, ws, 0)
}

// convForwardAct is ConvForward, then the ReLU (act 1) or ReLU6 (act 2)
// fused into the kernel that adds the bias (fuse.go); act 0 is
// ConvForward itself.
func (o *OpenCL) convForwardAct(g gpu.ConvGeom, y, x, w, bias, ws gpu.Buffer, act int) {
	xs, wsl, ys, bs, col, nb := o.convBufs("ConvForward", &g, x, w, y, bias, ws)
	if a := o.algoFor(&g); a != nil {
		a.forward(&g, ys, xs, wsl, bs, col, act)
		return
	}
	o.convForward(&g, ys, xs, wsl, bs, col, nb, false, act)
}

// convForward runs the forward of a convolution (not one an algorithm of
// conv_algo.go takes) in chunks of nb samples, adding the bias bs (nil:
// none) and applying the activation act (0 none, 1 ReLU, 2 ReLU6): the
// depthwise kernels then bias_act, or im2col's products (im2col.forward,
// kept as it says).
func (o *OpenCL) convForward(g *gpu.ConvGeom, ys, xs, wsl, bs, col *clBuf, nb int, kept bool, act int) {
	if g.Depthwise() {
		args := append([]any{ys.m, ys.off, xs.m, xs.off, wsl.m, wsl.off}, dwArgs(*g)...)
		if k, _, ok := dw3Kernels(*g); ok {
			o.runPlanes(k, g.OH*g.OW, g.K, g.N, args...)
		} else {
			o.run1(kDwForward, ys.n, args...)
		}
		o.biasAct(ys, bs, g.N, g.K, g.OH*g.OW, act)
		return
	}
	o.cols.forward(g, ys, xs, wsl, bs, col, nb, kept, act)
}

// ConvBackwardData implements Backend.
func (o *OpenCL) ConvBackwardData(g gpu.ConvGeom, dx, dy, w, ws gpu.Buffer) {
	dxs, wsl, dys, _, col, nb := o.convBufs("ConvBackwardData", &g, dx, w, dy, nil, ws)
	if a := o.algoFor(&g); a != nil {
		a.backwardData(&g, dxs, dys, wsl, col)
		return
	}
	if g.Depthwise() {
		args := append([]any{dxs.m, dxs.off, dys.m, dys.off, wsl.m, wsl.off}, dwArgs(g)...)
		if _, k, ok := dw3Kernels(g); ok {
			o.runPlanes(k, g.H*g.W, g.C, g.N, args...)
		} else {
			o.run1(kDwBackwardData, dxs.n, args...)
		}
		return
	}
	o.cols.backwardData(&g, dxs, dys, wsl, col, nb)
}

// ConvBackwardFilter implements Backend.
func (o *OpenCL) ConvBackwardFilter(g gpu.ConvGeom, dw, dbias, dy, x, ws gpu.Buffer) {
	xs, dws, dys, dbs, col, nb := o.convBufs("ConvBackwardFilter", &g, x, dw, dy, dbias, ws)
	if dbs != nil {
		o.BiasGrad(dbias, dy, g.N, g.K, g.OH*g.OW)
	}
	if a := o.algoFor(&g); a != nil && a.backwardFilter(&g, dws, dys, xs, col) {
		return
	}
	o.convFilter(&g, dws, dys, xs, col, nb, false)
}

// convFilter sets dw from dy and x: by the depthwise kernels, else by
// im2col's products over the column matrices of x in chunks of nb samples
// (im2col.backwardFilter; kept: already in col).
func (o *OpenCL) convFilter(g *gpu.ConvGeom, dws, dys, xs, col *clBuf, nb int, kept bool) {
	if g.Depthwise() {
		if l, p := o.kn.redParts(g.N * g.OH * g.OW); p > 1 || (g.R == 3 && g.S == 3) {
			part := o.scratch(&o.redPart, 2*dws.n*p) // acc_t: room for double
			args := append(append([]any{part, dys.m, dys.off, xs.m, xs.off}, dwArgs(*g)...), l, p)
			if g.R == 3 && g.S == 3 {
				o.runGroups(kDwBackwardFilter3Part, g.K*p, args...)
			} else {
				o.runGroups(kDwBackwardFilterPart, dws.n*p, args...)
			}
			o.run1(kDwBackwardFilterFinal, dws.n, dws.m, dws.off, part, dws.n, p)
			return
		}
		o.runGroups(kDwBackwardFilter, dws.n, append([]any{dws.m, dws.off, dys.m, dys.off, xs.m, xs.off}, dwArgs(*g)...)...)
		return
	}
	o.cols.backwardFilter(g, dws, dys, xs, col, nb, kept)
}

// poolArgs are the trailing geometry arguments of the pooling kernels
// (dilation 0, a geometry not set up, is 1).
func poolArgs(g gpu.PoolGeom) []any {
	return []any{g.N * g.C, g.H, g.W, g.KH, g.KW, g.StrideH, g.StrideW, g.PadH, g.PadW, g.OH, g.OW, max(g.DilH, 1), max(g.DilW, 1)}
}

func (o *OpenCL) poolBufs(op string, g *gpu.PoolGeom, x, y gpu.Buffer) (xs, ys *clBuf) {
	xs, ys = o.buf(x), o.buf(y)
	if xs.n != g.N*g.C*g.H*g.W || ys.n != g.N*g.C*g.OH*g.OW || g.OH <= 0 || g.OW <= 0 {
		panic(fmt.Sprintf("gpu: %s: buffers x %d, y %d do not fit %+v", op, xs.n, ys.n, *g))
	}
	return xs, ys
}

// MaxPoolForward implements Backend.
func (o *OpenCL) MaxPoolForward(g gpu.PoolGeom, y, x gpu.Buffer) {
	xs, ys := o.poolBufs("MaxPoolForward", &g, x, y)
	o.run1(kMaxpoolForward, ys.n, append([]any{ys.m, ys.off, xs.m, xs.off}, poolArgs(g)...)...)
}

// MaxPoolBackward implements Backend: each input element gathers the dy of
// the windows whose first maximum it is, in window order; the maxima's
// offsets are found once per window first (maxpool_argmax).
func (o *OpenCL) MaxPoolBackward(g gpu.PoolGeom, dx, dy, x gpu.Buffer) {
	xs, dys := o.poolBufs("MaxPoolBackward", &g, x, dy)
	dxs := o.buf(dx)
	sameN("MaxPoolBackward", dxs, xs)
	// Each window's first maximum once, then the gather (pool.cl): over
	// planes when a plane has at least 32 positions (one division per item
	// instead of three; stride 2 has its own gather), else one item per
	// element, so that small planes do not leave work-groups idle.
	idx := o.scratch(&o.poolIdx, dys.n)
	nc := g.N * g.C
	argArgs := append([]any{idx, xs.m, xs.off}, poolArgs(g)...)
	if g.OH*g.OW >= 32 {
		o.runPlanes(kMaxpoolArgmaxPlanes, g.OH*g.OW, nc, 1, argArgs...)
	} else {
		o.run1(kMaxpoolArgmax, dys.n, argArgs...)
	}
	o.maxPoolGather(&g, dxs, dys, idx)
}

// maxPoolGather is max-pool backward's second pass: dx from dy and the
// windows' first maxima in idx.
func (o *OpenCL) maxPoolGather(g *gpu.PoolGeom, dxs, dys *clBuf, idx *clMem) {
	nc := g.N * g.C
	bwdArgs := append([]any{dxs.m, dxs.off, dys.m, dys.off, idx}, poolArgs(*g)...)
	switch {
	case g.H*g.W < 32:
		o.run1(kMaxpoolBackwardIdx, dxs.n, bwdArgs...)
	case g.StrideH == 2 && g.StrideW == 2:
		o.runPlanes(kMaxpoolBackwardIdxPlanesS2, g.H*g.W, nc, 1, bwdArgs...)
	default:
		o.runPlanes(kMaxpoolBackwardIdxPlanes, g.H*g.W, nc, 1, bwdArgs...)
	}
}

// AvgPoolForward implements Backend.
func (o *OpenCL) AvgPoolForward(g gpu.PoolGeom, y, x gpu.Buffer) {
	xs, ys := o.poolBufs("AvgPoolForward", &g, x, y)
	o.run1(kAvgpoolForward, ys.n, append(append([]any{ys.m, ys.off, xs.m, xs.off}, poolArgs(g)...), b2i(g.CountIncludePad))...)
}

// AvgPoolBackward implements Backend.
func (o *OpenCL) AvgPoolBackward(g gpu.PoolGeom, dx, dy gpu.Buffer) {
	dxs, dys := o.poolBufs("AvgPoolBackward", &g, dx, dy)
	o.run1(kAvgpoolBackward, dxs.n, append(append([]any{dxs.m, dxs.off, dys.m, dys.off}, poolArgs(g)...), b2i(g.CountIncludePad))...)
}

// bnBufs checks the per-channel buffers; a nil one is our bug unless allowed.
func (o *OpenCL) bnBufs(op string, g gpu.BNGeom, x *clBuf, per ...gpu.Buffer) []*clBuf {
	if g.N <= 0 || g.C <= 0 || g.HW <= 0 || x.n != g.N*g.C*g.HW {
		panic(fmt.Sprintf("gpu: %s: %d elements for N=%d C=%d HW=%d", op, x.n, g.N, g.C, g.HW))
	}
	out := make([]*clBuf, len(per))
	for i, p := range per {
		out[i] = o.buf(p)
		if out[i] != nil && out[i].n != g.C {
			panic(fmt.Sprintf("gpu: %s: per-channel buffer of %d for C=%d", op, out[i].n, g.C))
		}
	}
	return out
}

func nonNil(op string, bs ...*clBuf) {
	for _, b := range bs {
		if b == nil {
			panic("gpu: " + op + ": nil buffer")
		}
	}
}

// bnElementwise launches bn_apply or bn_backward_dx, four elements per item
// (bn_apply4, bn_backward_dx4) when a plane's length is a multiple of 4, so
// that the four share a channel.
func (o *OpenCL) bnElementwise(id, id4 kernelID, g gpu.BNGeom, args ...any) {
	if g.HW%4 == 0 {
		o.run1(id4, g.N*g.C*g.HW/4, args...)
		return
	}
	o.run1(id, g.N*g.C*g.HW, args...)
}

// BatchNormTrain implements Backend.
func (o *OpenCL) BatchNormTrain(g gpu.BNGeom, y, x, gamma, beta, runMean, runVar, saveMean, saveInvStd gpu.Buffer) {
	ys, xs := o.buf(y), o.buf(x)
	p := o.bnBufs("BatchNormTrain", g, xs, gamma, beta, runMean, runVar, saveMean, saveInvStd)
	nonNil("BatchNormTrain", p...)
	sameN("BatchNormTrain", ys, xs)
	coef := o.scratch(&o.coef, 4*g.C)
	if l, np := o.kn.redParts(g.N * g.HW); np > 1 {
		part := o.scratch(&o.redPart, 4*g.C*np)
		o.runGroups(kBnStatsPart, g.C*np, xs.m, xs.off, part, g.N, g.C, g.HW, l, np)
		o.run1(kBnStatsFinal, g.C, part, p[0].m, p[0].off, p[1].m, p[1].off, p[2].m, p[2].off, p[3].m, p[3].off,
			p[4].m, p[4].off, p[5].m, p[5].off, coef, g.N, g.C, g.HW, l, np, g.Eps, g.Momentum)
		o.bnElementwise(kBnApply, kBnApply4, g, ys.m, ys.off, xs.m, xs.off, coef, g.N, g.C, g.HW)
		return
	}
	o.runGroups(kBnStats, g.C, xs.m, xs.off, p[0].m, p[0].off, p[1].m, p[1].off, p[2].m, p[2].off, p[3].m, p[3].off,
		p[4].m, p[4].off, p[5].m, p[5].off, coef, g.N, g.C, g.HW, g.Eps, g.Momentum)
	o.bnElementwise(kBnApply, kBnApply4, g, ys.m, ys.off, xs.m, xs.off, coef, g.N, g.C, g.HW)
}

// BatchNormInfer implements Backend.
func (o *OpenCL) BatchNormInfer(g gpu.BNGeom, y, x, gamma, beta, runMean, runVar gpu.Buffer) {
	ys, xs := o.buf(y), o.buf(x)
	p := o.bnBufs("BatchNormInfer", g, xs, gamma, beta, runMean, runVar)
	nonNil("BatchNormInfer", p...)
	sameN("BatchNormInfer", ys, xs)
	coef := o.scratch(&o.coef, 4*g.C)
	o.run1(kBnInferCoef, g.C, p[0].m, p[0].off, p[1].m, p[1].off, p[2].m, p[2].off, p[3].m, p[3].off, coef, g.C, g.Eps)
	o.bnElementwise(kBnApply, kBnApply4, g, ys.m, ys.off, xs.m, xs.off, coef, g.N, g.C, g.HW)
}

// BatchNormBackward implements Backend. dx, dgamma and dbeta may be nil.
func (o *OpenCL) BatchNormBackward(g gpu.BNGeom, dx, dgamma, dbeta, dy, x, gamma, saveMean, saveInvStd gpu.Buffer) {
	dxs, dys, xs := o.buf(dx), o.buf(dy), o.buf(x)
	p := o.bnBufs("BatchNormBackward", g, xs, dgamma, dbeta, gamma, saveMean, saveInvStd)
	nonNil("BatchNormBackward", p[2:]...)
	sameN("BatchNormBackward", dys, xs)
	coef := o.scratch(&o.coef, 4*g.C)
	want, dg, db := 0, p[2], p[2] // a nil output is replaced by a buffer that is not written
	if p[0] != nil {
		want, dg = want|1, p[0]
	}
	if p[1] != nil {
		want, db = want|2, p[1]
	}
	if l, np := o.kn.redParts(g.N * g.HW); np > 1 {
		part := o.scratch(&o.redPart, 4*g.C*np)
		o.runGroups(kBnBackwardPart, g.C*np, dys.m, dys.off, xs.m, xs.off, p[3].m, p[3].off, part, g.N, g.C, g.HW, l, np)
		o.run1(kBnBackwardFinal, g.C, part, p[2].m, p[2].off, p[3].m, p[3].off, p[4].m, p[4].off,
			dg.m, dg.off, db.m, db.off, coef, g.N, g.C, g.HW, np, want)
	} else {
		o.runGroups(kBnBackwardReduce, g.C, dys.m, dys.off, xs.m, xs.off, p[2].m, p[2].off, p[3].m, p[3].off,
			p[4].m, p[4].off, dg.m, dg.off, db.m, db.off, coef, g.N, g.C, g.HW, want)
	}
	if dxs != nil {
		sameN("BatchNormBackward", dxs, xs)
		o.bnElementwise(kBnBackwardDx, kBnBackwardDx4, g, dxs.m, dxs.off, dys.m, dys.off, xs.m, xs.off, coef, g.N, g.C, g.HW)
	}
}
