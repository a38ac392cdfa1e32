package gpu

import (
	"fmt"
)

// Convolution on the CPU.
//
// The general path lowers each sample and group to a matrix product
// (im2col + Gemm, as Caffe does): the column matrix col is (C/G·R·S)×(OH·OW),
// row (c·R+r)·S+s holding the input pixel under kernel tap (c, r, s) for every
// output position (zero where the tap falls on padding). Then
//
//	forward:         y_g  = W_g · col                 (K/G × OH·OW)
//	backward data:   col  = W_gᵀ · dy_g, then col2im  (summed into dx)
//	backward filter: dW_g += dy_g · colᵀ              (over the batch)
//
// The column matrix lives in the caller's workspace (ConvWorkspace), so a
// call allocates nothing. A 1×1 convolution of stride 1 without padding needs
// no lowering at all: its column matrix is the input itself.
//
// The products go through gemm, Gemm's arithmetic on host slices: boxing
// every per-sample, per-group slice into a Buffer for Gemm costs three heap
// allocations per product (the boxes escape into gonum's parallel blocks),
// thousands per training step.
//
// Depthwise convolution (Groups == C) has a column matrix R·S times larger
// than its input for a product of a single row, so it runs as a direct loop.

// ConvWorkspace implements Backend: one sample's and one group's column matrix.
func (*CPU) ConvWorkspace(g ConvGeom) int {
	if g.depthwise() || g.pointwise() {
		return 0
	}
	return g.colRows() * g.OH * g.OW
}

func (g *ConvGeom) groups() int { return max(g.Groups, 1) }

// depthwise reports whether every group has one input channel.
func (g *ConvGeom) depthwise() bool { return g.groups() == g.C && g.C > 1 }

// pointwise reports whether the column matrix equals the input.
func (g *ConvGeom) pointwise() bool {
	return g.R == 1 && g.S == 1 && g.StrideH == 1 && g.StrideW == 1 && g.PadH == 0 && g.PadW == 0
}

// colRows is the number of rows of the column matrix: C/G·R·S.
func (g *ConvGeom) colRows() int { return g.C / g.groups() * g.R * g.S }

// check panics unless the buffers have the geometry's sizes (our own bug).
func (g *ConvGeom) check(op string, x, w, y, bias, ws []float32) {
	okBias := bias == nil || len(bias) == g.K
	if len(x) != g.N*g.C*g.H*g.W || len(w) != g.K*g.colRows() || len(y) != g.N*g.K*g.OH*g.OW || !okBias ||
		g.OH <= 0 || g.OW <= 0 {
		panic(fmt.Sprintf("gpu: %s: buffers x %d, w %d, y %d, bias %d do not fit %+v", op, len(x), len(w), len(y), len(bias), *g))
	}
	if !g.depthwise() && !g.pointwise() && len(ws) < g.colRows()*g.OH*g.OW {
		panic(fmt.Sprintf("gpu: %s: workspace of %d elements, need %d", op, len(ws), g.colRows()*g.OH*g.OW))
	}
}

// span returns the output positions [lo, hi) whose input index
// o·stride - pad + tap falls inside [0, in).
func span(out, stride, pad, tap, in int) (lo, hi int) {
	// o·stride >= pad - tap  and  o·stride <= in - 1 + pad - tap
	lo = min(max(ceilDiv(pad-tap, stride), 0), out)
	hi = min(floorDiv(in-1+pad-tap, stride)+1, out)
	return lo, max(hi, lo)
}

