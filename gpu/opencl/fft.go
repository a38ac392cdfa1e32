//go:build opencl

package opencl

import (
	"fmt"
	"strings"

	"github.com/cotrain/cotrain/gpu"
)

// FFT convolution for stride-1 convolutions with small planes
// (kernels/fft.cl).
//
// A stride-1 convolution's three passes are each, per output plane, a sum
// over channels of 2-D correlations or convolutions of whole planes:
//
//	forward:         y[n,o]  = Σ_c corr(xp[n,c], w[o,c]) + bias[o]
//	backward data:   dx[n,c] = Σ_o conv(dy[n,o], w[o,c]), cropped by the padding
//	backward filter: dw[o,c] = Σ_n corr(xp[n,c], dy[n,o])
//
// (xp: x padded). With every plane zero-filled to P×P, P at least the
// padded plane (H + 2·PadH, and so at least every pass's linear extent:
// the forward and filter gradient read xp up to H + 2·PadH − 1, the data
// gradient's full convolution is OH + R − 1 = H + 2·PadH long), these are
// circular with no wraparound, and the 2-D DFT turns them into products
// per frequency: Y = conj(W)·X, dX = Wᵀ·dY, dW = conj(dY)ᵀ·X, each one
// small complex matrix product over channels (or samples) per frequency f
// of the P×(P/2+1) of a real FFT. fft_r2c transforms the planes, the
// products run as ONE launch of the backend's tuned GEMM over F layers
// (the split-k layers of gemm.cl, as Winograd's 16 products), and fft_c2r
// transforms back, scales by 1/P², crops, and adds the bias and the
// activation (forward).
//
// Complex products as real ones. For C = A·B with A = Ar + i·Ai (m×k) and
// B (k×n), either [Cr Ci] = [Ar Ai]·[[Br, Bi], [−Bi, Br]] (an m×2k by
// 2k×2n real product, which duplicates B) or [Cr; Ci] = [[Ar, −Ai], [Ai,
// Ar]]·[Br; Bi] (2m×2k by 2k×n, duplicating A); a conjugation flips the
// sign of the imaginary part, which the transform folds into the block it
// writes. Each pass duplicates the smaller operand (dupActs): the
// activations' spectra (x, or dy for the data gradient) when the batch is
// at most the channels they are multiplied with (a batch of 32 against
// AlexNet's 64–192 channels), else the filters' (forward, data gradient);
// for the filter gradient x's when C ≤ K, else dy's. Layouts, all
// frequency-major, A stored transposed (k rows of m, so that every operand
// is read 4 consecutive elements along m or n, as the GEMM prefers); with
// the activations duplicated:
//
//	pass      A (F × 2k × m)            B (F × 2k × 2n)                      C (F × m × 2n)
//	forward   W: [Wr; Wi] (c, o)        X: [[Xr, Xi], [Xi, −Xr]] (c, n)      [Yr Yi] (o, n)
//	data      W: [Wr; Wi] (o, c)        dY: [[dYr, dYi], [−dYi, dYr]] (o, n) [dXr dXi] (c, n)
//	filter    dY: [dYr; dYi] (n, o)     X: [[Xr, Xi], [Xi, −Xr]] (n, c)      [dWr dWi] (o, c)
//
// and with the other operand duplicated (A stored F × 2k × 2m, B F × 2k × n,
// C F × 2m × n):
//
//	forward   W: [[Wr, −Wi], [Wi, Wr]] (c, o)      X: [Xr; Xi] (c, n)     [Yr; Yi] (o, n)
//	data      W: [[Wr, Wi], [−Wi, Wr]] (o, c)      dY: [dYr; dYi] (o, n)  [dXr; dXi] (c, n)
//	filter    dY: [[dYr, −dYi], [dYi, dYr]] (n, o) X: [Xr; Xi] (n, c)     [dWr; dWi] (o, c)
//
// The GEMM reads k beyond a layer's range as zeros and needs no alignment
// along k; where m or n is not a multiple of 4 it loads scalars (same bits).
//
// Chunks. The activations' spectra and the products live in the workspace
// (ConvWorkspace asks for room for them), in chunks of as many samples as
// it holds; the filters' spectra (forward, data gradient) and the filter
// gradient's sum over chunks (beta 1 after the first) in a scratch buffer
// the fftConv value owns. Every value is computed by one item or one GEMM in a
// fixed order, with no atomics: the same bits on every run.

