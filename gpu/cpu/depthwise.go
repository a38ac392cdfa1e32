package cpu

import "github.com/cotrain/cotrain/gpu/internal/vec"

// The 3×3 depthwise convolution, MobileNet's, with its taps in registers.
//
// The general depthwise loops (depthwiseForward and its two gradients in
// conv.go) walk one tap at a time over a whole plane: every output is
// loaded, updated and stored nine times, behind a bounds check each time.
// These kernels instead finish one output element (or, for the filter
// gradient, one pass over the plane) with all nine taps held in registers.
// At strides 1 and 2 the padded kernels of depthwise_pad.go take over
// the forward pass, the filter gradient and (padding up to 2) the input
// gradient; these serve other strides and paddings.
// They add the same products in the same order as the general loops (kernel
// row, then kernel column; skipped taps are those outside the input), so
// their results have the same bits, which TestDepthwise3x3SameBits checks
// against the general loops; the general loops stay as their reference and
// serve every other kernel size. Every product is wrapped in float32(), here
// and in the general loops, so that Go never fuses it with the add (it may
// on arm64): fused and unfused sums differ in their last bits, and the
// vector rows of package vec never fuse.

// dw3 reports whether the 3×3 kernels apply.
func (g *convGeom) dw3() bool { return g.R == 3 && g.S == 3 }

// dw3Cols returns the output columns [lo, hi) whose three input columns all
// lie inside the input.
func (g *convGeom) dw3Cols() (lo, hi int) {
	lo = min(max(ceilDiv(g.PadW, g.StrideW), 0), g.OW)
	hi = min(max(floorDiv(g.W-3+g.PadW, g.StrideW)+1, lo), g.OW)
	return lo, hi
}

// dw3Point is one output of the forward pass, through the general tap loop
// (an edge of the plane). xc is the input plane, wk the channel's filter.
func (g *convGeom) dw3Point(xc, wk []float32, oh, ow int) float32 {
	var acc float32
	for r := 0; r < 3; r++ {
		ih := oh*g.StrideH - g.PadH + r
		if ih < 0 || ih >= g.H {
			continue
		}
		for s := 0; s < 3; s++ {
			iw := ow*g.StrideW - g.PadW + s
			if iw < 0 || iw >= g.W {
				continue
			}
			acc += float32(wk[r*3+s] * xc[ih*g.W+iw])
		}
	}
	return acc
}

