//go:build opencl

package opencl

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// Winograd F(2×2, 3×3) for 3×3 stride-1 convolutions (kernels/winograd.cl).
//
// The forward and the data gradient of a 3×3, stride-1, ungrouped
// convolution are both a stride-1 correlation with 3×3 filters:
//
//	forward:        y  = corr(x, w) + bias     padded by PadH, PadW
//	backward data:  dx = corr(dy, w')          padded by 2−PadH, 2−PadW,
//	                w'[c][k] = w[k][c] rotated by 180°
//
// Each runs as an input transform (wino_input: the overlapping 4×4 tiles
// of the input, V = Bᵀ d B), 16 GEMMs on the backend's tuned kernels (one
// per element of a transformed tile: M_ξ = U_ξ · V_ξ), and an output
// transform (wino_output: Y = Aᵀ M A, plus the bias). The 16 products
// run as one launch (winograd.batched): the GEMM kernel's split-k layers
// (gemm.cl) are exactly a batch of products whose A and B are the blocks
// of one wide A and one tall B and whose C lie one after another, which
// is how winograd.cl lays U, V and M out; one launch has 16 times the
// work-groups of each product, which a large GPU needs at these sizes
// (AlexNet's conv3 at batch 32: 384×1568×192 per product). The filters are
// transformed on every call (wino_filter: U = G g Gᵀ, K·C items): the
// weights change every step, and the transform costs a few percent of one
// product. Per 2×2 output tile the products do 16 multiplications per
// channel pair where im2col's GEMM does 36: 2.25 times fewer, less the
// tiles that hang over the plane's edge (1.94 times on 13×13 planes).
//
// V and M live in the workspace, in chunks of as many samples as it holds
// (ConvWorkspace sizes it for both this path and the filter gradient's
// column matrix); U in a scratch buffer the winograd value owns. The filter
// gradient keeps im2col and GEMM. Every value is computed by one item or
// one GEMM in a fixed order, so the results are deterministic; they differ
// from im2col's in the last bits (the transforms round), within the
// backend's tolerance of the CPU's (docs/opencl.md).

// Winograd modes (Config.Winograd, COTRAIN_OPENCL_WINOGRAD).
const (
	WinogradAuto = "auto" // where winoAuto says it wins
	WinogradOn   = "1"    // every 3×3 stride-1 ungrouped convolution (tests, measurements)
	WinogradOff  = "0"    // never
)

// ErrWinograd is returned for an Config.Winograd value that is none
// of the modes.
var ErrWinograd = fmt.Errorf("%w: Winograd mode", gpu.ErrConfig)

// winogradMode checks a mode; "" is WinogradAuto.
func winogradMode(mode string) (string, error) {
	switch mode {
	case "", WinogradAuto:
		return WinogradAuto, nil
	case WinogradOn, WinogradOff:
		return mode, nil
	}
	return "", fmt.Errorf("%w %q: want %s, %s or %s", ErrWinograd, mode, WinogradOff, WinogradOn, WinogradAuto)
}

// winoMaxWork is the largest share of im2col's multiplications that the
// auto mode accepts from the 2×2 tiles: 16 per tile against 9 per output,
// so 0.44 where 2 divides the plane and more where tiles hang over its
// edge (0.52 on 13×13, 0.79 on 3×3, 1.78 on 1×1).
const winoMaxWork = 0.6

// winoEligible reports whether g is a convolution the Winograd kernels
// compute: 3×3 filters, stride 1, one group (ConvGeom has no dilation).
func winoEligible(g gpu.ConvGeom) bool {
	return g.R == 3 && g.S == 3 && g.StrideH == 1 && g.StrideW == 1 && g.GroupCount() == 1
}

// winoTiles is the number of 2×2 tiles covering an h×w plane.
func winoTiles(h, w int) int { return ((h + 1) / 2) * ((w + 1) / 2) }

// winograd is the Winograd algorithm of one backend: its mode, the
// scratch buffer of the transformed filters and the geometries whose
// choice it has logged. The backend launches its kernels and GEMMs.
type winograd struct {
	o    *OpenCL
	mode string // WinogradAuto, WinogradOn or WinogradOff (checked)
	// minChannels is the fewest input and output channels for which the
	// auto mode uses Winograd: each of the 16 products is only as deep as
	// the input channels (the data gradient's, the output channels), where
	// im2col's is 9 times deeper, and shallow products run far below the
	// GEMM's peak.
	minChannels int
	// batched runs the 16 products of a chunk as one launch of the GEMM's
	// split-k layers; false: as 16 products (o.gemm), each choosing its
	// own variant and split. The two give the same bits where the 16
	// products are not split in k (gemmSplits: fewer than 512 input
	// channels, or many blocks of C). Tests and benchmarks turn it off.
	batched bool

	u    *clMem // the transformed filters (filters)
	seen map[gpu.ConvGeom]bool
}