// FFT modes (Config.FFT, COTRAIN_OPENCL_FFT).
const (
	FFTAuto = "auto" // where fftChoice says it wins
	FFTOn   = "1"    // every stride-1 ungrouped convolution larger than 1×1 whose padded plane fits 32×32 (tests, measurements)
	FFTOff  = "0"    // never
)

// ErrFFT is returned for an Config.FFT value that is none of the
// modes.
var ErrFFT = fmt.Errorf("%w: FFT mode", gpu.ErrConfig)

// fftMode checks a mode; "" is FFTAuto.
func fftMode(mode string) (string, error) {
	switch mode {
	case "", FFTAuto:
		return FFTAuto, nil
	case FFTOn, FFTOff:
		return mode, nil
	}
	return "", fmt.Errorf("%w %q: want %s, %s or %s", ErrFFT, mode, FFTOff, FFTOn, FFTAuto)
}

// fftSizes are the FFT sizes P the kernels are built for (fft.cl is
// compiled once per size).
var fftSizes = []int{16, 32}

// fftGroup is how many planes one work-group of the size-p kernels
// transforms on a device with localMem bytes of local memory per
// work-group: each plane takes P·(P/2+1)+2 complex values (4.3 KiB for 32,
// 1.1 KiB for 16). A group writes each frequency of its planes as one run
// of that many floats (fft.cl), so 8 (32 bytes, a whole sector of a GPU's
// memory) where the device has 48 KiB, 4 for 32 within the 32 KiB OpenCL
// promises.
func fftGroup(p int, localMem int64) int {
	if localMem <= 0 { // not reported: what OpenCL promises
		localMem = 32 << 10
	}
	g := 8
	if localMem >= 48<<10 && p <= 16 {
		g = 16
	}
	for g > 1 && int64(g*(fftFreqs(p)+2)*8) > min(localMem, 48<<10)*3/4 {
		g /= 2
	}
	return g
}

// fftThinGroup is how many planes one work-group of fft_c2r_thin of size
// p takes on a device with localMem bytes of local memory per work-group:
// fftThinPlanes, halved while their FFT_THIN rows' spectra (fftThinMax·
// (P/2+1)+1 complex values a plane) pass fftGroup's budget. 32 for both
// sizes with 48 KiB; 16 for 32 within OpenCL's 32 KiB.
func fftThinGroup(p int, localMem int64) int {
	if localMem <= 0 {
		localMem = 32 << 10
	}
	g := fftThinPlanes
	for g > 1 && int64(g*(fftThinMax*(p/2+1)+1)*8) > min(localMem, 48<<10)*3/4 {
		g /= 2
	}
	return g
}

// fftFits reports whether the size-p kernels' local memory fits a device
// with localMem bytes per work-group (32 KiB when not reported).
func fftFits(p int, localMem int64) bool {
	if localMem <= 0 {
		localMem = 32 << 10
	}
	return int64(fftGroup(p, localMem)*(fftFreqs(p)+2)*8) <= localMem
}

// fftWG is the work-group size of kernel k of size p whose work-groups
// take planes planes: one item per column of the planes (planes·(P/2+1):
// the column pass, the longer one, in one round), rounded up to a multiple of 32 (a warp), at most
// the kernel's limit and wgCap. The kernels take any size: with fewer
// items than a pass has tasks, the items loop over them in rounds
// (fft.cl), computing the same bits.
func (f *fftConv) fftWG(k *clKernel, p, planes int) int {
	n := planes * (p/2 + 1)
	return max(1, min((n+31)/32*32, k.maxWG, f.wgCap))
}

