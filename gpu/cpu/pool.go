package cpu

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// Pooling on the CPU, with PyTorch's window rules (aten's max_pool2d and
// avg_pool2d kernels); dilated windows have loops of their own
// (pool_dilated.go):
//
//   - Window (oh, ow) starts at (oh·StrideH - PadH, ow·StrideW - PadW) and
//     spans KH×KW. Max pooling clips it to the input: padding acts as -inf.
//   - Average pooling first clips the window to the padded input (which ceil
//     mode can overrun); that clipped size, padding included, is the divisor
//     when CountIncludePad is set. Otherwise the divisor is the number of input
//     elements in the window.
//
// PoolGeom.Setup guarantees every window holds at least one input element.

// window returns the input rows [lo, hi) of output row o, and the row count
// padding included but clipped to the padded input (avg pooling's divisor).
func window(o, stride, pad, k, in int) (lo, hi, padded int) {
	lo = o*stride - pad
	hi = min(lo+k, in+pad)
	padded = hi - lo
	return max(lo, 0), min(hi, in), padded
}

func (g *poolGeom) check(op string, x, y []float32) {
	if len(x) != g.N*g.C*g.H*g.W || len(y) != g.N*g.C*g.OH*g.OW || g.OH <= 0 || g.OW <= 0 {
		panic(fmt.Sprintf("gpu: %s: buffers x %d, y %d do not fit %+v", op, len(x), len(y), *g))
	}
}

// windowMax returns the maximum of plane (H×W) over rows [hlo, hhi) and
// columns [wlo, whi), -inf for an empty window. The builtin max propagates
// NaN, as PyTorch does, and compiles without branches: a data-dependent
// branch here costs more than the rest of the loop on random inputs.
func (g *poolGeom) windowMax(plane []float32, hlo, hhi, wlo, whi int) float32 {
	m := float32(math.Inf(-1))
	for ih := hlo; ih < hhi; ih++ {
		for _, v := range plane[ih*g.W+wlo : ih*g.W+whi] {
			m = max(m, v)
		}
	}
	return m
}

// argmax returns the offset in plane of the window's maximum m: the first
// element equal to it in row-major order, or the last NaN when m is NaN
// (PyTorch's rule: a NaN always replaces the running maximum). It returns
// -1 for an empty window.
func (g *poolGeom) argmax(plane []float32, hlo, hhi, wlo, whi int, m float32) int {
	if m != m {
		for ih := hhi - 1; ih >= hlo; ih-- {
			for iw := whi - 1; iw >= wlo; iw-- {
				if v := plane[ih*g.W+iw]; v != v {
					return ih*g.W + iw
				}
			}
		}
	}
	// Scanned backwards to the first match without an early exit, so that
	// the compiler can use a conditional move: where in the window the
	// maximum lies is unpredictable.
	best := -1
	for ih := hhi - 1; ih >= hlo; ih-- {
		row := plane[ih*g.W : ih*g.W+whi]
		for iw := whi - 1; iw >= wlo; iw-- {
			if row[iw] == m {
				best = ih*g.W + iw
			}
		}
	}
	return best
}

// The pooling kernels are split over planes (sample, channel): each plane's
// output depends on that plane alone.

// poolWork is a pooling pass's work for cpuJob's part sizes: the input
// elements read, at least once per output.
func (g *poolGeom) poolWork() int { return g.N * g.C * max(g.H*g.W, g.OH*g.OW) }

// MaxPoolForward implements Backend.
func (c *CPU) MaxPoolForward(geom gpu.PoolGeom, y, x gpu.Buffer) {
	g := poolGeom{geom}
	ys, xs := h(y), h(x)
	g.check("MaxPoolForward", xs, ys)
	j := &c.job
	j.op, j.pool, j.y, j.x = opMaxPoolForward, g, ys, xs
	c.run(j, g.N*g.C, g.poolWork())
}

