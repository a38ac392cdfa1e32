//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"runtime"
	"sync/atomic"

	"github.com/cotrain/cotrain/gpu"
)

// Column matrices kept from a training forward for the filter gradient
// (ConvColumnKeeper).
//
// Without them a training step expands every convolution's input twice:
// ConvForward writes x's column matrix into the workspace the network's
// layers share, the next layer's forward overwrites it, and
// ConvBackwardFilter expands x again. With a buffer of its own per layer
// (ConvKeepColumns), the forward leaves the whole batch's matrix there, all
// groups side by side (group gi's at gi·rows·N·OH·OW), and the filter
// gradient reads it: one im2col launch per group and step fewer. The
// products run in the chunks the workspace gives, as without kept matrices
// (a filter gradient summed over chunks rounds differently from one summed
// at once): the same products on the same matrices, so the same bits.
//
// The buffers are charged against a budget of an eighth of the device's
// memory (keepBudget; tests set another with knobs.keepBudget), counted
// while they are alive; past it, or for a
// matrix larger than a quarter of the device's memory (the smallest
// largest-allocation OpenCL allows a device to report) or 2³¹−1 elements
// (the kernels index in int), ConvKeepColumns answers nil and the layer
// expands twice as before. A dropped buffer returns to the budget when the
// collector frees it, so the larger buffer a growing batch asks for may be
// refused while the old one is still counted (solver.Conv2D then keeps the
// old one, for the batches it holds).

var _ gpu.ConvColumnKeeper = (*OpenCL)(nil)

// convKeepLen is the length of the kept column matrices of g: every group
// of the whole batch, or 0 when g has none (depthwise and pointwise
// convolutions read x directly).
func convKeepLen(g gpu.ConvGeom) int {
	if g.Depthwise() || g.Pointwise() {
		return 0
	}
	return g.GroupCount() * g.ColRows() * g.N * g.OH * g.OW
}

// ConvKeepColumns implements ConvColumnKeeper: a buffer for g's column
// matrices, or nil when g has none, its forward runs Winograd (which
// builds none: keeping them would not save the filter gradient's im2col,
// only cost the memory) or FFT (whose filter gradient reads x), they do not fit the budget or the device refuses
// the allocation.
func (o *OpenCL) ConvKeepColumns(g gpu.ConvGeom) gpu.Buffer {
	if o.algoFor(&g) != nil {
		return nil
	}
	n := convKeepLen(g)
	bytes := int64(n) * int64(o.esize())
	if n <= 0 || n > math.MaxInt32 || bytes > o.info.GlobalMem/4 || o.keepBytes.Load()+bytes > o.keepBudget {
		return nil
	}
	// Not Alloc: a device that refuses the memory leaves the layer
	// expanding twice, not panicking; and nothing reads the matrices before
	// ConvForwardKeep writes them, so they are not zeroed.
	m, err := o.ctx.allocSized(n, o.esize())
	if err != nil {
		o.log.Debug("gpu: opencl: no memory to keep column matrices", "elements", n, "err", err)
		return nil
	}
	o.keepBytes.Add(bytes)
	runtime.AddCleanup(m, func(k *atomic.Int64) { k.Add(-bytes) }, &o.keepBytes)
	return &clBuf{m: m, n: n, owner: o}
}

// keepBufs checks the buffers of ConvForwardKeep and ConvBackwardFilterCols.
func (o *OpenCL) keepBufs(op string, g *gpu.ConvGeom, cols gpu.Buffer) *clBuf {
	c, have := o.buf(cols), 0
	if c != nil {
		have = c.n
	}
	if n := convKeepLen(*g); n == 0 || have < n {
		panic(fmt.Sprintf("gpu: %s: %d elements of kept column matrices for %+v, want %d", op, have, *g, n))
	}
	return c
}

// ConvForwardKeep implements ConvColumnKeeper: ConvForward with every
// group's column matrix of the whole batch left at its place in cols. The
// products run in the chunks ws gives, as ConvForward's do. A convolution
// that runs Winograd (whose cols were granted before its mode changed)
// expands x into cols for the filter gradient and runs Winograd, as
// ConvForward does; one that runs FFT likewise.
func (o *OpenCL) ConvForwardKeep(g gpu.ConvGeom, y, x, w, bias, ws, cols gpu.Buffer) {
	o.convForwardKeepAct(g, y, x, w, bias, ws, cols, 0)
}

// convForwardKeepAct is ConvForwardKeep with an activation fused as
// convForwardAct fuses it (act 0: none).
func (o *OpenCL) convForwardKeepAct(g gpu.ConvGeom, y, x, w, bias, ws, cols gpu.Buffer, act int) {
	c := o.keepBufs("ConvForwardKeep", &g, cols)
	xs, wsl, ys, bs, col, nb := o.convBufs("ConvForwardKeep", &g, x, w, y, bias, ws)
	if a := o.algoFor(&g); a != nil {
		o.cols.expand(&g, g.ColRows(), g.N, g.OH*g.OW, c.m, c.off, xs.m, xs.off) // one group
		a.forward(&g, ys, xs, wsl, bs, col, act)
		return
	}
	o.convForward(&g, ys, xs, wsl, bs, c, nb, true, act)
}

// ConvBackwardFilterCols implements ConvColumnKeeper: ConvBackwardFilter
// with the column matrices ConvForwardKeep left in cols, in the chunks ws
// gives, as ConvBackwardFilter's (a gradient summed over chunks rounds
// differently from one summed at once).
func (o *OpenCL) ConvBackwardFilterCols(g gpu.ConvGeom, dw, dbias, dy, ws, cols gpu.Buffer) {
	c := o.keepBufs("ConvBackwardFilterCols", &g, cols)
	dws, dys := o.buf(dw), o.buf(dy)
	if dws.n != g.K*g.ColRows() || dys.n != g.N*g.K*g.OH*g.OW {
		panic(fmt.Sprintf("gpu: ConvBackwardFilterCols: buffers dw %d, dy %d do not fit %+v", dws.n, dys.n, g))
	}
	nb := o.chunk("ConvBackwardFilterCols", &g, o.buf(ws))
	if dbias != nil {
		if o.buf(dbias).n != g.K {
			panic(fmt.Sprintf("gpu: ConvBackwardFilterCols: dbias of %d for %d channels", dbias.Len(), g.K))
		}
		o.BiasGrad(dbias, dy, g.N, g.K, g.OH*g.OW)
	}
	o.convFilter(&g, dws, dys, nil, c, nb, true)
}
