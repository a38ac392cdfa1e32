//go:build opencl

package opencl

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cotrain/cotrain/gpu"
)

// GEMM variants and their launches.
//
// gemm.cl is compiled once per variant (tiling); each program holds the four
// transpose cases. The tuner (gemm_tune.go) times every variant that built
// and fits the device on a few square sizes, once per device and driver,
// and saves the fastest per size as JSON next to the program binaries;
// later runs read the file. Because every variant sums in the same order
// (see gemm.cl), the choice affects speed only, never the bits.

// gemmVariant is one compiled tiling of gemm.cl.
type gemmVariant struct {
	Name       string // "64x64/4x4/k16": block of C per work-group / per item / tile depth
	TSM, TSN   int
	WPTM, WPTN int // multiples of 4 (items read their rows and columns as float4)
	TSK        int // multiple of 4
	// WarpN, when set, is how many items along n each run of 32 items
	// spans when computing (the rest go along m): the name's "/wN" suffix,
	// gemm.cl's WARP_N. It changes which item computes which block only.
	WarpN int
	k     [6]*clKernel // gemmKernels
	sum   *clKernel    // gemm_sum, for split-k products
}

// gemmCandidates are the tilings tried, by increasing tile area: 32×32 for
// small products and phone GPUs (64 items), 64×64 with 8×4 per item (128
// items), the rectangular 128×64 and 64×128, and 128×128 with 8×8 per item
// (256 items) for large desktop GPUs, in two item layouts. On the H100 the
// 8x8 blocks reach 61-64% of the FP32 peak at 2048-4096, the 8x4 ones
// 53-57%, 4x4 blocks at most 48% (docs/opencl.md).
var gemmCandidates = []gemmVariant{
	{Name: "32x32/4x4/k16", TSM: 32, TSN: 32, WPTM: 4, WPTN: 4, TSK: 16},
	{Name: "64x64/8x4/k16/w4", TSM: 64, TSN: 64, WPTM: 8, WPTN: 4, TSK: 16, WarpN: 4},
	{Name: "128x64/8x4/k16", TSM: 128, TSN: 64, WPTM: 8, WPTN: 4, TSK: 16},
	{Name: "64x128/4x8/k16", TSM: 64, TSN: 128, WPTM: 4, WPTN: 8, TSK: 16},
	{Name: "128x128/8x8/k16", TSM: 128, TSN: 128, WPTM: 8, WPTN: 8, TSK: 16},
	{Name: "128x128/8x8/k16/w2", TSM: 128, TSN: 128, WPTM: 8, WPTN: 8, TSK: 16, WarpN: 2},
}

// gemmKernels are the transpose cases, indexed by 2*tb + ta, then the two
// that take an epilogue (A untransposed: a convolution's forward, nn, and a
// fully connected layer's, nt), indexed by 4 + tb. Products without one run
// kernels whose epilogue the compiler left out: with it in every kernel,
// MobileNet v1 α 1's step (no bias, so no epilogue) ran 1.5–2% slower on
// the H100 (gemm.cl).
var gemmKernels = [6]string{"gemm_nn", "gemm_tn", "gemm_nt", "gemm_tt", "gemm_nn_epi", "gemm_nt_epi"}

func (v *gemmVariant) options() string {
	return fmt.Sprintf("-D TSM=%d -D TSN=%d -D TSK=%d -D WPTM=%d -D WPTN=%d -D WARP_N=%d", v.TSM, v.TSN, v.TSK, v.WPTM, v.WPTN, v.WarpN)
}