// pairs reports whether every window is a whole 2×2 block at stride 2 (the
// LeNets' pooling), which has branch-free loops of its own; never for a
// dilated geometry (pool_dilated.go).
func (g *poolGeom) pairs() bool {
	return !g.Dilated() && g.KH == 2 && g.KW == 2 && g.StrideH == 2 && g.StrideW == 2 && g.PadH == 0 && g.PadW == 0 &&
		2*g.OH <= g.H && 2*g.OW <= g.W
}

// maxForward is MaxPoolForward for planes [lo, hi).
func (g *poolGeom) maxForward(ys, xs []float32, lo, hi int) {
	if g.Dilated() {
		g.maxForwardDilated(ys, xs, lo, hi)
		return
	}
	hw, ohw := g.H*g.W, g.OH*g.OW
	if g.pairs() {
		for p := lo; p < hi; p++ {
			// The same maximum as windowMax's (Go's max: commutative, NaN
			// and signed zeros included), 16 windows at a time.
			vec.MaxPool2(ys[p*ohw:(p+1)*ohw], xs[p*hw:(p+1)*hw], g.W, g.OW, g.OH)
		}
		return
	}
	for p := lo; p < hi; p++ {
		plane, out := xs[p*hw:(p+1)*hw], ys[p*ohw:(p+1)*ohw]
		for oh := 0; oh < g.OH; oh++ {
			hlo, hhi, _ := window(oh, g.StrideH, g.PadH, g.KH, g.H)
			for ow := 0; ow < g.OW; ow++ {
				wlo, whi, _ := window(ow, g.StrideW, g.PadW, g.KW, g.W)
				out[oh*g.OW+ow] = g.windowMax(plane, hlo, hhi, wlo, whi)
			}
		}
	}
}

// MaxPoolBackward implements Backend.
func (c *CPU) MaxPoolBackward(geom gpu.PoolGeom, dx, dy, x gpu.Buffer) {
	g := poolGeom{geom}
	dxs, dys, xs := h(dx), h(dy), h(x)
	g.check("MaxPoolBackward", xs, dys)
	sameLen("MaxPoolBackward", dxs, xs)
	j := &c.job
	j.op, j.pool, j.dx, j.dy, j.x = opMaxPoolBackward, g, dxs, dys, xs
	c.run(j, g.N*g.C, g.poolWork())
}

// maxBackward is MaxPoolBackward for planes [lo, hi).
func (g *poolGeom) maxBackward(dxs, dys, xs []float32, lo, hi int) {
	if g.Dilated() {
		g.maxBackwardDilated(dxs, dys, xs, lo, hi)
		return
	}
	hw, ohw := g.H*g.W, g.OH*g.OW
	if !g.pairs() {
		clear(dxs[lo*hw : hi*hw])
	}
	for p := lo; p < hi; p++ {
		plane, din, dout := xs[p*hw:(p+1)*hw], dxs[p*hw:(p+1)*hw], dys[p*ohw:(p+1)*ohw]
		if !g.pairs() {
			g.maxBackwardPlane(plane, din, dout)
			continue
		}
		// Whole 2×2 windows: every covered cell written once by
		// vec.MaxPool2Backward; the cells of an odd last row or column
		// cleared. A plane with a NaN goes through the general loop.
		if !vec.MaxPool2Backward(din, plane, dout, g.W, g.OW, g.OH) {
			clear(din)
			g.maxBackwardPlane(plane, din, dout)
			continue
		}
		if 2*g.OW < g.W {
			vec.ZeroRows(din[2*g.OW:], g.W, 2*g.OH, g.W-2*g.OW)
		}
		clear(din[2*g.OH*g.W:])
	}
}

// maxBackwardPlane adds one plane's window gradients into din (any window).
func (g *poolGeom) maxBackwardPlane(plane, din, dout []float32) {
	for oh := 0; oh < g.OH; oh++ {
		hlo, hhi, _ := window(oh, g.StrideH, g.PadH, g.KH, g.H)
		for ow := 0; ow < g.OW; ow++ {
			wlo, whi, _ := window(ow, g.StrideW, g.PadW, g.KW, g.W)
			m := g.windowMax(plane, hlo, hhi, wlo, whi)
			if i := g.argmax(plane, hlo, hhi, wlo, whi, m); i >= 0 {
				din[i] += dout[oh*g.OW+ow]
			}
		}
	}
}

