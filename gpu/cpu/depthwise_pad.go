package cpu

import (
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// The 3×3 depthwise convolution over zero-padded planes, stride 1 or 2.
//
// MobileNet's later layers work on planes of 8×8 and 4×4, where most
// outputs touch the padding: the per-row kernels of depthwise.go spend
// their time on edge cases there. Here each plane is first copied into
// scratch with its padding written as zeros, rows Wp = W+2·PadW apart; an
// output (oh, ow) then reads the padded plane at (oh+r)·Wp + ow+s, a fixed
// offset per tap, so the whole plane is one flat row of the vector kernels
// of package vec (the two columns at the end of each flat row, which wrap
// into the next, are computed and dropped). At stride 2 the forward pass
// computes the stride-1 outputs of every other row and keeps every other
// column, and the gradients spread the output gradient onto the stride-1
// grid with zeros between: a few times the products, sixteen at a time.
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

// dw3Padded reports whether the padded kernels apply: 3×3, stride 1 or 2
// (the same along both axes), a padded plane at least as large as the
// kernel.
func (g *convGeom) dw3Padded() bool {
	return g.dw3() && g.StrideH == g.StrideW && (g.StrideH == 1 || g.StrideH == 2) &&
		g.H+2*g.PadH >= 3 && g.W+2*g.PadW >= 3
}

// scatter2 writes the h×w plane src into dst at every other row and column
// from (pt, pl), rows wp apart: what the stride-2 gradients see as the
// output gradient on the stride-1 grid, zeros between. dst is cleared
// first.
func scatter2(dst, src []float32, h, w, wp, pt, pl int) {
	clear(dst)
	for i := 0; i < h; i++ {
		row, d := src[i*w:(i+1)*w], dst[(pt+2*i)*wp+pl:]
		for j, v := range row {
			d[2*j] = v
		}
	}
}

// padPlane copies the h×w plane src into dst, rows wp apart, with pt rows
// and pl columns of zeros before it and zeros around it up to dst's end.
func padPlane(dst, src []float32, h, w, wp, pt, pl int) {
	clear(dst)
	vec.CopyRows(dst[pt*wp+pl:], wp, src, w, h, w)
}

// depthwise3x3PaddedForward is depthwiseForward for dw3Padded geometries,
// samples [lo, hi), on thread th. At stride 2 it computes the stride-1
// outputs of the rows it needs (twice the columns it keeps: still far
// fewer instructions than the scalar loop) and keeps every other one.
func (g *convGeom) depthwise3x3PaddedForward(th *sgemm.Thread, y, x, w []float32, lo, hi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	wp := g.W + 2*g.PadW // = OW + 2 at stride 1
	hp := g.H + 2*g.PadH // = OH + 2 at stride 1
	n := (g.OH-1)*wp + g.OW
	if g.StrideH == 2 {
		n = wp - 2 // one row of stride-1 outputs
	}
	pad, out := th.Floats(1, hp*wp), th.Floats(2, n)
	for s := lo; s < hi; s++ {
		for k := 0; k < g.K; k++ {
			if k%m == 0 {
				c := k / m
				padPlane(pad, x[(s*g.C+c)*hw:(s*g.C+c+1)*hw], g.H, g.W, wp, g.PadH, g.PadW)
			}
			wk, yk := w[k*9:k*9+9], y[(s*g.K+k)*ohw:(s*g.K+k+1)*ohw]
			if g.StrideH == 1 {
				vec.Conv3Rows(out, pad, pad[wp:], pad[2*wp:], wk)
				vec.CopyRows(yk, g.OW, out, wp, g.OH, g.OW)
				continue
			}
			for oh := 0; oh < g.OH; oh++ {
				r := pad[2*oh*wp:]
				vec.Conv3Rows(out, r, r[wp:], r[2*wp:], wk)
				yr := yk[oh*g.OW : (oh+1)*g.OW]
				for ow := range yr {
					yr[ow] = out[2*ow]
				}
			}
		}
	}
}

// dw3PaddedData reports whether depthwise3x3PaddedData applies: one output
// channel per input channel and padding of at most 2 (the output gradient
// is padded by 2-PadH and 2-PadW). At stride 2 the output gradient is
// spread onto the stride-1 grid with zeros between (scatter2), which makes
// the input gradient a stride-1 correlation again.
func (g *convGeom) dw3PaddedData() bool {
	return g.dw3Padded() && g.K == g.C && g.PadH <= 2 && g.PadW <= 2
}

// depthwise3x3PaddedData is depthwiseBackwardData for dw3PaddedData
// geometries: dx(ih, iw) = Σ w[r, s]·dy(ih+PadH-r, iw+PadW-s) over the
// output gradient padded to (H+2)×(W+2), samples [lo, hi).
func (g *convGeom) depthwise3x3PaddedData(th *sgemm.Thread, dx, dy, w []float32, lo, hi int) {
	ohw, hw := g.OH*g.OW, g.H*g.W
	wp := g.W + 2
	n := (g.H-1)*wp + g.W
	pad, out := th.Floats(1, (g.H+2)*wp), th.Floats(2, n)
	for s := lo; s < hi; s++ {
		for c := 0; c < g.C; c++ {
			if dyc := dy[(s*g.C+c)*ohw : (s*g.C+c+1)*ohw]; g.StrideH == 1 {
				padPlane(pad, dyc, g.OH, g.OW, wp, 2-g.PadH, 2-g.PadW)
			} else {
				scatter2(pad, dyc, g.OH, g.OW, wp, 2-g.PadH, 2-g.PadW)
			}
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
func (g *convGeom) depthwise3x3PaddedFilter(th *sgemm.Thread, dw, dy, x []float32, klo, khi int) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	wp := g.W + 2*g.PadW
	hp := g.H + 2*g.PadH
	n := (g.OH-1)*wp + g.OW
	if g.StrideH == 2 { // the output gradient on the stride-1 grid (scatter2)
		n = (2*g.OH-2)*wp + 2*g.OW - 1
	}
	pad, wide := th.Floats(1, hp*wp), th.Floats(2, n)
	clear(dw[klo*9 : khi*9])
	for s := 0; s < g.N; s++ {
		for k := klo; k < khi; k++ {
			c := k / m
			padPlane(pad, x[(s*g.C+c)*hw:(s*g.C+c+1)*hw], g.H, g.W, wp, g.PadH, g.PadW)
			if dyk := dy[(s*g.K+k)*ohw : (s*g.K+k+1)*ohw]; g.StrideH == 1 {
				padPlane(wide[:n], dyk, g.OH, g.OW, wp, 0, 0)
			} else {
				scatter2(wide[:n], dyk, g.OH, g.OW, wp, 0, 0)
			}
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