// parseGemmVariant reads a variant name, "TSMxTSN/WPTMxWPTN/kTSK" with an
// optional "/wN" (WarpN), and checks what gemm.cl needs: register blocks
// and tile depth multiples of 4 that divide the tile, tiles that split
// evenly into float4 loads over the work-group, and a WarpN that tiles it.
func parseGemmVariant(name string) (gemmVariant, error) {
	v := gemmVariant{Name: name}
	base, warp, hasWarp := strings.Cut(name, "/w")
	if _, err := fmt.Sscanf(base, "%dx%d/%dx%d/k%d", &v.TSM, &v.TSN, &v.WPTM, &v.WPTN, &v.TSK); err != nil {
		return v, fmt.Errorf("gpu: opencl: gemm variant %q: want TSMxTSN/WPTMxWPTN/kTSK[/wN], e.g. 128x128/8x8/k16/w2", name)
	}
	canon := fmt.Sprintf("%dx%d/%dx%d/k%d", v.TSM, v.TSN, v.WPTM, v.WPTN, v.TSK)
	if hasWarp {
		if _, err := fmt.Sscanf(warp, "%d", &v.WarpN); err != nil {
			return v, fmt.Errorf("gpu: opencl: gemm variant %q: /wN needs a number", name)
		}
		canon += fmt.Sprintf("/w%d", v.WarpN)
	}
	if canon != name {
		return v, fmt.Errorf("gpu: opencl: gemm variant %q: trailing or malformed text", name)
	}
	switch {
	case v.WPTM <= 0 || v.WPTN <= 0 || v.TSK <= 0 || v.WPTM%4 != 0 || v.WPTN%4 != 0 || v.TSK%4 != 0:
		return v, fmt.Errorf("gpu: opencl: gemm variant %q: register block and depth must be positive multiples of 4", name)
	case v.TSM <= 0 || v.TSN <= 0 || v.TSM%v.WPTM != 0 || v.TSN%v.WPTN != 0:
		return v, fmt.Errorf("gpu: opencl: gemm variant %q: the tile is not a multiple of the register block", name)
	case (v.TSM*v.TSK)%(4*v.items()) != 0 || (v.TSN*v.TSK)%(4*v.items()) != 0:
		return v, fmt.Errorf("gpu: opencl: gemm variant %q: %d items cannot share the tiles' float4 loads evenly", name, v.items())
	case hasWarp && (v.WarpN <= 0 || 32%v.WarpN != 0 || (v.TSN/v.WPTN)%v.WarpN != 0 || (v.TSM/v.WPTM)%(32/v.WarpN) != 0 || v.items()%32 != 0):
		return v, fmt.Errorf("gpu: opencl: gemm variant %q: w%d does not tile the %dx%d items in runs of 32", name, v.WarpN, v.TSN/v.WPTN, v.TSM/v.WPTM)
	}
	return v, nil
}