// fftThinPlanes is the planes per work-group of fft_r2c_thin (FFT_TG in
// fft.cl) and at most of fft_c2r_thin (fftThinGroup), and fftThinMax the most rows and
// columns of fft_r2c_thin's planes and the most rows of fft_c2r_thin's
// (FFT_THIN): r2c transforms planes within it (filters) directly, without
// FFTs over the P×P plane's zeros, and c2r keeps only such outputs' rows
// in local memory, room for 32 planes a group (fft.cl).
const (
	fftThinPlanes = 32
	fftThinMax    = 8
)

// fftSource is fft.cl compiled once per FFT size (its kernels named with
// the size: fft_r2c_32), for the main program.
func fftSource(info gpu.DeviceInfo) string {
	src, err := kernelFS.ReadFile("kernels/fft.cl")
	if err != nil {
		panic("gpu: opencl: missing embedded kernel fft.cl") // a build without the file: our bug
	}
	var b strings.Builder
	for _, p := range fftSizes {
		fmt.Fprintf(&b, "#define FFT_G_%d %d\n#define FFT_TC_%d %d\n", p, fftGroup(p, info.LocalMem), p, fftThinGroup(p, info.LocalMem))
	}
	for _, p := range fftSizes {
		fmt.Fprintf(&b, "// --- fft.cl, P = %d\n#define FFT_P %d\n%s\n#undef FFT_P\n", p, p, src)
	}
	return b.String()
}

// fftMinChannels is the fewest input and output channels for which the
// auto mode uses FFT: the products are only as deep as twice the channels
// (forward: input, data gradient: output) or the batch (filter gradient),
// where im2col's are R·S times deeper, and shallow products run far below
// the GEMM's peak; and the transforms cost the same per plane whatever the
// filter, so small filters (3×3: Winograd) or few channels do not pay for
// them. A first guess, to be measured on the H100.
const fftMinChannels = 64

// fftMinFilter is the smallest filter side the auto mode takes: 5×5 and
// larger (AlexNet's conv2), where im2col's products are 25 and more
// times deeper than one plane.
const fftMinFilter = 5

// fftSize is the FFT size for g: the smallest of fftSizes that holds its
// padded plane (and so every pass's extent), or 0.
func fftSize(g *gpu.ConvGeom) int {
	for _, p := range fftSizes {
		if g.H+2*g.PadH <= p && g.W+2*g.PadW <= p {
			return p
		}
	}
	return 0
}

// fftEligible reports whether the FFT kernels compute g: stride 1, one
// group, a filter larger than 1×1 (pointwise runs no im2col anyway), and
// a padded plane within the largest FFT size.
func fftEligible(g gpu.ConvGeom) bool {
	return g.StrideH == 1 && g.StrideW == 1 && g.GroupCount() == 1 && g.R*g.S > 1 && fftSize(&g) > 0
}

// fftConv is the FFT algorithm of one backend: its mode, the scratch
// buffer of the filters' spectra (or a filter gradient's sum of them) and
// the geometries whose choice it has logged. The backend launches its
// kernels and GEMMs.
type fftConv struct {
	o    *OpenCL
	mode string // FFTAuto, FFTOn or FFTOff (checked)
	// wgCap caps the kernels' work-groups (fftWG): tests lower it to
	// cover the loops that take several planes per item.
	wgCap int
	// dupForce overrides dupActs: 1 the activations, 2 the other operand,
	// 0 the smaller. Tests set it to cover both layouts.
	dupForce int

	s    *clMem // filter spectra, or a filter gradient's sum of spectra
	seen map[gpu.ConvGeom]bool
}

var _ convAlgo = (*fftConv)(nil)

// newFFTConv returns o's FFT algorithm in mode (checked by fftMode):
// work-groups as large as the kernels take, the smaller operand
// duplicated.
func newFFTConv(o *OpenCL, mode string) *fftConv { return &fftConv{o: o, mode: mode, wgCap: 1 << 30} }

// dupActs says whether a pass duplicates the activations' spectra (else
// the filters', or for the filter gradient dy's): the smaller operand, or
// as dupForce says.
func (f *fftConv) dupActs(g *gpu.ConvGeom, pass int) bool {
	switch f.dupForce {
	case 1:
		return true
	case 2:
		return false
	}
	switch pass {
	case fftPassForward: // X is N×C, W K×C
		return g.N <= g.K
	case fftPassData: // dY is N×K, W K×C
		return g.N <= g.C
	}
	return g.C <= g.K // X is N×C, dY N×K
}