func floorDiv(a, b int) int {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

func ceilDiv(a, b int) int { return -floorDiv(-a, b) }

// im2col writes the column matrix of one sample's group: x is Cg×H×W.
func (g *ConvGeom) im2col(col, x []float32) {
	cg, ohw := g.C/g.groups(), g.OH*g.OW
	for c := 0; c < cg; c++ {
		xc := x[c*g.H*g.W : (c+1)*g.H*g.W]
		for r := 0; r < g.R; r++ {
			hlo, hhi := span(g.OH, g.StrideH, g.PadH, r, g.H)
			for s := 0; s < g.S; s++ {
				row := col[((c*g.R+r)*g.S+s)*ohw : ((c*g.R+r)*g.S+s+1)*ohw]
				wlo, whi := span(g.OW, g.StrideW, g.PadW, s, g.W)
				clear(row[:hlo*g.OW])
				clear(row[hhi*g.OW:])
				for oh := hlo; oh < hhi; oh++ {
					out := row[oh*g.OW : (oh+1)*g.OW]
					in := xc[(oh*g.StrideH-g.PadH+r)*g.W:]
					clear(out[:wlo])
					clear(out[whi:])
					iw := wlo*g.StrideW - g.PadW + s
					if g.StrideW == 1 {
						copy(out[wlo:whi], in[iw:])
						continue
					}
					for ow := wlo; ow < whi; ow++ {
						out[ow] = in[iw]
						iw += g.StrideW
					}
				}
			}
		}
	}
}

// col2im adds the column matrix back into one sample's group dx (Cg×H×W).
func (g *ConvGeom) col2im(dx, col []float32) {
	cg, ohw := g.C/g.groups(), g.OH*g.OW
	for c := 0; c < cg; c++ {
		dxc := dx[c*g.H*g.W : (c+1)*g.H*g.W]
		for r := 0; r < g.R; r++ {
			hlo, hhi := span(g.OH, g.StrideH, g.PadH, r, g.H)
			for s := 0; s < g.S; s++ {
				row := col[((c*g.R+r)*g.S+s)*ohw:]
				wlo, whi := span(g.OW, g.StrideW, g.PadW, s, g.W)
				for oh := hlo; oh < hhi; oh++ {
					src := row[oh*g.OW : (oh+1)*g.OW]
					dst := dxc[(oh*g.StrideH-g.PadH+r)*g.W:]
					iw := wlo*g.StrideW - g.PadW + s
					for ow := wlo; ow < whi; ow++ {
						dst[iw] += src[ow]
						iw += g.StrideW
					}
				}
			}
		}
	}
}

// ConvForward implements Backend.
func (c *CPU) ConvForward(g ConvGeom, y, x, w, bias, ws Buffer) {
	ys, xs, wsl, bs, col := h(y), h(x), h(w), h(bias), h(ws)
	g.check("ConvForward", xs, wsl, ys, bs, col)
	if g.depthwise() {
		g.depthwiseForward(ys, xs, wsl)
	} else {
		grp := g.groups()
		cg, kg, rows, ohw := g.C/grp, g.K/grp, g.colRows(), g.OH*g.OW
		for n := 0; n < g.N; n++ {
			for gi := 0; gi < grp; gi++ {
				xg := xs[(n*g.C+gi*cg)*g.H*g.W : (n*g.C+(gi+1)*cg)*g.H*g.W]
				cm := xg
				if !g.pointwise() {
					cm = col[:rows*ohw]
					g.im2col(cm, xg)
				}
				yg := ys[(n*g.K+gi*kg)*ohw : (n*g.K+(gi+1)*kg)*ohw]
				c.gemm(false, false, kg, ohw, rows, 1, wsl[gi*kg*rows:(gi+1)*kg*rows], cm, 0, yg)
			}
		}
	}
	if bs != nil {
		c.AddBias(y, bias, g.N, g.K, g.OH*g.OW)
	}
}

// ConvBackwardData implements Backend.
func (c *CPU) ConvBackwardData(g ConvGeom, dx, dy, w, ws Buffer) {
	dxs, dys, wsl, col := h(dx), h(dy), h(w), h(ws)
	g.check("ConvBackwardData", dxs, wsl, dys, nil, col)
	if g.depthwise() {
		g.depthwiseBackwardData(dxs, dys, wsl)
		return
	}
	grp := g.groups()
	cg, kg, rows, ohw := g.C/grp, g.K/grp, g.colRows(), g.OH*g.OW
	if !g.pointwise() {
		clear(dxs)
	}
	for n := 0; n < g.N; n++ {
		for gi := 0; gi < grp; gi++ {
			dxg := dxs[(n*g.C+gi*cg)*g.H*g.W : (n*g.C+(gi+1)*cg)*g.H*g.W]
			cm := dxg
			if !g.pointwise() {
				cm = col[:rows*ohw]
			}
			dyg := dys[(n*g.K+gi*kg)*ohw : (n*g.K+(gi+1)*kg)*ohw]
			c.gemm(true, false, rows, ohw, kg, 1, wsl[gi*kg*rows:(gi+1)*kg*rows], dyg, 0, cm)
			if !g.pointwise() {
				g.col2im(dxg, cm)
			}
		}
	}
}

// ConvBackwardFilter implements Backend.
func (c *CPU) ConvBackwardFilter(g ConvGeom, dw, dbias, dy, x, ws Buffer) {
	dws, dbs, dys, xs, col := h(dw), h(dbias), h(dy), h(x), h(ws)
	g.check("ConvBackwardFilter", xs, dws, dys, dbs, col)
	if dbs != nil {
		c.BiasGrad(dbias, dy, g.N, g.K, g.OH*g.OW)
	}
	if g.depthwise() {
		g.depthwiseBackwardFilter(dws, dys, xs)
		return
	}
	grp := g.groups()
	cg, kg, rows, ohw := g.C/grp, g.K/grp, g.colRows(), g.OH*g.OW
	for n := 0; n < g.N; n++ {
		beta := float32(1)
		if n == 0 {
			beta = 0
		}
		for gi := 0; gi < grp; gi++ {
			xg := xs[(n*g.C+gi*cg)*g.H*g.W : (n*g.C+(gi+1)*cg)*g.H*g.W]
			cm := xg
			if !g.pointwise() {
				cm = col[:rows*ohw]
				g.im2col(cm, xg)
			}
			dyg := dys[(n*g.K+gi*kg)*ohw : (n*g.K+(gi+1)*kg)*ohw]
			c.gemm(false, true, kg, rows, ohw, 1, dyg, cm, beta, dws[gi*kg*rows:(gi+1)*kg*rows])
		}
	}
}

// The depthwise loops: output channel k reads input channel k/m, where
// m = K/C is the channel multiplier, through its own R×S filter.

func (g *ConvGeom) depthwiseForward(y, x, w []float32) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	for n := 0; n < g.N; n++ {
		for k := 0; k < g.K; k++ {
			yk := y[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			xc := x[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			wk := w[k*g.R*g.S : (k+1)*g.R*g.S]
			clear(yk)
			for r := 0; r < g.R; r++ {
				hlo, hhi := span(g.OH, g.StrideH, g.PadH, r, g.H)
				for s := 0; s < g.S; s++ {
					wlo, whi := span(g.OW, g.StrideW, g.PadW, s, g.W)
					wv := wk[r*g.S+s]
					for oh := hlo; oh < hhi; oh++ {
						out := yk[oh*g.OW : (oh+1)*g.OW]
						in := xc[(oh*g.StrideH-g.PadH+r)*g.W:]
						iw := wlo*g.StrideW - g.PadW + s
						for ow := wlo; ow < whi; ow++ {
							out[ow] += wv * in[iw]
							iw += g.StrideW
						}
					}
				}
			}
		}
	}
}

func (g *ConvGeom) depthwiseBackwardData(dx, dy, w []float32) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	clear(dx)
	for n := 0; n < g.N; n++ {
		for k := 0; k < g.K; k++ {
			dyk := dy[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			dxc := dx[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			wk := w[k*g.R*g.S : (k+1)*g.R*g.S]
			for r := 0; r < g.R; r++ {
				hlo, hhi := span(g.OH, g.StrideH, g.PadH, r, g.H)
				for s := 0; s < g.S; s++ {
					wlo, whi := span(g.OW, g.StrideW, g.PadW, s, g.W)
					wv := wk[r*g.S+s]
					for oh := hlo; oh < hhi; oh++ {
						src := dyk[oh*g.OW : (oh+1)*g.OW]
						dst := dxc[(oh*g.StrideH-g.PadH+r)*g.W:]
						iw := wlo*g.StrideW - g.PadW + s
						for ow := wlo; ow < whi; ow++ {
							dst[iw] += wv * src[ow]
							iw += g.StrideW
						}
					}
				}
			}
		}
	}
}

func (g *ConvGeom) depthwiseBackwardFilter(dw, dy, x []float32) {
	m, ohw, hw := g.K/g.C, g.OH*g.OW, g.H*g.W
	clear(dw)
	for n := 0; n < g.N; n++ {
		for k := 0; k < g.K; k++ {
			dyk := dy[(n*g.K+k)*ohw : (n*g.K+k+1)*ohw]
			xc := x[(n*g.C+k/m)*hw : (n*g.C+k/m+1)*hw]
			dwk := dw[k*g.R*g.S : (k+1)*g.R*g.S]
			for r := 0; r < g.R; r++ {
				hlo, hhi := span(g.OH, g.StrideH, g.PadH, r, g.H)
				for s := 0; s < g.S; s++ {
					wlo, whi := span(g.OW, g.StrideW, g.PadW, s, g.W)
					var sum float32
					for oh := hlo; oh < hhi; oh++ {
						src := dyk[oh*g.OW : (oh+1)*g.OW]
						in := xc[(oh*g.StrideH-g.PadH+r)*g.W:]
						iw := wlo*g.StrideW - g.PadW + s
						for ow := wlo; ow < whi; ow++ {
							sum += src[ow] * in[iw]
							iw += g.StrideW
						}
					}
					dwk[r*g.S+s] += sum
				}
			}
		}
	}
}