// depthwise3x3Forward is depthwiseForward for 3×3 kernels. y: N×K×OH×OW,
// x: N×C×H×W, w: K×1×3×3, samples [lo, hi).
func (g *convGeom) depthwise3x3Forward(y, x, w []float32, lo, hi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	clo, chi := g.dw3Cols()
	sw := g.StrideW
	for n := lo; n < hi; n++ {
		for k := 0; k < g.K; k++ {
			yk := y[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			xc := x[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			wk := w[k*9 : k*9+9 : k*9+9]
			w0, w1, w2, w3, w4, w5, w6, w7, w8 := wk[0], wk[1], wk[2], wk[3], wk[4], wk[5], wk[6], wk[7], wk[8]
			for oh := 0; oh < g.OH; oh++ {
				out := yk[oh*g.OW : (oh+1)*g.OW]
				ih := oh*g.StrideH - g.PadH
				for ow := 0; ow < clo; ow++ {
					out[ow] = g.dw3Point(xc, wk, oh, ow)
				}
				for ow := chi; ow < g.OW; ow++ {
					out[ow] = g.dw3Point(xc, wk, oh, ow)
				}
				if ih < 0 || ih+2 >= g.H {
					// A top or bottom row: a pass per kernel row inside
					// the input, accumulating in out (same order per element).
					clear(out[clo:chi])
					for r := max(-ih, 0); r < min(g.H-ih, 3); r++ {
						xr := xc[(ih+r)*g.W : (ih+r+1)*g.W]
						v0, v1, v2 := wk[r*3], wk[r*3+1], wk[r*3+2]
						i := clo*sw - g.PadW
						for ow := clo; ow < chi; ow++ {
							a := xr[i : i+3 : i+3]
							o := out[ow]
							o += float32(v0 * a[0])
							o += float32(v1 * a[1])
							o += float32(v2 * a[2])
							out[ow] = o
							i += sw
						}
					}
					continue
				}
				x0 := xc[ih*g.W : (ih+1)*g.W]
				x1 := xc[(ih+1)*g.W : (ih+2)*g.W]
				x2 := xc[(ih+2)*g.W : (ih+3)*g.W]
				i := clo*sw - g.PadW
				for ow := clo; ow < chi; ow++ {
					a, b, c := x0[i:i+3:i+3], x1[i:i+3:i+3], x2[i:i+3:i+3]
					var acc float32
					acc += float32(w0 * a[0])
					acc += float32(w1 * a[1])
					acc += float32(w2 * a[2])
					acc += float32(w3 * b[0])
					acc += float32(w4 * b[1])
					acc += float32(w5 * b[2])
					acc += float32(w6 * c[0])
					acc += float32(w7 * c[1])
					acc += float32(w8 * c[2])
					out[ow] = acc
					i += sw
				}
			}
		}
	}
}

// dw3DataPoint is one element of the stride-1 input gradient through the
// general tap loop: the sum over taps (r, s), in that order, of
// w[r, s]·dy[ih+PadH-r, iw+PadW-s] where that output exists.
func (g *convGeom) dw3DataPoint(dyk, wk []float32, ih, iw int) float32 {
	var acc float32
	for r := 0; r < 3; r++ {
		oh := ih + g.PadH - r
		if oh < 0 || oh >= g.OH {
			continue
		}
		for s := 0; s < 3; s++ {
			ow := iw + g.PadW - s
			if ow < 0 || ow >= g.OW {
				continue
			}
			acc += float32(wk[r*3+s] * dyk[oh*g.OW+ow])
		}
	}
	return acc
}

// depthwise3x3BackwardData is depthwiseBackwardData for 3×3 kernels with
// stride 1 and one output channel per input channel (K == C): each input
// element gathers its nine products instead of receiving them one scatter
// at a time. dx: N×C×H×W, dy: N×K×OH×OW, samples [lo, hi).
func (g *convGeom) depthwise3x3BackwardData(dx, dy, w []float32, lo, hi int) {
	ohw, hw := g.OH*g.OW, g.H*g.W
	// Interior input columns: iw+PadW-2 >= 0 and iw+PadW < OW.
	clo := min(max(2-g.PadW, 0), g.W)
	chi := min(max(g.OW-g.PadW, clo), g.W)
	for n := lo; n < hi; n++ {
		for c := 0; c < g.C; c++ {
			dyk := dy[(n*g.C+c)*ohw : (n*g.C+c+1)*ohw]
			dxc := dx[(n*g.C+c)*hw : (n*g.C+c+1)*hw]
			wk := w[c*9 : c*9+9 : c*9+9]
			w0, w1, w2, w3, w4, w5, w6, w7, w8 := wk[0], wk[1], wk[2], wk[3], wk[4], wk[5], wk[6], wk[7], wk[8]
			for ih := 0; ih < g.H; ih++ {
				out := dxc[ih*g.W : (ih+1)*g.W]
				oh := ih + g.PadH // dy row under kernel row 0
				for iw := 0; iw < clo; iw++ {
					out[iw] = g.dw3DataPoint(dyk, wk, ih, iw)
				}
				for iw := chi; iw < g.W; iw++ {
					out[iw] = g.dw3DataPoint(dyk, wk, ih, iw)
				}
				if oh-2 < 0 || oh >= g.OH {
					// A top or bottom row: a pass per kernel row whose dy
					// row exists.
					clear(out[clo:chi])
					for r := max(oh-g.OH+1, 0); r < min(oh+1, 3); r++ {
						dr := dyk[(oh-r)*g.OW : (oh-r+1)*g.OW]
						v0, v1, v2 := wk[r*3], wk[r*3+1], wk[r*3+2]
						for iw := clo; iw < chi; iw++ {
							j := iw + g.PadW - 2
							a := dr[j : j+3 : j+3]
							o := out[iw]
							o += float32(v0 * a[2])
							o += float32(v1 * a[1])
							o += float32(v2 * a[0])
							out[iw] = o
						}
					}
					continue
				}
				d0 := dyk[oh*g.OW : (oh+1)*g.OW]
				d1 := dyk[(oh-1)*g.OW : oh*g.OW]
				d2 := dyk[(oh-2)*g.OW : (oh-1)*g.OW]
				if j0 := clo + g.PadW - 2; j0 >= 0 && chi > clo {
					vec.Conv3RowsFlipped(out[clo:chi], d0[j0:], d1[j0:], d2[j0:], wk)
					continue
				}
				for iw := clo; iw < chi; iw++ {
					j := iw + g.PadW - 2 // dy column under kernel column 2
					a, b, c := d0[j:j+3:j+3], d1[j:j+3:j+3], d2[j:j+3:j+3]
					var acc float32
					acc += float32(w0 * a[2])
					acc += float32(w1 * a[1])
					acc += float32(w2 * a[0])
					acc += float32(w3 * b[2])
					acc += float32(w4 * b[1])
					acc += float32(w5 * b[0])
					acc += float32(w6 * c[2])
					acc += float32(w7 * c[1])
					acc += float32(w8 * c[0])
					out[iw] = acc
				}
			}
		}
	}
}

// depthwise3x3BackwardFilter is depthwiseBackwardFilter for 3×3 kernels:
// one pass over each plane feeds the nine taps' sums at once, added to dW
// once per sample as in the general loop, in the general loop's order
// (strides 1 and 2 go to depthwise3x3PaddedFilter instead). dw: K×1×3×3;
// output channels [klo, khi).
func (g *convGeom) depthwise3x3BackwardFilter(dw, dy, x []float32, klo, khi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	clo, chi := g.dw3Cols()
	clear(dw[klo*9 : khi*9])
	for n := 0; n < g.N; n++ {
		for k := klo; k < khi; k++ {
			dyk := dy[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			xc := x[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			var acc [9]float32
			g.dw3FilterPlane(&acc, dyk, xc, clo, chi)
			dwk := dw[k*9 : k*9+9]
			for t, v := range acc {
				dwk[t] += v
			}
		}
	}
}

// dw3FilterPlane sums one plane's filter gradient into acc, each tap's sum
// over its outputs in row-major order: per row the left edge, the interior
// (nine taps in registers), the right edge.
func (g *convGeom) dw3FilterPlane(acc *[9]float32, dyk, xc []float32, clo, chi int) {
	sw := g.StrideW
	for oh := 0; oh < g.OH; oh++ {
		src := dyk[oh*g.OW : (oh+1)*g.OW]
		ih := oh*g.StrideH - g.PadH
		g.dw3FilterCols(acc, src, xc, oh, 0, clo)
		if ih < 0 || ih+2 >= g.H {
			// A top or bottom row: a pass per kernel row inside.
			for r := max(-ih, 0); r < min(g.H-ih, 3); r++ {
				xr := xc[(ih+r)*g.W : (ih+r+1)*g.W]
				b0, b1, b2 := acc[r*3], acc[r*3+1], acc[r*3+2]
				i := clo*sw - g.PadW
				for ow := clo; ow < chi; ow++ {
					d := src[ow]
					a := xr[i : i+3 : i+3]
					b0 += float32(d * a[0])
					b1 += float32(d * a[1])
					b2 += float32(d * a[2])
					i += sw
				}
				acc[r*3], acc[r*3+1], acc[r*3+2] = b0, b1, b2
			}
			g.dw3FilterCols(acc, src, xc, oh, chi, g.OW)
			continue
		}
		x0 := xc[ih*g.W : (ih+1)*g.W]
		x1 := xc[(ih+1)*g.W : (ih+2)*g.W]
		x2 := xc[(ih+2)*g.W : (ih+3)*g.W]
		a0, a1, a2, a3, a4, a5, a6, a7, a8 := acc[0], acc[1], acc[2], acc[3], acc[4], acc[5], acc[6], acc[7], acc[8]
		i := clo*sw - g.PadW
		for ow := clo; ow < chi; ow++ {
			d := src[ow]
			a, b, c := x0[i:i+3:i+3], x1[i:i+3:i+3], x2[i:i+3:i+3]
			a0 += float32(d * a[0])
			a1 += float32(d * a[1])
			a2 += float32(d * a[2])
			a3 += float32(d * b[0])
			a4 += float32(d * b[1])
			a5 += float32(d * b[2])
			a6 += float32(d * c[0])
			a7 += float32(d * c[1])
			a8 += float32(d * c[2])
			i += sw
		}
		*acc = [9]float32{a0, a1, a2, a3, a4, a5, a6, a7, a8}
		g.dw3FilterCols(acc, src, xc, oh, chi, g.OW)
	}
}

// dw3FilterCols adds output row oh's columns [lo, hi) to the tap sums
// through the general tap loop (the edges of the plane).
func (g *convGeom) dw3FilterCols(acc *[9]float32, src, xc []float32, oh, lo, hi int) {
	for ow := lo; ow < hi; ow++ {
		d := src[ow]
		for r := 0; r < 3; r++ {
			ih := oh*g.StrideH - g.PadH + r
			if ih < 0 || ih >= g.H {
				continue
			}
			for s := 0; s < 3; s++ {
				iw := ow*g.StrideW - g.PadW + s
				if iw < 0 || iw >= g.W {
					continue
				}
				acc[r*3+s] += float32(d * xc[ih*g.W+iw])
			}
		}
	}
}