// choice says whether g runs FFT, and why.
func (f *fftConv) choice(g *gpu.ConvGeom) (bool, string) {
	switch {
	case !fftEligible(*g):
		return false, "not a stride-1 ungrouped convolution with a padded plane of at most 32×32"
	case f.o.half:
		// Half storage would round the spectra to half between the
		// transforms and the products: kept off, as Winograd is.
		return false, "half storage"
	case !fftFits(fftSize(g), f.o.info.LocalMem):
		return false, "the device's local memory holds no plane's spectrum"
	case f.mode == FFTOff:
		return false, "off (COTRAIN_OPENCL_FFT=0)"
	case f.mode == FFTOn:
		return true, "forced (COTRAIN_OPENCL_FFT=1)"
	case min(g.R, g.S) < fftMinFilter:
		return false, fmt.Sprintf("auto: filter smaller than %dx%d", fftMinFilter, fftMinFilter)
	case min(g.C, g.K) < fftMinChannels:
		return false, fmt.Sprintf("auto: fewer than %d channels", fftMinChannels)
	}
	return true, "auto"
}

// runs implements convAlgo: whether g's three passes run FFT, the choice
// logged at debug level once per geometry (batch aside). It takes
// precedence over Winograd (which auto never overlaps: FFT's auto wants
// 5×5 and larger).
func (f *fftConv) runs(g *gpu.ConvGeom) bool {
	use, why := f.choice(g)
	logChoice(f.o.log, &f.seen, g, "fft", use, why)
	return use
}

// fftFreqs is the number of frequencies of a P×P real FFT.
func fftFreqs(p int) int { return p * (p/2 + 1) }

// The passes, for dupActs and units.
const (
	fftPassForward = iota
	fftPassData
	fftPassFilter
)

// units is the workspace elements per sample of one of g's passes (the
// activations' spectra and the products: forward and data gradient; the
// two operands' spectra: filter gradient), and fixed the elements of the
// scratch buffer it takes besides (the filters' spectra, or the filter
// gradient's sum).
func (fc *fftConv) units(g *gpu.ConvGeom, pass int) (unit, fixed int) {
	f, c, k := fftFreqs(fftSize(g)), g.C, g.K
	in, out := c, k // forward: channels of x and y
	if pass == fftPassData {
		in, out = k, c
	}
	dup := fc.dupActs(g, pass)
	switch {
	case pass == fftPassFilter && dup:
		return 2 * f * (k + 2*c), 2 * f * k * c
	case pass == fftPassFilter:
		return 2 * f * (2*k + c), 2 * f * k * c
	case dup:
		return 2 * f * (2*in + out), 2 * f * c * k
	}
	return 2 * f * (in + out), 4 * f * c * k
}

// workspace implements convAlgo: as many samples of the largest pass as
// fit under convWorkspaceCap, at least one.
func (f *fftConv) workspace(g *gpu.ConvGeom) int {
	per := 0
	for pass := fftPassForward; pass <= fftPassFilter; pass++ {
		u, _ := f.units(g, pass)
		per = max(per, u)
	}
	return per*max(1, min(g.N, f.o.convWorkspaceCap()/per)) + 3 // 3: room to align a view's offset to 4
}

// fftBatch is how many samples of a pass with unit elements per sample the
// workspace ws holds from its offset rounded up to 4, at most n.
func fftBatch(op string, ws *clBuf, unit, n int) int {
	room := ws.n - ((ws.off+3)&^3 - ws.off)
	nb := min(n, room/unit)
	if nb < 1 {
		panic(fmt.Sprintf("gpu: %s: workspace of %d too small for the FFT spectra of one sample (%d)", op, ws.n, unit))
	}
	return nb
}

