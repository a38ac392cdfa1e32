package cpu

import (
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// Winograd's F(2×2, 3×3) for the dense 3×3 convolutions of stride 1
// (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// 2016): each 2×2 block of outputs is computed from a 4×4 block of input
// with 16 multiplications per channel pair instead of 36. Per sample:
//
//	V[e] (C×T)  = the input tiles transformed, Bᵀ·d·B, element e of 16
//	M[e] (K×T)  = U[e] (K×C) · V[e]          (16 matrix products)
//	y           = Aᵀ·m·A for every tile, its 2×2 outputs
//
// with T the sample's tiles and U[e] the filters transformed once per call,
// G·g·Gᵀ. The transforms of the input and output are additions and
// subtractions only, and the filter's halvings are exact, so only the
// products round differently from im2col's (the sums are cut into other
// terms); the results differ from im2col's by a few ulps of the terms'
// magnitudes (TestWinogradAgainstNaive bounds it). Every sum has a fixed
// order and the products are sgemm's, so the bits depend neither on the
// thread count nor, within a GEMM family, on the architecture.
//
// Backward data is the same algorithm: dx is the forward convolution of dy
// (K channels, padding 2-p) with the filters turned 180° and transposed
// (C×K), so only the filter transform differs.

// winoMinHW and winoMinChannels are the smallest output plane and channel
// counts where the Winograd path runs (BenchmarkWinograd against im2col):
// a 3×3 output (one full and three half-empty tiles a sample) lost, 6×6 and
// up won.
const (
	winoMinHW       = 16
	winoMinChannels = 16
)

// winograd reports whether g's forward pass takes the Winograd path.
func (g *convGeom) winograd() bool {
	return g.GroupCount() == 1 && g.R == 3 && g.S == 3 && g.StrideH == 1 && g.StrideW == 1 &&
		g.PadH <= 2 && g.PadW <= 2 && g.OH*g.OW >= winoMinHW && g.C >= winoMinChannels && g.K >= winoMinChannels
}

// useWino reports whether c runs g's forward and backward data passes on
// the Winograd path.
func (c *CPU) useWino(g *convGeom) bool { return !c.im2colOnly && g.winograd() }

// winoFilters transforms w (K×C×3×3) into c.wino: U[e] (K×C) packed for
// the micro-kernel. With data set it transforms the backward data filters
// instead: w turned 180° and transposed, U[e] C×K.
func (c *CPU) winoFilters(g *convGeom, w []float32, data bool) {
	rows, cols := g.K, g.C
	if data {
		rows, cols = g.C, g.K
	}
	n := rows * cols
	c.winoU = grow32(c.winoU, 16*n)
	u := c.winoU
	// The loops run in U's row order, so that its stores are sequential
	// (backward data's U is C×K: the filters are read strided instead).
	outer, inner := g.K, g.C
	if data {
		outer, inner = g.C, g.K
	}
	for o := 0; o < outer; o++ {
		for in := 0; in < inner; in++ {
			k, ch := o, in
			if data {
				k, ch = in, o
			}
			f := w[(k*g.C+ch)*9 : (k*g.C+ch+1)*9]
			var r [9]float32
			if data {
				for i := range 9 {
					r[i] = f[8-i]
				}
			} else {
				copy(r[:], f)
			}
			var t [12]float32 // G·g: 4×3
			for j := range 3 {
				g0, g1, g2 := r[j], r[3+j], r[6+j]
				t[j] = g0
				t[3+j] = float32(0.5 * (g0 + g1 + g2))
				t[6+j] = float32(0.5 * (g0 - g1 + g2))
				t[9+j] = g2
			}
			at := k*cols + ch
			if data {
				at = ch*cols + k
			}
			for i := range 4 {
				g0, g1, g2 := t[3*i], t[3*i+1], t[3*i+2]
				u[(4*i+0)*n+at] = g0
				u[(4*i+1)*n+at] = float32(0.5 * (g0 + g1 + g2))
				u[(4*i+2)*n+at] = float32(0.5 * (g0 - g1 + g2))
				u[(4*i+3)*n+at] = g2
			}
		}
	}
	for e := range 16 {
		c.wino[e].Pack(false, rows, cols, u[e*n:(e+1)*n], cols)
	}
}

// grow32 returns s with n elements, reallocated only when too small.
func grow32(s []float32, n int) []float32 {
	if cap(s) < n {
		return make([]float32, n)
	}
	return s[:n]
}

// winoDims returns the Winograd pass's operands for g: the input's
// channels and size, the output's, and the padding. Backward data reads dy
// (K×OH×OW) with padding 2-p and writes dx (C×H×W).
func (g *convGeom) winoDims(data bool) (ch, h, w, k, oh, ow, ph, pw int) {
	if data {
		return g.K, g.OH, g.OW, g.C, g.H, g.W, 2 - g.PadH, 2 - g.PadW
	}
	return g.C, g.H, g.W, g.K, g.OH, g.OW, g.PadH, g.PadW
}

// winoTiles returns the tile rows and columns covering an oh×ow output.
func winoTiles(oh, ow int) (tr, tc int) { return (oh + 1) / 2, (ow + 1) / 2 }

// winoSample computes one sample's convolution y (k×oh×ow) of x (ch×h×w),
// 3×3 filters at stride 1 with padding (ph, pw), from the transformed
// filters c.wino (U[e] k×ch), on thread th with its scratch slots 1 to 3.
func (c *CPU) winoSample(th *sgemm.Thread, y, x []float32, ch, h, w, k, oh, ow, ph, pw int) {
	tr, tc := winoTiles(oh, ow)
	nt := tr * tc
	v, m := th.Floats(1, 16*ch*nt), th.Floats(2, 16*k*nt)
	winoIn(th, v, nt, 0, x, ch, h, w, tr, tc, ph, pw)
	cnt, kn := ch*nt, k*nt
	for e := range 16 {
		th.GemmPacked(&c.wino[e], false, nt, 1, v[e*cnt:(e+1)*cnt], nt, 0, m[e*kn:(e+1)*kn], nt)
	}
	winoOut(th, y, m, nt, 0, k, oh, ow, tr, tc)
}

// winoIn transforms the input tiles of one sample x (ch×h×w) into v: V[e]
// is ch×ld (ch·ld floats), the sample's tile t in column off+t.
//
// It runs a channel at a time, every pass over all of the channel's tiles at
// once, so that the vector loops (vec.WinoIn) run over tr·tc floats rather
// than a row of tiles. Tile (ty, tx) reads the padded input's rows 2ty..2ty+3
// and columns 2tx..2tx+3, so the plane is first split into eight planes of
// tr+1 rows and tc columns, P[p][q][s][ty][tx] = x at row 2ty+p and column
// 2tx+2s+q (p, q: the parities of row and column; s: the tile's left or
// right pair of columns; zero in the padding). Then the row transform Bᵀ·d
// of the four column sets (q, s), whose rows 2ty+i are P[i%2] at tile row
// ty+i/2, one tc-wide row further on; then the column transform ·B of each
// row i, whose columns 2tx+j are the row transform of set (j%2, j/2). The
// sums are those of the per-tile formula in the same order (rows first), so
// the bits do not depend on this arrangement. th's scratch slot 3 holds the
// planes.
func winoIn(th *sgemm.Thread, v []float32, ld, off int, x []float32, ch, h, w, tr, tc, ph, pw int) {
	nt, np := tr*tc, (tr+1)*tc
	tmp := th.Floats(3, 8*np+16*nt)
	var p [2][2][2][]float32 // P[p][q][s]: (tr+1)×tc
	for i := range 8 {
		p[i>>2][(i>>1)&1][i&1] = tmp[i*np : (i+1)*np]
	}
	var a [4][2][2][]float32 // the row transform's output i of column set (q, s): tr×tc
	for i := range 16 {
		a[i>>2][(i>>1)&1][i&1] = tmp[8*np+i*nt : 8*np+(i+1)*nt]
	}
	cnt := ch * ld // elements per V[e]
	for c0 := 0; c0 < ch; c0++ {
		winoSplit(&p, x[c0*h*w:(c0+1)*h*w], h, w, tr, tc, ph, pw)
		for q := range 2 {
			for sd := range 2 {
				d := [4][]float32{p[0][q][sd][:nt], p[1][q][sd][:nt], p[0][q][sd][tc : tc+nt], p[1][q][sd][tc : tc+nt]}
				vec.WinoIn([4][]float32{a[0][q][sd], a[1][q][sd], a[2][q][sd], a[3][q][sd]}, d)
			}
		}
		at := c0*ld + off
		for i := range 4 {
			var o [4][]float32
			for j := range 4 {
				o[j] = v[(4*i+j)*cnt+at : (4*i+j)*cnt+at+nt]
			}
			vec.WinoIn(o, [4][]float32{a[i][0][0], a[i][1][0], a[i][0][1], a[i][1][1]})
		}
	}
}

// winoSplit fills P[p][q][s][ty][tx] with the padded plane x (h×w, padding
// ph and pw) at row 2ty+p and column 2tx+2s+q, zero outside x.
func winoSplit(p *[2][2][2][]float32, x []float32, h, w, tr, tc, ph, pw int) {
	for r := 0; r < 2*tr+2; r++ {
		pr, ty := r&1, r>>1
		e0, o0 := p[pr][0][0][ty*tc:(ty+1)*tc], p[pr][1][0][ty*tc:(ty+1)*tc]
		e1, o1 := p[pr][0][1][ty*tc:(ty+1)*tc], p[pr][1][1][ty*tc:(ty+1)*tc]
		yy := r - ph
		if yy < 0 || yy >= h {
			clear(e0)
			clear(o0)
			clear(e1)
			clear(o1)
			continue
		}
		xr := x[yy*w : (yy+1)*w]
		// Column 2m+q of the padded row (x's column 2m+q-pw), m ≤ tc, is
		// pair m's: the left pair of tile m and the right pair of tile
		// m-1. Inside x (m in [lo, hi)) both columns are read unchecked.
		lo, hi := min((pw+1)/2, tc+1), max(min((w+pw)/2, tc+1), 0)
		lo = min(lo, hi)
		at := func(m int) (e, o float32) {
			if c := 2*m - pw; uint(c) < uint(w) {
				e = xr[c]
			}
			if c := 2*m + 1 - pw; uint(c) < uint(w) {
				o = xr[c]
			}
			return e, o
		}
		for m := 0; m < lo; m++ {
			e, o := at(m)
			winoPair(e0, o0, e1, o1, m, tc, e, o)
		}
		if lo < hi {
			in := xr[2*lo-pw : 2*hi-pw]
			for m := lo; m < hi; m++ {
				e, o := in[2*(m-lo)], in[2*(m-lo)+1]
				if m < tc {
					e0[m], o0[m] = e, o
				}
				if m > 0 {
					e1[m-1], o1[m-1] = e, o
				}
			}
		}
		for m := hi; m <= tc; m++ {
			e, o := at(m)
			winoPair(e0, o0, e1, o1, m, tc, e, o)
		}
	}
}

// winoPair stores pair m (columns 2m and 2m+1 of a padded row) as the left
// pair of tile m and the right pair of tile m-1.
func winoPair(e0, o0, e1, o1 []float32, m, tc int, e, o float32) {
	if m < tc {
		e0[m], o0[m] = e, o
	}
	if m > 0 {
		e1[m-1], o1[m-1] = e, o
	}
}

// winoOut transforms the products m back into one sample's output y
// (k×oh×ow): M[e] is k×ld, the sample's tile t in column off+t. As winoIn,
// an output channel at a time over all of its tiles: Aᵀ·m over each
// element column j (m0+m1+m2 and m1-m2-m3 of M[j], M[4+j], M[8+j],
// M[12+j]), then ·A over each of the two rows, giving output rows 2ty+r
// at even and odd columns, which are interleaved into y and cut to oh×ow.
// th's slot 3 is scratch.
func winoOut(th *sgemm.Thread, y, m []float32, ld, off, k, oh, ow, tr, tc int) {
	nt := tr * tc
	tmp := th.Floats(3, 12*nt)
	var s [2][4][]float32 // row r of Aᵀ·m for element column j
	for i := range 8 {
		s[i>>2][i&3] = tmp[i*nt : (i+1)*nt]
	}
	var eo [2][2][]float32 // output rows 2ty+r, even and odd columns
	for i := range 4 {
		eo[i>>1][i&1] = tmp[(8+i)*nt : (9+i)*nt]
	}
	kn := k * ld
	for k0 := 0; k0 < k; k0++ {
		at := k0*ld + off
		for j := range 4 {
			vec.WinoOut(s[0][j], s[1][j], [4][]float32{m[j*kn+at : j*kn+at+nt], m[(4+j)*kn+at : (4+j)*kn+at+nt],
				m[(8+j)*kn+at : (8+j)*kn+at+nt], m[(12+j)*kn+at : (12+j)*kn+at+nt]})
		}
		for r := range 2 {
			vec.WinoOut(eo[r][0], eo[r][1], s[r])
		}
		yk := y[k0*oh*ow : (k0+1)*oh*ow]
		for oy := 0; oy < oh; oy++ {
			ty, r := oy>>1, oy&1
			ev, od := eo[r][0][ty*tc:(ty+1)*tc], eo[r][1][ty*tc:(ty+1)*tc]
			out := yk[oy*ow : (oy+1)*ow]
			tx := 0
			for ; 2*tx+1 < len(out); tx++ {
				out[2*tx], out[2*tx+1] = ev[tx], od[tx]
			}
			if 2*tx < len(out) {
				out[2*tx] = ev[tx]
			}
		}
	}
}

// winoInTiles is winoIn a row of tiles at a time, for planes of a few
// tiles (the batched path's), where winoIn's passes over a whole plane are
// too short for its vector loops to pay for their calls
// (BenchmarkWinoTransforms: 6×6 outputs, 9 tiles, lost 1.9×); it gives
// winoIn's bits (TestWinoTransformsSameBits). The row transform runs over
// the whole width of four input rows, then the column transform tile by
// tile; th's scratch slot 3 holds the rows.
func winoInTiles(th *sgemm.Thread, v []float32, ld, off int, x []float32, ch, h, w, tr, tc, ph, pw int) {
	wp := 2*tc + 2 // a row of tiles' input width
	tmp := th.Floats(3, 8*wp)
	var rows, a [4][]float32
	for i := range 4 {
		rows[i], a[i] = tmp[i*wp:(i+1)*wp], tmp[(4+i)*wp:(5+i)*wp]
	}
	cnt := ch * ld // elements per V[e]
	for c0 := 0; c0 < ch; c0++ {
		xc := x[c0*h*w : (c0+1)*h*w]
		for ty := 0; ty < tr; ty++ {
			// The four input rows under this row of tiles, zero outside x.
			for i := range 4 {
				r := rows[i]
				clear(r)
				if yy := 2*ty - ph + i; yy >= 0 && yy < h {
					lo, hi := min(pw, wp), min(wp, w+pw) // r[j] is x column j-pw
					if lo < hi {
						copy(r[lo:hi], xc[yy*w+lo-pw:yy*w+hi-pw])
					}
				}
			}
			// Bᵀ·d on the rows: d0-d2, d1+d2, d2-d1, d1-d3.
			r0, r1, r2, r3 := rows[0], rows[1][:wp], rows[2][:wp], rows[3][:wp]
			a0, a1, a2, a3 := a[0][:wp], a[1][:wp], a[2][:wp], a[3][:wp]
			for j := range r0 {
				d0, d1, d2, d3 := r0[j], r1[j], r2[j], r3[j]
				a0[j], a1[j], a2[j], a3[j] = d0-d2, d1+d2, d2-d1, d1-d3
			}
			// ·B on each tile's four columns.
			at := c0*ld + off + ty*tc
			for i := range 4 {
				t := a[i][:wp]
				o0 := v[(4*i+0)*cnt+at : (4*i+0)*cnt+at+tc]
				o1 := v[(4*i+1)*cnt+at : (4*i+1)*cnt+at+tc]
				o2 := v[(4*i+2)*cnt+at : (4*i+2)*cnt+at+tc]
				o3 := v[(4*i+3)*cnt+at : (4*i+3)*cnt+at+tc]
				for tx := range o0 {
					s := t[2*tx : 2*tx+4 : 2*tx+4]
					t0, t1, t2, t3 := s[0], s[1], s[2], s[3]
					o0[tx], o1[tx], o2[tx], o3[tx] = t0-t2, t1+t2, t2-t1, t1-t3
				}
			}
		}
	}
}

// winoOutTiles is winoOut a row of tiles at a time, for the batched path's
// small planes as winoInTiles, with winoOut's bits: Aᵀ·m on a row of tiles
// (m0+m1+m2 and m1-m2-m3 over each element column), then ·A on each tile,
// two output rows of 2·tc, cut to ow. th's slot 3 is scratch.
func winoOutTiles(th *sgemm.Thread, y, m []float32, ld, off, k, oh, ow, tr, tc int) {
	tmp := th.Floats(3, 12*tc)
	out0, out1 := tmp[:2*tc], tmp[2*tc:4*tc]
	var r0, r1 [4][]float32
	for j := range 4 {
		r0[j], r1[j] = tmp[(4+j)*tc:(5+j)*tc], tmp[(8+j)*tc:(9+j)*tc]
	}
	kn := k * ld
	for k0 := 0; k0 < k; k0++ {
		yk := y[k0*oh*ow : (k0+1)*oh*ow]
		for ty := 0; ty < tr; ty++ {
			at := k0*ld + off + ty*tc
			for j := range 4 {
				m0 := m[j*kn+at : j*kn+at+tc]
				m1 := m[(4+j)*kn+at : (4+j)*kn+at+tc]
				m2 := m[(8+j)*kn+at : (8+j)*kn+at+tc]
				m3 := m[(12+j)*kn+at : (12+j)*kn+at+tc]
				s0, s1 := r0[j][:len(m0)], r1[j][:len(m0)]
				for tx, v0 := range m0 {
					v1, v2, v3 := m1[tx], m2[tx], m3[tx]
					s0[tx], s1[tx] = v0+v1+v2, v1-v2-v3
				}
			}
			for i, r := range [2]*[4][]float32{&r0, &r1} {
				oy := 2*ty + i
				if oy >= oh {
					break
				}
				out := out0
				if i == 1 {
					out = out1
				}
				q0, q1, q2, q3 := r[0][:tc], r[1][:tc], r[2][:tc], r[3][:tc]
				for tx := range q0 {
					p1, p2 := q1[tx], q2[tx]
					out[2*tx], out[2*tx+1] = q0[tx]+p1+p2, p1-p2-q3[tx]
				}
				copy(yk[oy*ow:(oy+1)*ow], out[:ow])
			}
		}
	}
}

// winoBatchTiles is the tile count per sample below which the Winograd path
// transforms the whole batch before its 16 products (each then N times
// wider, split over the threads by sgemm) instead of one sample at a time:
// a 6×6 output has 9 tiles, too few columns for a product of its own. The
// micro-kernel's arithmetic does not depend on a column's place, so both
// ways give the same bits.
const winoBatchTiles = 32

// winoBatched reports whether g's Winograd pass runs batched.
func (g *convGeom) winoBatched(data bool) bool {
	_, _, _, _, oh, ow, _, _ := g.winoDims(data)
	tr, tc := winoTiles(oh, ow)
	return tr*tc < winoBatchTiles
}

// winoBatch runs the Winograd pass over the whole batch: the input
// transform split over samples, the 16 products split by sgemm, the output
// transform split over samples. y and x are the whole batch's.
func (c *CPU) winoBatch(g *convGeom, y, x, bias []float32, data bool) {
	ch, h, w, k, oh, ow, _, _ := g.winoDims(data)
	tr, tc := winoTiles(oh, ow)
	ld := g.N * tr * tc
	c.winoV, c.winoM = grow32(c.winoV, 16*ch*ld), grow32(c.winoM, 16*k*ld)
	j := &c.job
	j.op, j.conv, j.x, j.dy, j.batch = opWinoIn, *g, x, c.winoV, boolInt(data)
	c.run(j, g.N, 4*ch*h*w*g.N)
	cnt, kn := ch*ld, k*ld
	for e := range 16 {
		c.th.GemmParallel(false, false, k, ld, ch, 1, c.winoU[e*k*ch:(e+1)*k*ch], ch, c.winoV[e*cnt:(e+1)*cnt], ld, 0, c.winoM[e*kn:(e+1)*kn], ld)
	}
	j.op, j.conv, j.y, j.dy, j.b, j.batch = opWinoOut, *g, y, c.winoM, bias, boolInt(data)
	c.run(j, g.N, 4*k*oh*ow*g.N)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// winoInPart transforms samples [lo, hi) of a batched pass's input x into
// v (the job's dy).
func (g *convGeom) winoInPart(th *sgemm.Thread, v, x []float32, data bool, lo, hi int) {
	ch, h, w, _, oh, ow, ph, pw := g.winoDims(data)
	tr, tc := winoTiles(oh, ow)
	nt := tr * tc
	for n := lo; n < hi; n++ {
		winoInTiles(th, v, g.N*nt, n*nt, x[n*ch*h*w:(n+1)*ch*h*w], ch, h, w, tr, tc, ph, pw)
	}
}

// winoOutPart transforms samples [lo, hi) of a batched pass's products m
// back into y, adding the bias (forward only) after.
func (g *convGeom) winoOutPart(th *sgemm.Thread, y, m, bias []float32, data bool, lo, hi int) {
	_, _, _, k, oh, ow, _, _ := g.winoDims(data)
	tr, tc := winoTiles(oh, ow)
	nt := tr * tc
	for n := lo; n < hi; n++ {
		winoOutTiles(th, y[n*k*oh*ow:(n+1)*k*oh*ow], m, g.N*nt, n*nt, k, oh, ow, tr, tc)
	}
	if bias != nil {
		addBias(y[lo*k*oh*ow:hi*k*oh*ow], bias, hi-lo, k, oh*ow)
	}
}
