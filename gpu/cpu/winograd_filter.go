package cpu

import (
	"github.com/cotrain/cotrain/gpu/internal/sgemm"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// The filter gradient of a Winograd convolution, F(2×2, 3×3) turned around.
//
// The forward pass computes each 2×2 output tile as y_t = Aᵀ[U ⊙ V_t]A with
// U = G·g·Gᵀ and V_t = Bᵀ·d_t·B, linear in the filter g, so its adjoint is
//
//	dg = Gᵀ·dU·G,   dU[e] = Σ over tiles t of (A·dy_t·Aᵀ)[e] · V_t[e]
//
// (Lavin and Gray's section 5). For every element e of the 4×4 tile the sum
// over tiles and the batch is one matrix product, dU[e] (K×C) = DY[e] (K×T)
// · V[e]ᵀ (T×C): 16 products T deep where im2col's is one product 9·T·4
// deep (each tile has four outputs), 2.25 times fewer multiply-adds. The
// transforms: V is the forward pass's input transform (winoIn), DY the
// output tiles of dy (zero past the plane's edge) through A·dy·Aᵀ, which
// only adds, subtracts and negates; Gᵀ·dU·G halves sums exactly, so as in
// the forward pass only the products' rounding differs from im2col's
// (TestWinogradAgainstNaive bounds it: at most 1.8e-7 of Σ|term|).
//
// The batch is cut into groups of samples, about winoFilterCols tiles a
// group, at bounds fixed by N and the tile count alone; a group's tiles are
// transformed side by side and its 16 products accumulate into dU (sgemm
// splits each over blocks of dU, never over its depth), so dW has the same
// bits at any thread count. The transforms run on the calling thread; both
// are vec's loops over a channel's whole plane of tiles (winoIn, winoDy),
// except on the small planes where winoIn's per-tile loop wins.

// winoFilterCols is about the number of tile columns of one group's
// products: the group's transformed tiles (16·(C+K)·cols floats) then stay
// in the cache between their transforms and the products that read them.
const winoFilterCols = 144

// winoFilterGroups returns how many groups of samples the Winograd filter
// gradient of g cuts its batch into.
func (g *convGeom) winoFilterGroups() int {
	tr, tc := winoTiles(g.OH, g.OW)
	return max(1, min(g.N, (g.N*tr*tc+winoFilterCols-1)/winoFilterCols))
}

// winoFilter computes dW (K×C×3×3) of a Winograd convolution from dy and x.
func (c *CPU) winoFilter(g *convGeom, dw, dy, x []float32) {
	tr, tc := winoTiles(g.OH, g.OW)
	nt, chw, khw, kc := tr*tc, g.C*g.H*g.W, g.K*g.OH*g.OW, g.K*g.C
	groups := g.winoFilterGroups()
	c.winoU = grow32(c.winoU, 16*kc)
	du := c.winoU
	for gi := 0; gi < groups; gi++ {
		lo, hi := gi*g.N/groups, (gi+1)*g.N/groups
		ld := (hi - lo) * nt
		c.winoV, c.winoM = grow32(c.winoV, 16*g.C*ld), grow32(c.winoM, 16*g.K*ld)
		for n := lo; n < hi; n++ {
			off := (n - lo) * nt
			if nt < winoBatchTiles {
				winoInTiles(&c.th, c.winoV, ld, off, x[n*chw:(n+1)*chw], g.C, g.H, g.W, tr, tc, g.PadH, g.PadW)
			} else {
				winoIn(&c.th, c.winoV, ld, off, x[n*chw:(n+1)*chw], g.C, g.H, g.W, tr, tc, g.PadH, g.PadW)
			}
			winoDy(&c.th, c.winoM, ld, off, dy[n*khw:(n+1)*khw], g.K, g.OH, g.OW, tr, tc)
		}
		beta := float32(1)
		if gi == 0 {
			beta = 0
		}
		cv, kv := g.C*ld, g.K*ld
		for e := range 16 {
			c.th.GemmParallel(false, true, g.K, g.C, ld, 1, c.winoM[e*kv:(e+1)*kv], ld, c.winoV[e*cv:(e+1)*cv], ld,
				beta, du[e*kc:(e+1)*kc], g.C)
		}
	}
	winoFilterOut(dw, du, kc)
}

// winoDy transforms the output gradient of one sample, dy (k×oh×ow), into
// DY: DY[e] is k×ld, the sample's tile t in column off+t. Tile (ty, tx) is
// dy's rows 2ty, 2ty+1 and columns 2tx, 2tx+1 (zero past the plane); A·dy
// turns its two rows into (r0, r0+r1, r0-r1, -r1), and ·Aᵀ each row (p, q)
// into (p, p+q, p-q, -q): both passes are vec.WinoDy, over all of a
// channel's tiles at once (as winoIn, on the plane split by row and column
// parity). th's scratch slot 3 holds the planes.
func winoDy(th *sgemm.Thread, m []float32, ld, off int, dy []float32, k, oh, ow, tr, tc int) {
	nt := tr * tc
	tmp := th.Floats(3, 12*nt)
	var d [2][2][]float32 // dy at row 2ty+p, column 2tx+q
	for i := range 4 {
		d[i>>1][i&1] = tmp[i*nt : (i+1)*nt]
	}
	var r [2][4][]float32 // A·dy for the even and odd columns
	for i := range 8 {
		r[i>>2][i&3] = tmp[(4+i)*nt : (5+i)*nt]
	}
	kn := k * ld
	for k0 := 0; k0 < k; k0++ {
		dk := dy[k0*oh*ow : (k0+1)*oh*ow]
		for ty := 0; ty < tr; ty++ {
			for p := range 2 {
				e, o := d[p][0][ty*tc:(ty+1)*tc], d[p][1][ty*tc:(ty+1)*tc]
				yy := 2*ty + p
				if yy >= oh {
					clear(e)
					clear(o)
					continue
				}
				row := dk[yy*ow : (yy+1)*ow]
				tx := 0
				for ; 2*tx+1 < ow; tx++ {
					e[tx], o[tx] = row[2*tx], row[2*tx+1]
				}
				if 2*tx < ow {
					e[tx], o[tx] = row[2*tx], 0
				}
			}
		}
		for q := range 2 {
			vec.WinoDy(r[q], d[0][q], d[1][q])
		}
		at := k0*ld + off
		for i := range 4 {
			vec.WinoDy([4][]float32{m[4*i*kn+at : 4*i*kn+at+nt], m[(4*i+1)*kn+at : (4*i+1)*kn+at+nt],
				m[(4*i+2)*kn+at : (4*i+2)*kn+at+nt], m[(4*i+3)*kn+at : (4*i+3)*kn+at+nt]}, r[0][i], r[1][i])
		}
	}
}

// winoFilterOut writes dW (kc filters of 3×3) = Gᵀ·dU·G from du, where
// dU[e] holds element e of every filter's 4×4 (kc floats apart). Gᵀ turns
// a column (u0, u1, u2, u3) into (u0 + (u1+u2)/2, (u1-u2)/2, (u1+u2)/2 + u3);
// the halvings are exact and rounded on their own (never fused into the
// sums).
func winoFilterOut(dw, du []float32, kc int) {
	for f := 0; f < kc; f++ {
		var u [16]float32
		for e := range 16 {
			u[e] = du[e*kc+f]
		}
		var t [12]float32 // Gᵀ·dU: 3×4
		for j := range 4 {
			u0, u1, u2, u3 := u[j], u[4+j], u[8+j], u[12+j]
			s := float32(0.5 * (u1 + u2))
			t[j], t[4+j], t[8+j] = u0+s, float32(0.5*(u1-u2)), s+u3
		}
		o := dw[f*9 : f*9+9 : f*9+9]
		for i := range 3 {
			u0, u1, u2, u3 := t[4*i], t[4*i+1], t[4*i+2], t[4*i+3]
			s := float32(0.5 * (u1 + u2))
			o[3*i], o[3*i+1], o[3*i+2] = u0+s, float32(0.5*(u1-u2)), s+u3
		}
	}
}