// fftLayout is where fft_r2c writes a plane's spectrum (fft.cl): the
// plane (a, b)'s matrix indices are (b, a), or (a, b) with swap; Kn and Cn
// are their counts; dup writes the 2×2 block form with the signs s (of im,
// im and re: fft.cl), else the two parts stacked.
type fftLayout struct {
	swap, dup bool
	s         [3]int
	kn, cn    int
}

// The 2×2 blocks' signs (fftLayout.s): [[re, s0·im], [s1·im, s2·re]].
var (
	fftConjB  = [3]int{1, 1, -1} // [[Br, Bi], [Bi, −Br]]: B duplicated, A conjugated
	fftPlainB = [3]int{1, -1, 1} // [[Br, Bi], [−Bi, Br]]: B duplicated
	// A duplicated, stored transposed: [[Ar, −Ai], [Ai, Ar]]ᵀ =
	// [[Ar, Ai], [−Ai, Ar]] (Ar, Ai transposed), conj(A) the other way.
	fftPlainA = [3]int{1, -1, 1}
	fftConjA  = [3]int{-1, 1, 1}
)

// ld and fs are the row length and the elements per frequency.
func (l fftLayout) ld() int {
	if l.dup {
		return 2 * l.cn
	}
	return l.cn
}
func (l fftLayout) fs() int { return 2 * l.kn * l.ld() }

// fftPlanes is na×nb planes of h×w at buf's m from off.
type fftPlanes struct {
	m          *clMem
	off        int
	na, nb     int
	h, w       int
	padH, padW int // r2c: shift into the P×P plane; c2r: the crop's origin
}

// launchFFT runs an FFT kernel of size p over groups work-groups of
// planes planes each.
func (f *fftConv) launchFFT(id fftKernel, p, planes, groups int, args ...any) {
	o := f.o
	if o.k == nil {
		panic(errClosed) // Close emptied the table
	}
	k := o.k[fftKernelIndex(id, p)]
	wg := f.fftWG(k, p, planes)
	must(o.ctx.launch(k, []int{groups * wg}, []int{wg}, args...))
}

// r2c writes the spectra of src's planes to dst at doff as l lays them
// out: planes of at most fftThinMax×fftThinMax by fft_r2c_thin, others by
// fft_r2c.
func (f *fftConv) r2c(p int, dst *clMem, doff int, src fftPlanes, l fftLayout) {
	id, gp := fftR2C, fftGroup(p, f.o.info.LocalMem)
	if src.h <= fftThinMax && src.w <= fftThinMax {
		id, gp = fftR2CThin, fftThinPlanes
	}
	f.launchFFT(id, p, gp, l.kn*((l.cn+gp-1)/gp), dst, doff, src.m, src.off, src.na, src.nb, src.h, src.w, src.padH, src.padW,
		b2i(l.swap), b2i(l.dup), l.s[0], l.s[1], l.s[2], l.kn, l.cn, l.ld(), l.fs())
}

// fftOut is how a pass's products hold its result: rn rows of cn columns
// per part, the real and imaginary parts side by side (rn × 2cn) or, when
// stacked, one above the other (2rn × cn); the plane (a, b) at row b and
// column a, or with swap at row a and column b.
type fftOut struct {
	swap, stacked bool
	rn, cn        int
}

// c2r sets dst's planes from the products at src (soff) as l holds them;
// bias (may be nil) and act as fft_c2r says.
func (f *fftConv) c2r(p int, dst fftPlanes, src *clMem, soff int, l fftOut, bias *clBuf, act int) {
	gp := fftGroup(p, f.o.info.LocalMem)
	bm, boff, hasBias := src, 0, 0
	if bias != nil {
		bm, boff, hasBias = bias.m, bias.off, 1
	}
	ld, imoff := 2*l.cn, l.cn
	if l.stacked {
		ld, imoff = l.cn, l.rn*l.cn
	}
	id := fftC2R
	if dst.h <= fftThinMax {
		id, gp = fftC2RThin, fftThinGroup(p, f.o.info.LocalMem)
	}
	f.launchFFT(id, p, gp, l.rn*((l.cn+gp-1)/gp), dst.m, dst.off, src, soff, dst.na, dst.nb, dst.h, dst.w, dst.padH, dst.padW,
		b2i(l.swap), l.cn, ld, imoff, 2*l.rn*l.cn, bm, boff, hasBias, act)
}