// divisor is average pooling's divisor for a window of the given extents.
func (g *poolGeom) divisor(hlo, hhi, hpad, wlo, whi, wpad int) float32 {
	if g.CountIncludePad {
		return float32(hpad * wpad)
	}
	return float32((hhi - hlo) * (whi - wlo))
}

// AvgPoolForward implements Backend.
func (c *CPU) AvgPoolForward(geom gpu.PoolGeom, y, x gpu.Buffer) {
	g := poolGeom{geom}
	ys, xs := h(y), h(x)
	g.check("AvgPoolForward", xs, ys)
	j := &c.job
	j.op, j.pool, j.y, j.x = opAvgPoolForward, g, ys, xs
	c.run(j, g.N*g.C, g.poolWork())
}

// avgForward is AvgPoolForward for planes [lo, hi).
func (g *poolGeom) avgForward(ys, xs []float32, lo, hi int) {
	if g.Dilated() {
		g.avgForwardDilated(ys, xs, lo, hi)
		return
	}
	hw, ohw := g.H*g.W, g.OH*g.OW
	for p := lo; p < hi; p++ {
		plane, out := xs[p*hw:(p+1)*hw], ys[p*ohw:(p+1)*ohw]
		for oh := 0; oh < g.OH; oh++ {
			hlo, hhi, hpad := window(oh, g.StrideH, g.PadH, g.KH, g.H)
			for ow := 0; ow < g.OW; ow++ {
				wlo, whi, wpad := window(ow, g.StrideW, g.PadW, g.KW, g.W)
				var sum float32
				for ih := hlo; ih < hhi; ih++ {
					for _, v := range plane[ih*g.W+wlo : ih*g.W+whi] {
						sum += v
					}
				}
				out[oh*g.OW+ow] = sum / g.divisor(hlo, hhi, hpad, wlo, whi, wpad)
			}
		}
	}
}

// AvgPoolBackward implements Backend.
func (c *CPU) AvgPoolBackward(geom gpu.PoolGeom, dx, dy gpu.Buffer) {
	g := poolGeom{geom}
	dxs, dys := h(dx), h(dy)
	g.check("AvgPoolBackward", dxs, dys)
	j := &c.job
	j.op, j.pool, j.dx, j.dy = opAvgPoolBackward, g, dxs, dys
	c.run(j, g.N*g.C, g.poolWork())
}

// avgBackward is AvgPoolBackward for planes [lo, hi).
func (g *poolGeom) avgBackward(dxs, dys []float32, lo, hi int) {
	if g.Dilated() {
		g.avgBackwardDilated(dxs, dys, lo, hi)
		return
	}
	hw, ohw := g.H*g.W, g.OH*g.OW
	clear(dxs[lo*hw : hi*hw])
	for p := lo; p < hi; p++ {
		din, dout := dxs[p*hw:(p+1)*hw], dys[p*ohw:(p+1)*ohw]
		for oh := 0; oh < g.OH; oh++ {
			hlo, hhi, hpad := window(oh, g.StrideH, g.PadH, g.KH, g.H)
			for ow := 0; ow < g.OW; ow++ {
				wlo, whi, wpad := window(ow, g.StrideW, g.PadW, g.KW, g.W)
				v := dout[oh*g.OW+ow] / g.divisor(hlo, hhi, hpad, wlo, whi, wpad)
				for ih := hlo; ih < hhi; ih++ {
					row := din[ih*g.W+wlo : ih*g.W+whi]
					for i := range row {
						row[i] += v
					}
				}
			}
		}
	}
}

// poolGeom is a gpu.PoolGeom with the CPU backend's kernels as methods.
type poolGeom struct{ gpu.PoolGeom }

// pg is g with the CPU backend's kernels as methods.
func pg(g *gpu.PoolGeom) *poolGeom { return &poolGeom{*g} }
