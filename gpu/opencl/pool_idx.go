//go:build opencl

package opencl

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// MaxPoolIndexer on OpenCL: the training forward writes each window's
// first maximum's position (maxpool_forward_idx) into a buffer of the
// layer's own, and the backward gathers with it (maxpool_backward_idx*),
// skipping maxpool_argmax. Both find the same positions as
// maxpool_argmax (pool.cl), so the gradients keep their bits.

var _ gpu.MaxPoolIndexer = (*OpenCL)(nil)

// clIdxBuf is a buffer of window positions (int32 per output element):
// a Buffer of its own type, so that a backend method given it where values
// are expected panics in buf instead of reading positions as values.
type clIdxBuf struct {
	m     *clMem
	n     int
	owner *OpenCL
}

// Len implements Buffer: the number of positions.
func (b *clIdxBuf) Len() int { return b.n }

// MaxPoolIndices implements MaxPoolIndexer: room for the positions of g's
// windows (N·C·OH·OW int32s), or nil when the device refuses the memory.
// Nothing reads them before MaxPoolForwardIdx writes them, so they are not
// zeroed.
func (o *OpenCL) MaxPoolIndices(g gpu.PoolGeom) gpu.Buffer {
	n := g.N * g.C * g.OH * g.OW
	if n <= 0 || n > math.MaxInt32 {
		return nil
	}
	m, err := o.ctx.allocSized(n, 4)
	if err != nil {
		o.log.Debug("gpu: opencl: no memory for max-pool positions", "elements", n, "err", err)
		return nil
	}
	return &clIdxBuf{m: m, n: n, owner: o}
}

// idxBuf checks a buffer of positions from MaxPoolIndices for g.
func (o *OpenCL) idxBuf(op string, g *gpu.PoolGeom, idx gpu.Buffer) *clIdxBuf {
	b, ok := idx.(*clIdxBuf)
	if !ok || b.owner != o {
		panic(fmt.Sprintf("gpu: %s: positions in a %T, not a buffer of this backend's MaxPoolIndices", op, idx))
	}
	if n := g.N * g.C * g.OH * g.OW; b.n < n {
		panic(fmt.Sprintf("gpu: %s: %d positions for %+v, want %d", op, b.n, *g, n))
	}
	return b
}

// MaxPoolForwardIdx implements MaxPoolIndexer.
func (o *OpenCL) MaxPoolForwardIdx(g gpu.PoolGeom, y, idx, x gpu.Buffer) {
	xs, ys := o.poolBufs("MaxPoolForwardIdx", &g, x, y)
	ib := o.idxBuf("MaxPoolForwardIdx", &g, idx)
	o.run1(kMaxpoolForwardIdx, ys.n, append([]any{ys.m, ys.off, ib.m, xs.m, xs.off}, poolArgs(g)...)...)
}

// MaxPoolBackwardIdx implements MaxPoolIndexer.
func (o *OpenCL) MaxPoolBackwardIdx(g gpu.PoolGeom, dx, dy, idx gpu.Buffer) {
	dxs, dys := o.poolBufs("MaxPoolBackwardIdx", &g, dx, dy)
	ib := o.idxBuf("MaxPoolBackwardIdx", &g, idx)
	o.maxPoolGather(&g, dxs, dys, ib.m)
}