// gemmCandidateList is the candidates named by names (all of
// gemmCandidates when empty), by increasing tile area.
func gemmCandidateList(names []string) ([]gemmVariant, error) {
	if len(names) == 0 {
		return gemmCandidates, nil
	}
	var out []gemmVariant
	for _, n := range names {
		v, err := parseGemmVariant(strings.TrimSpace(n))
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortStableFunc(out, func(a, b gemmVariant) int { return a.TSM*a.TSN - b.TSM*b.TSN })
	return out, nil
}

func (v *gemmVariant) items() int { return (v.TSM / v.WPTM) * (v.TSN / v.WPTN) }

// localBytes is the kernel's __local use: two padded tiles of each operand.
func (v *gemmVariant) localBytes() int64 { return int64(4 * 2 * v.TSK * (v.TSM + 4 + v.TSN + 4)) }

// fits reports whether the device can run the variant's work-group and tiles.
func (v *gemmVariant) fits(info gpu.DeviceInfo) bool {
	return v.items() <= info.MaxWorkGroup && (info.LocalMem == 0 || v.localBytes() <= info.LocalMem)
}

// gemmRegCap returns the build options that cap a variant's registers on
// NVIDIA (cl_nv_compiler_options), or "". A work-group of 256 items or more
// is capped at the registers that let two of them share a multiprocessor's
// 65,536 (128 for 256 items). Left to itself, NVIDIA's compiler gives the
// 128×128/8×8 tiling's transposed cases 130–137 registers, one work-group
// per SM, and they ran at 35–40 TFLOPS at 4096³ on the H100 against 44–47
// capped (scripts/nvgemm, docs/opencl.md); smaller work-groups already fit
// twice and ran slower when the compiler was given more registers. The
// compiler ignores the cap on kernels with a required work-group size, so
// capped variants only hint theirs (GEMM_WG_HINT in gemm.cl).
func gemmRegCap(info gpu.DeviceInfo, v *gemmVariant) string {
	if !info.NVOptions || v.items() < 256 {
		return ""
	}
	return fmt.Sprintf("-D GEMM_WG_HINT -cl-nv-maxrregcount=%d", 65536/(2*v.items()))
}

// buildGemms compiles every candidate that fits into o.gemms, with extra
// appended to the build options; a variant the compiler or the kernel's own
// work-group limit refuses is skipped and logged. key names the
// candidates and options, for the tuning file (tuningPath).
func (o *OpenCL) buildGemms(dir string, cands []gemmVariant, extra string) (key string, err error) {
	src := kernelSource("gemm.cl")
	key = extra
	var lastErr error
	for _, cand := range cands {
		v := cand
		opts := v.options()
		key += "," + v.Name
		if c := gemmRegCap(o.info, &v); c != "" {
			opts += " " + c
			key += " " + c // a tuning file timed without the cap is not used
		}
		if !v.fits(o.info) {
			continue
		}
		p, fromDisk, err := o.ctx.buildCached(o.info, dir, src, strings.TrimSpace(opts+" "+extra), o.log)
		if err != nil {
			o.log.Debug("gpu: opencl: gemm variant not built", "variant", v.Name, "err", err)
			lastErr = fmt.Errorf("variant %s: %w", v.Name, err)
			continue
		}
		if log := o.ctx.buildLog(p); log != "" && !fromDisk {
			o.log.Debug("gpu: opencl: gemm build log", "variant", v.Name, "log", log)
		}
		o.progs = append(o.progs, p)
		ok := true
		for i, name := range gemmKernels {
			k, err := o.ctx.kernel(p, name, gemmArgs)
			if err != nil {
				return key, err
			}
			v.k[i] = k
			ok = ok && k.maxWG >= v.items()
		}
		if v.sum, err = o.ctx.kernel(p, "gemm_sum", gemmSumArgs); err != nil {
			v.release()
			return key, err
		}
		if !ok {
			v.release()
			o.log.Debug("gpu: opencl: gemm variant exceeds the kernel's work-group limit", "variant", v.Name)
			continue
		}
		o.gemms = append(o.gemms, &v)
	}
	if len(o.gemms) == 0 && lastErr != nil {
		// A kernel that does not compile is a bug to see (in the tests
		// too), not a missing device.
		return key, fmt.Errorf("no GEMM variant builds on %s: %w", o.info.Name, lastErr)
	}
	if len(o.gemms) == 0 {
		return key, fmt.Errorf("%w: no GEMM variant fits %s", gpu.ErrNoDevice, o.info.Name)
	}
	return key, nil
}

func (v *gemmVariant) release() {
	for _, k := range append(v.k[:], v.sum) {
		if k != nil {
			k.release()
		}
	}
}

// mat is one GEMM operand on the device: element (r, c), c along the
// contiguous dimension, is at off + r*ld + seg(c), where seg(c) = c without
// segments and (c/segl)*segs + c%segl with them (see gemm.cl: a batch of
// N×K×P tensors read as one K×(N·P) matrix).
type mat struct {
	m          *clMem
	off, ld    int
	segl, segs int
}

// plainMat is a plain row-major operand.
func plainMat(m *clMem, off, ld int) mat { return mat{m: m, off: off, ld: ld} }

// vec is 1 when every aligned group of 4 along the contiguous dimension
// (of length clen) can be one 16-byte load or store: the offset, the row
// stride and the segment sizes are multiples of 4, and so is clen (no group
// runs past the end).
func (a mat) vec(clen int) int {
	ok := a.off%4 == 0 && a.ld%4 == 0 && clen%4 == 0 && (a.segl == 0 || (a.segl%4 == 0 && a.segs%4 == 0))
	return b2i(ok)
}

// gemm enqueues C = alpha*op(A)*op(B) + beta*C with the variant the tuner
// chose for this shape or size (gemmFor).
func (o *OpenCL) gemm(ta, tb bool, m, n, k int, alpha float32, a, b mat, beta float32, c mat) {
	o.gemmEpi(ta, tb, m, n, k, alpha, a, b, beta, c, epilogue{})
}

// epilogue is what a product's store does to each output before writing
// it (gemm.cl): add a bias per row of C (a convolution's output channels)
// or per column (a fully connected layer's output features), then apply
// ReLU or ReLU6. The value stored is the one the store followed by
// bias_act would have left, bit for bit, as long as C is float (the host
// never asks for it in half storage: see epilogueOn).
type epilogue struct {
	bias *clMem // nil: no bias
	off  int
	col  bool // the bias is per column of C; else per row
	act  int  // 0 none, 1 ReLU, 2 ReLU6 (gemm.cl's act_relu)
}

// Epilogue modes of gemm.cl.
const (
	epiNone = iota
	epiRow
	epiCol
)

// args are the kernels' epilogue arguments (emode, eact, E, eoff); with no
// bias, E is c, any buffer the kernel may be given, and is not read.
func (e epilogue) args(c *clMem) []any {
	mode, b := epiNone, c
	if e.bias != nil {
		mode, b = epiRow, e.bias
		if e.col {
			mode = epiCol
		}
	}
	return []any{mode, e.act, b, e.off}
}

// epilogueOn reports whether products may take their bias and activation
// in their store: float storage only (a half store rounds before bias_act
// adds the bias, which the epilogue would not), and not turned off
// (Config.NoEpilogue).
func (o *OpenCL) epilogueOn() bool { return !o.half && !o.noEpilogue }

// gemmEpi is gemm with the epilogue e applied to C as it is stored.
func (o *OpenCL) gemmEpi(ta, tb bool, m, n, k int, alpha float32, a, b mat, beta float32, c mat, e epilogue) {
	if m == 0 || n == 0 {
		return
	}
	if ta && e != (epilogue{}) {
		panic("gpu: gemm: an epilogue on a product with A transposed, whose kernels leave it out (gemm.cl)")
	}
	if k == 0 { // C = beta*C; A and B hold no memory and are not read
		a.m, b.m = c.m, c.m
	}
	o.gemmRun(o.tuner.vars[o.gemmFor(ta, tb, m, n, k, a, b, beta, c)], ta, tb, m, n, k, alpha, a, b, beta, c, e)
}

// gemmSplits returns into how many k-ranges of kc (a multiple of 32) an
// m×n×k product is cut: while its C has fewer than splitTiles blocks of
// 128×128 counting each range, and each range would still be at least
// splitDepth deep, up to maxSplits ranges. It depends on the shape alone,
// never on the device, so that every device sums in the same order (see
// gemm.cl).
//
// The filter gradients of convolutions over large images are the products
// that need many ranges: MobileNet's first pointwise layer at 224×224,
// batch 32, is 64×32×401,408, one block of C; cut in 8 it ran in 16
// work-groups on the H100's 132 SMs (3.5 ms of a 35 ms step).
func (kn *knobs) gemmSplits(m, n, k int) (splits, kc int) {
	tiles := ((m + 127) / 128) * ((n + 127) / 128)
	splits = 1
	for splits < maxSplits && tiles*splits < kn.splitTiles && k/(2*splits) >= kn.splitDepth {
		splits *= 2
	}
	kc = ((k+splits-1)/splits + 31) / 32 * 32
	return splits, kc
}

// maxSplits caps the k-ranges of one product: the partial sums take
// splits·m·n floats, at most 2·splitTiles blocks (knobs) of 128×128 (32 MiB).
const maxSplits = 256

// gemmRun runs a product with variant v, split in k as gemmSplits says: the
// partial sums go to a workspace and gemm_sum adds them into C. The
// epilogue e is applied by the kernel that writes C.
func (o *OpenCL) gemmRun(v *gemmVariant, ta, tb bool, m, n, k int, alpha float32, a, b mat, beta float32, c mat, e epilogue) {
	splits, kc := o.kn.gemmSplits(m, n, k)
	if splits == 1 {
		o.gemmWith(v, ta, tb, m, n, k, alpha, a, b, beta, c, k, 1, c.m, e)
		return
	}
	// The partial sums are float: the products write them as their C in
	// float storage, through P in half storage (gemm.cl).
	ws := o.scratch(&o.splitWS, splits*m*n)
	layers := plainMat(ws, 0, n)
	if o.half {
		layers = c
	}
	o.gemmWith(v, ta, tb, m, n, k, 1, a, b, 0, layers, kc, splits, ws, epilogue{})
	wg, vec := min(o.kn.gemmSumWG, v.sum.maxWG), c.vec(n)
	items := m * n / (1 + 3*vec) // 4 elements per item with vec
	must(o.ctx.launch(v.sum, []int{(items + wg - 1) / wg * wg}, []int{wg}, append([]any{m, n, splits, alpha, ws, beta,
		c.m, c.off, c.ld, c.segl, c.segs, vec}, e.args(c.m)...)...))
}

// gemmWith launches one product kernel of v over splits layers of k-ranges
// of kc (1 and k: no split); layer z writes its sums at c offset by z·m·n,
// or with half storage at p offset by z·m·n (p is not read otherwise). The
// epilogue e is for unsplit products (the partial sums take none).
func (o *OpenCL) gemmWith(v *gemmVariant, ta, tb bool, m, n, k int, alpha float32, a, b mat, beta float32, c mat, kc, splits int, p *clMem, e epilogue) {
	rm, rn := v.TSM/v.WPTM, v.TSN/v.WPTN
	global := []int{(n + v.TSN - 1) / v.TSN * rn, (m + v.TSM - 1) / v.TSM * rm, splits}
	aLen, bLen := k, n // length of each operand's contiguous dimension
	if ta {
		aLen = m
	}
	if tb {
		bLen = k
	}
	cpart := 0
	if splits > 1 {
		cpart = m * n
	}
	ki := 2*b2i(tb) + b2i(ta)
	if e != (epilogue{}) {
		ki = 4 + b2i(tb) // gemmEpi refused ta
	}
	must(o.ctx.launch(v.k[ki], global, []int{rn, rm, 1}, append([]any{m, n, k, alpha,
		a.m, a.off, a.ld, a.segl, a.segs, a.vec(aLen),
		b.m, b.off, b.ld, b.segl, b.segs, b.vec(bLen), beta,
		c.m, c.off, c.ld, c.segl, c.segs, c.vec(n), kc, cpart, p}, e.args(c.m)...)...))
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Gemm implements Backend.
func (o *OpenCL) Gemm(transA, transB bool, m, n, k int, alpha float32, a, b gpu.Buffer, beta float32, c gpu.Buffer) {
	as, bs, cs := o.buf(a), o.buf(b), o.buf(c)
	if as.n < m*k || bs.n < k*n || cs.n < m*n {
		panic(fmt.Sprintf("gpu: Gemm %dx%dx%d: buffers of %d, %d, %d elements", m, n, k, as.n, bs.n, cs.n))
	}
	lda, ldb := k, n
	if transA {
		lda = m
	}
	if transB {
		ldb = k
	}
	o.gemm(transA, transB, m, n, k, alpha, plainMat(as.m, as.off, lda), plainMat(bs.m, bs.off, ldb), beta, plainMat(cs.m, cs.off, n))
}
