package gpu

import (
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// The stride-1 3×3 depthwise convolution over zero-padded planes.
//
// MobileNet's later layers work on planes of 8×8 and 4×4, where most
// outputs touch the padding: the per-row kernels of cpu_depthwise.go spend
// their time on edge cases there. Here each plane is first copied into
// scratch with its padding written as zeros, rows Wp = W+2·PadW apart; an
// output (oh, ow) then reads the padded plane at (oh+r)·Wp + ow+s, a fixed
// offset per tap, so the whole plane is one flat row of the vector kernels
// of package vec (the two columns at the end of each flat row, which wrap
// into the next, are computed and dropped).
//
// A tap over the padding adds w·0 where the general loop adds nothing. The
// sum starts at +0 and a round-to-nearest sum is never -0 unless both its
// terms are, so adding ±0 leaves it unchanged: the outputs have the general
// loop's bits (TestDepthwise3x3SameBits) as long as the weights are finite
// (an infinite or NaN weight times a padding zero is NaN; the loss is then
// not finite anyway). The filter gradient adds the same kind of zeros
// (output gradients of the dropped columns) into its 16-lane sums.
//
// Scratch: slot 1 of the executing thread holds the padded plane, slot 2
// the flat output (or, for the filter gradient, the widened output
// gradient).

// dw3Padded reports whether the padded kernels apply: 3×3, stride 1.
func (g *ConvGeom) dw3Padded() bool {
	return g.dw3() && g.StrideH == 1 && g.StrideW == 1
}

// padPlane copies the h×w plane src into dst, rows wp apart, with pt rows
// and pl columns of zeros before it and zeros around it up to dst's end.
func padPlane(dst, src []float32, h, w, wp, pt, pl int) {
	clear(dst)
	vec.CopyRows(dst[pt*wp+pl:], wp, src, w, h, w)
}

// depthwise3x3PaddedForward is depthwiseForward for dw3Padded geometries,
// samples [lo, hi), on thread th.
func (g *ConvGeom) depthwise3x3PaddedForward(th *sgemm.Thread, y, x, w []float32, lo, hi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	wp := g.W + 2*g.PadW // = OW + 2
	hp := g.H + 2*g.PadH // = OH + 2
	n := (g.OH-1)*wp + g.OW
	pad, out := th.Floats(1, hp*wp), th.Floats(2, n)
	for s := lo; s < hi; s++ {
		for k := 0; k < g.K; k++ {
			if k%m == 0 {
				c := k / m
				padPlane(pad, x[(s*g.C+c)*hw:(s*g.C+c+1)*hw], g.H, g.W, wp, g.PadH, g.PadW)
			}
			vec.Conv3Rows(out, pad, pad[wp:], pad[2*wp:], w[k*9:k*9+9])
			vec.CopyRows(y[(s*g.K+k)*ohw:], g.OW, out, wp, g.OH, g.OW)
		}
	}
}

// dw3PaddedData reports whether depthwise3x3PaddedData applies: one output
// channel per input channel and padding of at most 2 (the output gradient
// is padded by 2-PadH and 2-PadW).
func (g *ConvGeom) dw3PaddedData() bool {
	return g.dw3Padded() && g.K == g.C && g.PadH <= 2 && g.PadW <= 2
}

// depthwise3x3PaddedData is depthwiseBackwardData for dw3PaddedData
// geometries: dx(ih, iw) = Σ w[r, s]·dy(ih+PadH-r, iw+PadW-s) over the
// output gradient padded to (H+2)×(W+2), samples [lo, hi).
func (g *ConvGeom) depthwise3x3PaddedData(th *sgemm.Thread, dx, dy, w []float32, lo, hi int) {
	ohw, hw := g.OH*g.OW, g.H*g.W
	wp := g.W + 2
	n := (g.H-1)*wp + g.W
	pad, out := th.Floats(1, (g.H+2)*wp), th.Floats(2, n)
	for s := lo; s < hi; s++ {
		for c := 0; c < g.C; c++ {
			padPlane(pad, dy[(s*g.C+c)*ohw:(s*g.C+c+1)*ohw], g.OH, g.OW, wp, 2-g.PadH, 2-g.PadW)
			// Kernel row r reads padded row ih+2-r.
			vec.Conv3RowsFlipped(out, pad[2*wp:], pad[wp:], pad, w[c*9:c*9+9])
			vec.CopyRows(dx[(s*g.C+c)*hw:], g.W, out, wp, g.H, g.W)
		}
	}
}

// depthwise3x3PaddedFilter is depthwiseBackwardFilter for dw3Padded
// geometries, output channels [klo, khi): per sample and channel, the
// output gradient widened to rows of Wp (zeros in the two extra columns)
// runs against the padded input shifted by each tap, into 16-lane partial
// sums per tap (vec.Conv3RowFilter, lane = flat index mod 16); each tap's
// lanes are then added pairwise (8 apart, then 4, 2, 1) and the result to
// dW. The order is fixed by the geometry alone.
func (g *ConvGeom) depthwise3x3PaddedFilter(th *sgemm.Thread, dw, dy, x []float32, klo, khi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	wp := g.W + 2*g.PadW
	hp := g.H + 2*g.PadH
	n := (g.OH-1)*wp + g.OW
	pad, wide := th.Floats(1, hp*wp), th.Floats(2, n)
	clear(dw[klo*9 : khi*9])
	for s := 0; s < g.N; s++ {
		for k := klo; k < khi; k++ {
			c := k / m
			padPlane(pad, x[(s*g.C+c)*hw:(s*g.C+c+1)*hw], g.H, g.W, wp, g.PadH, g.PadW)
			padPlane(wide[:n], dy[(s*g.K+k)*ohw:(s*g.K+k+1)*ohw], g.OH, g.OW, wp, 0, 0)
			var lanes [9 * 16]float32
			for r := 0; r < 3; r++ {
				vec.Conv3RowFilter(lanes[r*48:r*48+48], wide[:n], pad[r*wp:])
			}
			dwk := dw[k*9 : k*9+9]
			for t := range dwk {
				l := lanes[t*16 : t*16+16]
				for step := 8; step >= 1; step /= 2 {
					for j := 0; j < step; j++ {
						l[j] += l[j+step]
					}
				}
				dwk[t] += l[0]
			}
		}
	}
}