var _ convAlgo = (*winograd)(nil)

// newWinograd returns o's Winograd algorithm in mode (checked by
// winogradMode), with at least 64 channels for auto and batched products.
func newWinograd(o *OpenCL, mode string) *winograd {
	return &winograd{o: o, mode: mode, minChannels: 64, batched: true}
}

// choice says whether g runs Winograd, and why.
func (w *winograd) choice(g *gpu.ConvGeom) (bool, string) {
	switch {
	case !winoEligible(*g):
		return false, "not a 3x3 stride-1 ungrouped convolution"
	case w.o.half:
		// Half storage would round V, M and U to half between the
		// transforms: kept off rather than checked for accuracy.
		return false, "half storage"
	case w.mode == WinogradOff:
		return false, "off (COTRAIN_OPENCL_WINOGRAD=0)"
	case w.mode == WinogradOn:
		return true, "forced (COTRAIN_OPENCL_WINOGRAD=1)"
	case min(g.C, g.K) < w.minChannels:
		return false, fmt.Sprintf("auto: fewer than %d channels", w.minChannels)
	}
	if work := float64(16*winoTiles(g.OH, g.OW)) / float64(9*g.OH*g.OW); work > winoMaxWork {
		return false, fmt.Sprintf("auto: the tiles do %.2f of im2col's multiplications (more than %.2f)", work, winoMaxWork)
	}
	return true, "auto"
}

// runs implements convAlgo: whether g's forward and data gradient run
// Winograd, the choice logged at debug level once per geometry (batch
// aside).
func (w *winograd) runs(g *gpu.ConvGeom) bool {
	use, why := w.choice(g)
	logChoice(w.o.log, &w.seen, g, "winograd", use, why)
	return use
}

// round4 rounds n up to a multiple of 4.
func round4(n int) int { return (n + 3) &^ 3 }

// winoCols is the tile count P of cnt samples rounded up to a multiple of
// 4 (Pld in winograd.cl), so that the GEMMs move float4s.
func winoCols(cnt, tiles int) int { return round4(cnt * tiles) }

// winoChans is the channel count a pass's V and M take per column: the
// input channels rounded up to 4 (Ipad in winograd.cl), and the output
// channels.
func winoChans(in, out int) int { return round4(in) + out }

// workspace implements convAlgo: V and M of as many samples as fit under
// convWorkspaceCap, at least one, for the larger of the two passes' tile
// counts (the data gradient tiles the input plane) and channel counts.
func (w *winograd) workspace(g *gpu.ConvGeom) int {
	tiles := max(winoTiles(g.OH, g.OW), winoTiles(g.H, g.W))
	chans := max(winoChans(g.C, g.K), winoChans(g.K, g.C))
	per := 16 * chans * tiles
	nb := max(1, min(g.N, w.o.convWorkspaceCap()/per))
	return 16*chans*winoCols(nb, tiles) + 3 // 3: room to align a view's offset to 4
}

// winoBatch is how many samples of a pass with chans channels per column
// (winoChans) and tiles tiles per sample the workspace ws holds (at most
// n): V and M of each are 16·chans·tiles elements, a chunk's columns
// rounded up to 4, from ws's offset rounded up to 4.
func winoBatch(ws *clBuf, chans, tiles, n int) int {
	room := ws.n - ((ws.off+3)&^3 - ws.off)
	return min(n, (room/(16*chans)&^3)/tiles)
}

// filters sets w.u to the transforms of wt's K·C filters (flip:
// rotated, channels swapped, for the data gradient) and returns it: out
// × 16·round4(in) (winograd.cl).
func (w *winograd) filters(g *gpu.ConvGeom, wt *clBuf, flip bool) *clMem {
	o := w.o
	out, in := g.K, g.C
	if flip {
		out, in = in, out
	}
	u := o.scratch(&w.u, 16*out*round4(in))
	o.run1(kWinoFilter, out*round4(in), u, wt.m, wt.off, g.K, g.C, b2i(flip), round4(in))
	return u
}

// winoPlane is one side of a Winograd pass: n samples of ch channels of
// h×w planes at buf.
type winoPlane struct {
	buf         *clBuf
	ch, h, w, n int
}

