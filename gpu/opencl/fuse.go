//go:build opencl

package opencl

import "github.com/cotrain/cotrain/gpu"

import "fmt"

// The ActFuser methods on OpenCL (fuse.go): the activation applied by the
// kernel that adds the bias (bias_act after a GEMM or a depthwise kernel;
// wino_output for Winograd, which adds the bias already), and the
// activation's gradient and the bias gradient in one reduction
// (act_bias_grad). With Config.NoFuse they run as Unfused.

var _ gpu.ActFuser = (*OpenCL)(nil)

// ConvForwardAct implements ActFuser.
func (o *OpenCL) ConvForwardAct(a gpu.Act, g gpu.ConvGeom, y, x, w, bias, ws, cols gpu.Buffer) {
	gpu.MustFuse("ConvForwardAct", a)
	switch {
	case o.noFuse:
		gpu.Unfused(o).ConvForwardAct(a, g, y, x, w, bias, ws, cols)
	case cols != nil:
		o.convForwardKeepAct(g, y, x, w, bias, ws, cols, int(a.Kind))
	default:
		o.convForwardAct(g, y, x, w, bias, ws, int(a.Kind))
	}
}

// BiasAct implements ActFuser.
func (o *OpenCL) BiasAct(a gpu.Act, x, bias gpu.Buffer, n, c, hw int) {
	gpu.MustFuse("BiasAct", a)
	if o.noFuse {
		gpu.Unfused(o).BiasAct(a, x, bias, n, c, hw)
		return
	}
	xs, bs := o.buf(x), o.buf(bias)
	if xs.n != n*c*hw || (bs != nil && bs.n != c) {
		panic(fmt.Sprintf("gpu: BiasAct: %d elements for %d×%d×%d", xs.n, n, c, hw))
	}
	o.biasAct(xs, bs, n, c, hw, int(a.Kind))
}

// LinearForwardAct implements ActFuser: the product with the bias (per
// column of y) and a in its epilogue (gemm.cl) where it may run
// (epilogueOn), else the product then bias_act.
func (o *OpenCL) LinearForwardAct(a gpu.Act, y, x, w, bias gpu.Buffer, n, in, out int) {
	gpu.MustFuse("LinearForwardAct", a)
	if o.noFuse {
		gpu.Unfused(o).LinearForwardAct(a, y, x, w, bias, n, in, out)
		return
	}
	ys, xs, ws, bs := o.buf(y), o.buf(x), o.buf(w), o.buf(bias)
	if ys.n < n*out || xs.n < n*in || ws.n < out*in || (bs != nil && bs.n != out) {
		panic(fmt.Sprintf("gpu: LinearForwardAct: y %d, x %d, w %d elements for %d×%d×%d", ys.n, xs.n, ws.n, n, in, out))
	}
	if !o.epilogueOn() {
		o.Gemm(false, true, n, out, in, 1, x, w, 0, y)
		o.biasAct(ys, bs, n, out, 1, int(a.Kind))
		return
	}
	e := epilogue{col: true, act: int(a.Kind)}
	if bs != nil {
		e.bias, e.off = bs.m, bs.off
	}
	o.gemmEpi(false, true, n, out, in, 1, plainMat(xs.m, xs.off, in), plainMat(ws.m, ws.off, in), 0, plainMat(ys.m, ys.off, out), e)
}

// biasAct adds bias bs (nil: none) to x (n×c×hw), then applies the
// activation act (1 ReLU, 2 ReLU6) in the same pass; act 0 is AddBias
// alone (nothing without a bias). Planes of 32 positions or more run as a
// grid of planes (no division per element); smaller ones (a linear
// layer's single position) one item per element.
func (o *OpenCL) biasAct(xs, bs *clBuf, n, c, hw, act int) {
	if act == 0 {
		if bs != nil {
			o.run1(kAddBias, xs.n, xs.m, xs.off, bs.m, bs.off, c, hw, xs.n)
		}
		return
	}
	bm, boff, hasBias := xs.m, 0, 0
	if bs != nil {
		bm, boff, hasBias = bs.m, bs.off, 1
	}
	if hw >= 32 {
		o.runPlanes(kBiasActPlanes, hw, n*c, 1, act, xs.m, xs.off, bm, boff, hasBias, c, hw)
		return
	}
	o.run1(kBiasAct, xs.n, act, xs.m, xs.off, bm, boff, hasBias, c, hw, xs.n)
}

// ActivateBackwardBias implements ActFuser: one work-group per channel or
// per part of one, or one item per channel, as BiasGrad, each writing the
// dx it sums.
func (o *OpenCL) ActivateBackwardBias(a gpu.Act, dx, dbias, dy, y gpu.Buffer, n, c, hw int) {
	gpu.MustFuse("ActivateBackwardBias", a)
	if o.noFuse {
		gpu.Unfused(o).ActivateBackwardBias(a, dx, dbias, dy, y, n, c, hw)
		return
	}
	dxs, dbs, dys, ys := o.buf(dx), o.buf(dbias), o.buf(dy), o.buf(y)
	if dxs.n != n*c*hw || dys.n != dxs.n || ys.n != dxs.n || dbs.n != c {
		panic(fmt.Sprintf("gpu: ActivateBackwardBias: dx %d, dy %d, y %d, dbias %d for %d×%d×%d", dxs.n, dys.n, ys.n, dbs.n, n, c, hw))
	}
	if dxs.n == 0 {
		o.Fill(dbias, 0)
		return
	}
	if n*hw <= o.kn.biasColsMax { // one item per channel, as BiasGrad
		o.run1(kActBiasGradCols, c, int(a.Kind), dxs.m, dxs.off, dbs.m, dbs.off, dys.m, dys.off, ys.m, ys.off, n, c, hw)
		return
	}
	if l, p := o.kn.redParts(n * hw); p > 1 { // in parts, as BiasGrad
		part := o.scratch(&o.redPart, 2*c*p) // acc_t: room for double
		o.runGroups(kActBiasGradPart, c*p, int(a.Kind), dxs.m, dxs.off, part, dys.m, dys.off, ys.m, ys.off, n, c, hw, l, p)
		o.run1(kDwBackwardFilterFinal, c, dbs.m, dbs.off, part, c, p)
		return
	}
	o.runGroups(kActBiasGrad, c, int(a.Kind), dxs.m, dxs.off, dbs.m, dbs.off, dys.m, dys.off, ys.m, ys.off, n, c, hw)
}