// forward implements convAlgo: y = conv(x, w) + bias (bias may be nil)
// by FFT, then the activation act (0: none; 1 ReLU, 2 ReLU6) in the
// inverse transform.
func (fc *fftConv) forward(g *gpu.ConvGeom, ys, xs, wsl, bs, ws *clBuf, act int) {
	o := fc.o
	p := fftSize(g)
	f, c, k := fftFreqs(p), g.C, g.K
	dup := fc.dupActs(g, fftPassForward)
	unit, fixed := fc.units(g, fftPassForward)
	a := o.scratch(&fc.s, fixed)
	wl := fftLayout{kn: c, cn: k} // (c, o)
	if !dup {
		wl.dup, wl.s = true, fftConjA
	}
	fc.r2c(p, a, 0, fftPlanes{m: wsl.m, off: wsl.off, na: k, nb: c, h: g.R, w: g.S}, wl)
	nb := fftBatch("ConvForward", ws, unit, g.N)
	base := (ws.off + 3) &^ 3
	ins, outs := c*g.H*g.W, k*g.OH*g.OW
	for n0 := 0; n0 < g.N; n0 += nb {
		cnt := min(nb, g.N-n0)
		xl := fftLayout{kn: c, cn: cnt} // (c, n)
		m, n, out := k, 2*cnt, fftOut{rn: k, cn: cnt}
		if dup {
			xl.dup, xl.s = true, fftConjB
		} else {
			m, n, out.stacked = 2*k, cnt, true
		}
		bo := base
		co := bo + f*xl.fs()
		fc.r2c(p, ws.m, bo, fftPlanes{m: xs.m, off: xs.off + n0*ins, na: cnt, nb: c, h: g.H, w: g.W, padH: g.PadH, padW: g.PadW}, xl)
		fc.gemm(m, n, 2*c, f, plainMat(a, 0, m), plainMat(ws.m, bo, n), 0, plainMat(ws.m, co, n))
		fc.c2r(p, fftPlanes{m: ys.m, off: ys.off + n0*outs, na: cnt, nb: k, h: g.OH, w: g.OW}, ws.m, co, out, bs, act)
	}
}

// backwardData implements convAlgo: dx from dy and w by FFT, the full
// convolution of dy with the filters, cropped by the padding.
func (fc *fftConv) backwardData(g *gpu.ConvGeom, dxs, dys, wsl, ws *clBuf) {
	o := fc.o
	p := fftSize(g)
	f, c, k := fftFreqs(p), g.C, g.K
	dup := fc.dupActs(g, fftPassData)
	unit, fixed := fc.units(g, fftPassData)
	a := o.scratch(&fc.s, fixed)
	wl := fftLayout{swap: true, kn: k, cn: c} // (o, c)
	if !dup {
		wl.dup, wl.s = true, fftPlainA
	}
	fc.r2c(p, a, 0, fftPlanes{m: wsl.m, off: wsl.off, na: k, nb: c, h: g.R, w: g.S}, wl)
	nb := fftBatch("ConvBackwardData", ws, unit, g.N)
	base := (ws.off + 3) &^ 3
	ins, outs := k*g.OH*g.OW, c*g.H*g.W
	for n0 := 0; n0 < g.N; n0 += nb {
		cnt := min(nb, g.N-n0)
		yl := fftLayout{kn: k, cn: cnt} // (o, n)
		m, n, out := c, 2*cnt, fftOut{rn: c, cn: cnt}
		if dup {
			yl.dup, yl.s = true, fftPlainB
		} else {
			m, n, out.stacked = 2*c, cnt, true
		}
		bo := base
		co := bo + f*yl.fs()
		fc.r2c(p, ws.m, bo, fftPlanes{m: dys.m, off: dys.off + n0*ins, na: cnt, nb: k, h: g.OH, w: g.OW}, yl)
		fc.gemm(m, n, 2*k, f, plainMat(a, 0, m), plainMat(ws.m, bo, n), 0, plainMat(ws.m, co, n))
		fc.c2r(p, fftPlanes{m: dxs.m, off: dxs.off + n0*outs, na: cnt, nb: c, h: g.H, w: g.W, padH: g.PadH, padW: g.PadW},
			ws.m, co, out, nil, 0)
	}
}