// run sets out to the stride-1 correlation of in with the filters
// whose transforms are in u (filters), in padded by ph, pw, plus bias
// when not nil, then ReLU (act 1) or ReLU6 (act 2) when act is not 0, in
// chunks of as many samples as ws holds.
func (w *winograd) run(op string, out, in winoPlane, u *clMem, ph, pw int, bias, ws *clBuf, act int) {
	o := w.o
	th, tw := (out.h+1)/2, (out.w+1)/2
	tiles, ipad := th*tw, round4(in.ch)
	base := (ws.off + 3) &^ 3 // float4-aligned, like every offset below
	nb := winoBatch(ws, winoChans(in.ch, out.ch), tiles, in.n)
	if nb < 1 {
		panic(fmt.Sprintf("gpu: %s: workspace of %d too small for Winograd tiles of one sample (%d)", op, ws.n,
			16*winoChans(in.ch, out.ch)*winoCols(1, tiles)))
	}
	bm, boff, hasBias := ws.m, 0, 0
	if bias != nil {
		bm, boff, hasBias = bias.m, bias.off, 1
	}
	ins, outs := in.ch*in.h*in.w, out.ch*out.h*out.w
	for n0 := 0; n0 < in.n; n0 += nb {
		cnt := min(nb, in.n-n0)
		p, pld := cnt*tiles, winoCols(cnt, tiles)
		v, m := base, base+16*ipad*pld
		o.runPlanes(kWinoInput, pld, ipad, 1, ws.m, v, in.buf.m, in.buf.off+n0*ins, ins, in.ch, ipad, in.h, in.w,
			ph, pw, th, tw, p, pld)
		if w.batched {
			// Layer ξ of the split-k launch: k in [ξ·ipad, (ξ+1)·ipad), C
			// at m + ξ·out.ch·pld (gemmWith's cpart, m·n).
			launch := func(g *gemmVariant) {
				o.gemmWith(g, false, false, out.ch, pld, 16*ipad, 1, plainMat(u, 0, 16*ipad), plainMat(ws.m, v, pld),
					0, plainMat(ws.m, m, pld), ipad, 16, ws.m, epilogue{})
			}
			// Untimed: the variant the tuner picks for a product of 16
			// times the columns (as many blocks of C).
			s := batchShape{layers: 16, m: out.ch, n: pld, kc: ipad}
			launch(o.batchedGemm("winograd", s, func() int { return o.tuner.pick(s.m, 16*s.n, s.kc) }, true, launch))
		} else {
			for xi := 0; xi < 16; xi++ {
				o.gemm(false, false, out.ch, pld, ipad, 1, plainMat(u, xi*ipad, 16*ipad),
					plainMat(ws.m, v+xi*ipad*pld, pld), 0, plainMat(ws.m, m+xi*out.ch*pld, pld))
			}
		}
		o.runPlanes(kWinoOutput, p, out.ch, 1, out.buf.m, out.buf.off+n0*outs, outs, ws.m, m, bm, boff, hasBias, act,
			out.ch, out.h, out.w, th, tw, p, pld)
	}
}

// forward implements convAlgo: y = conv(x, w) + bias (bias may be nil)
// by Winograd, then the activation act (0: none; 1 ReLU, 2 ReLU6) in the
// same kernel.
func (w *winograd) forward(g *gpu.ConvGeom, ys, xs, wsl, bs, ws *clBuf, act int) {
	u := w.filters(g, wsl, false)
	w.run("ConvForward", winoPlane{ys, g.K, g.OH, g.OW, g.N}, winoPlane{xs, g.C, g.H, g.W, g.N}, u, g.PadH, g.PadW, bs, ws, act)
}

// backwardData implements convAlgo: dx from dy and w by Winograd, the
// correlation of dy, padded by 2−PadH and 2−PadW (a negative padding
// crops), with the rotated filters.
func (w *winograd) backwardData(g *gpu.ConvGeom, dxs, dys, wsl, ws *clBuf) {
	u := w.filters(g, wsl, true)
	w.run("ConvBackwardData", winoPlane{dxs, g.C, g.H, g.W, g.N}, winoPlane{dys, g.K, g.OH, g.OW, g.N}, u,
		g.R-1-g.PadH, g.S-1-g.PadW, nil, ws, 0)
}

// backwardFilter implements convAlgo: the filter gradient keeps im2col.
func (w *winograd) backwardFilter(g *gpu.ConvGeom, dws, dys, xs, ws *clBuf) bool { return false }
