package cpu

import (
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// Dilated pooling on the CPU (PoolGeom.DilH or DilW above 1), with
// PyTorch's rules for max pooling (aten's max_pool2d_with_indices: the
// window's taps d apart, those outside the input skipped, the first
// maximum in row-major tap order taking the gradient, a NaN always
// replacing the running maximum) and the same taps for average pooling,
// which PyTorch has no dilated form of (ONNX's AveragePool has, from
// opset 19): the mean over the taps inside the input, divided by the taps
// inside the padded input when CountIncludePad is set (gpu.PoolTaps).
//
// The undilated kernels (pool.go) keep their contiguous row loops and
// vector paths; these loops step by the dilation instead and are taken
// only for a dilated geometry.

// dtaps is one output's taps along both axes: rows hlo, hlo+DilH, ...
// below hhi, columns wlo, wlo+DilW, ... below whi, and the product of the
// taps in the padded input (the divisor with CountIncludePad).
type dtaps struct{ hlo, hhi, wlo, whi, padded int }

func (g *poolGeom) dwindow(oh, ow int) dtaps {
	hlo, hhi, hp := gpu.PoolTaps(oh, g.StrideH, g.PadH, g.KH, g.DilH, g.H)
	wlo, whi, wp := gpu.PoolTaps(ow, g.StrideW, g.PadW, g.KW, g.DilW, g.W)
	return dtaps{hlo, hhi, wlo, whi, hp * wp}
}

// count returns the taps of w inside the input.
func (g *poolGeom) count(w dtaps) int {
	return ((w.hhi - w.hlo + g.DilH - 1) / g.DilH) * ((w.whi - w.wlo + g.DilW - 1) / g.DilW)
}

// dmax returns the maximum over w's taps of plane with the builtin max (as
// windowMax: NaN wins, +0 over -0; -inf for no taps).
func (g *poolGeom) dmax(plane []float32, w dtaps) float32 {
	m := float32(math.Inf(-1))
	for ih := w.hlo; ih < w.hhi; ih += g.DilH {
		row := plane[ih*g.W : ih*g.W+w.whi]
		for iw := w.wlo; iw < w.whi; iw += g.DilW {
			m = max(m, row[iw])
		}
	}
	return m
}

// dargmax returns the offset in plane of the tap that takes the gradient
// of maximum m, as argmax does: the last NaN when m is NaN, else the first
// tap equal to m in row-major tap order (PyTorch's first strictly greater
// value), -1 for no taps.
func (g *poolGeom) dargmax(plane []float32, w dtaps, m float32) int {
	at := -1
	for ih := w.hlo; ih < w.hhi; ih += g.DilH {
		for iw := w.wlo; iw < w.whi; iw += g.DilW {
			v := plane[ih*g.W+iw]
			if m != m {
				if v != v {
					at = ih*g.W + iw
				}
			} else if v == m && at < 0 {
				at = ih*g.W + iw
			}
		}
	}
	return at
}

// maxForwardDilated is maxForward for a dilated geometry.
func (g *poolGeom) maxForwardDilated(ys, xs []float32, lo, hi int) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	for p := lo; p < hi; p++ {
		plane, out := xs[p*hw:(p+1)*hw], ys[p*ohw:(p+1)*ohw]
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				out[oh*g.OW+ow] = g.dmax(plane, g.dwindow(oh, ow))
			}
		}
	}
}

// maxBackwardDilated is maxBackward for a dilated geometry.
func (g *poolGeom) maxBackwardDilated(dxs, dys, xs []float32, lo, hi int) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	clear(dxs[lo*hw : hi*hw])
	for p := lo; p < hi; p++ {
		plane, din, dout := xs[p*hw:(p+1)*hw], dxs[p*hw:(p+1)*hw], dys[p*ohw:(p+1)*ohw]
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				w := g.dwindow(oh, ow)
				if at := g.dargmax(plane, w, g.dmax(plane, w)); at >= 0 {
					din[at] += dout[oh*g.OW+ow]
				}
			}
		}
	}
}

// avgDivisor is average pooling's divisor for w.
func (g *poolGeom) avgDivisor(w dtaps) float32 {
	if g.CountIncludePad {
		return float32(w.padded)
	}
	return float32(g.count(w))
}

// avgForwardDilated is avgForward for a dilated geometry.
func (g *poolGeom) avgForwardDilated(ys, xs []float32, lo, hi int) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	for p := lo; p < hi; p++ {
		plane, out := xs[p*hw:(p+1)*hw], ys[p*ohw:(p+1)*ohw]
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				w := g.dwindow(oh, ow)
				var sum float32
				for ih := w.hlo; ih < w.hhi; ih += g.DilH {
					for iw := w.wlo; iw < w.whi; iw += g.DilW {
						sum += plane[ih*g.W+iw]
					}
				}
				out[oh*g.OW+ow] = sum / g.avgDivisor(w)
			}
		}
	}
}

// avgBackwardDilated is avgBackward for a dilated geometry.
func (g *poolGeom) avgBackwardDilated(dxs, dys []float32, lo, hi int) {
	hw, ohw := g.H*g.W, g.OH*g.OW
	clear(dxs[lo*hw : hi*hw])
	for p := lo; p < hi; p++ {
		din, dout := dxs[p*hw:(p+1)*hw], dys[p*ohw:(p+1)*ohw]
		for oh := 0; oh < g.OH; oh++ {
			for ow := 0; ow < g.OW; ow++ {
				w := g.dwindow(oh, ow)
				v := dout[oh*g.OW+ow] / g.avgDivisor(w)
				for ih := w.hlo; ih < w.hhi; ih += g.DilH {
					for iw := w.wlo; iw < w.whi; iw += g.DilW {
						din[ih*g.W+iw] += v
					}
				}
			}
		}
	}
}