// backwardFilter implements convAlgo: dw from dy and x by FFT, the
// products of each chunk adding into one sum of spectra (beta 1 after the
// first), transformed back once. It always reports true.
func (fc *fftConv) backwardFilter(g *gpu.ConvGeom, dws, dys, xs, ws *clBuf) bool {
	o := fc.o
	p := fftSize(g)
	f, c, k := fftFreqs(p), g.C, g.K
	dup := fc.dupActs(g, fftPassFilter)
	unit, fixed := fc.units(g, fftPassFilter)
	sum := o.scratch(&fc.s, fixed)
	nb := fftBatch("ConvBackwardFilter", ws, unit, g.N)
	base := (ws.off + 3) &^ 3
	xsz, ysz := c*g.H*g.W, k*g.OH*g.OW
	m, n, out := k, 2*c, fftOut{swap: true, rn: k, cn: c}
	if !dup {
		m, n, out.stacked = 2*k, c, true
	}
	for n0 := 0; n0 < g.N; n0 += nb {
		cnt := min(nb, g.N-n0)
		yl := fftLayout{swap: true, kn: cnt, cn: k} // (n, o)
		xl := fftLayout{swap: true, kn: cnt, cn: c} // (n, c)
		if dup {
			xl.dup, xl.s = true, fftConjB
		} else {
			yl.dup, yl.s = true, fftConjA
		}
		ao := base
		bo := ao + f*yl.fs()
		fc.r2c(p, ws.m, ao, fftPlanes{m: dys.m, off: dys.off + n0*ysz, na: cnt, nb: k, h: g.OH, w: g.OW}, yl)
		fc.r2c(p, ws.m, bo, fftPlanes{m: xs.m, off: xs.off + n0*xsz, na: cnt, nb: c, h: g.H, w: g.W, padH: g.PadH, padW: g.PadW}, xl)
		beta := float32(1)
		if n0 == 0 {
			beta = 0
		}
		fc.gemm(m, n, 2*cnt, f, plainMat(ws.m, ao, m), plainMat(ws.m, bo, n), beta, plainMat(sum, 0, n))
	}
	fc.c2r(p, fftPlanes{m: dws.m, off: dws.off, na: k, nb: c, h: g.R, w: g.S}, sum, 0, out, nil, 0)
	return true
}

// pick is the variant for layers m×n×kc products when not timed: the
// tuner's pick for a product of layers times the columns, or a smaller tile
// that at least halves the area of each layer's C the work-groups cover
// (every layer pads its own C to whole tiles: conv2's forward at batch 8 is
// 544 layers of 192×16, which 128×128 tiles cover 8 times over; on PoCL
// the products then took 6.6 times the filter gradient's, as many
// multiplications in layers of 192×128).
func (f *fftConv) pick(m, n, kc, layers int) int {
	t := f.o.tuner
	return t.leastPadded(t.pick(m, layers*n, kc), m, n)
}

// gemm runs the layers products C_f = beta·C_f + A_fᵀ·B_f of one pass
// as one launch of the GEMM's split-k layers: A stored layers·kc × m
// (layer f's rows from f·kc), B layers·kc × n, C layers × m × n. The
// variant: batchedGemm's, pick's untimed; only a launch with beta 0 is
// timed (a shape's first always is: a filter gradient's first chunk).
func (f *fftConv) gemm(m, n, kc, layers int, a, b mat, beta float32, c mat) {
	o := f.o
	launch := func(v *gemmVariant) {
		o.gemmWith(v, true, false, m, n, layers*kc, 1, a, b, beta, c, kc, layers, c.m, epilogue{})
	}
	s := batchShape{layers: layers, m: m, n: n, kc: kc}
	launch(o.batchedGemm("fft", s, func() int { return f.pick(m, n, kc, layers) }, beta == 0, launch))
}
