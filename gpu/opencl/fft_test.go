//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// setFFT gives o an FFT algorithm in mode for the rest of the test (as
// New builds it from Config.FFT).
func setFFT(t testing.TB, o *OpenCL, mode string) { useFFT(t, o, newFFTConv(o, mode)) }

// useFFT gives o the FFT algorithm f for the rest of the test.
func useFFT(t testing.TB, o *OpenCL, f *fftConv) {
	t.Helper()
	old := o.fftConv
	o.fftConv = f
	t.Cleanup(func() { o.fftConv = old })
}

// withFFT runs run with o's FFT algorithm replaced by f.
func withFFT(o *OpenCL, f *fftConv, run func()) {
	old := o.fftConv
	o.fftConv = f
	defer func() { o.fftConv = old }()
	run()
}

// fftGeoms are stride-1 convolutions with 3×3, 5×5 and 7×7 (and 5×3)
// filters whose padded planes fit 16 (P = 16) or 32 (P = 32), planes from
// 1×1 to 28×28, padded by 0 to 3 and unevenly, padded planes that fill the
// FFT exactly (the circular products then have no slack against
// wraparound), at batches 1 to 3, with channel counts that are not
// multiples of 4, and one with enough channels for the products to sum
// long.
var fftGeoms = []gpu.ConvGeom{
	{N: 1, C: 5, H: 1, W: 1, K: 7, R: 5, S: 5, PadH: 2, PadW: 2},
	{N: 3, C: 5, H: 6, W: 7, K: 7, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 2, C: 3, H: 12, W: 12, K: 6, R: 5, S: 5, PadH: 2, PadW: 2},    // 16: exact
	{N: 3, C: 6, H: 10, W: 9, K: 5, R: 7, S: 7, PadH: 3, PadW: 3},     // 16
	{N: 1, C: 7, H: 13, W: 13, K: 9, R: 3, S: 3, PadH: 1, PadW: 1},    // 16
	{N: 2, C: 4, H: 9, W: 11, K: 5, R: 5, S: 3, PadH: 2, PadW: 0},     // uneven
	{N: 3, C: 5, H: 27, W: 27, K: 6, R: 5, S: 5, PadH: 2, PadW: 2},    // 32: AlexNet conv2's plane
	{N: 2, C: 3, H: 28, W: 26, K: 5, R: 5, S: 5, PadH: 2, PadW: 3},    // 32: exact
	{N: 1, C: 6, H: 20, W: 20, K: 3, R: 7, S: 7},                      // no padding
	{N: 2, C: 3, H: 17, W: 5, K: 4, R: 3, S: 3, PadH: 0, PadW: 1},     // P = 32 for 17 rows
	{N: 2, C: 5, H: 4, W: 5, K: 6, R: 3, S: 3, PadH: 3, PadW: 4},      // padded past the filter's reach
	{N: 2, C: 131, H: 13, W: 13, K: 70, R: 5, S: 5, PadH: 1, PadW: 1}, // 16, deep
}

// fftLaunches returns how many times each FFT kernel ran since the profile
// was turned on (all sizes counted as "fft_r2c" and "fft_c2r", the thin
// transforms also as "fft_r2c_thin" and "fft_c2r_thin"), and the im2col and col2im
// kernels, and turns the profile off.
func fftLaunches(o *OpenCL) map[string]int {
	n := map[string]int{}
	for _, kt := range o.Profile(false) {
		for _, p := range []string{"im2col", "col2im", "fft_r2c", "fft_r2c_thin", "fft_c2r", "fft_c2r_thin", "wino_"} {
			if strings.HasPrefix(kt.Name, p) {
				n[p] += kt.Launches
			}
		}
	}
	return n
}

// fftChunks is how many chunks a pass of unit workspace elements per
// sample runs in with workspace ws.
func fftChunks(o *OpenCL, g *gpu.ConvGeom, ws gpu.Buffer, unit int) int {
	nb := fftBatch("test", o.buf(ws), unit, g.N)
	return (g.N + nb - 1) / nb
}

// TestOpenCLFFT: with FFT forced on, the forward (with and without bias),
// the data gradient and the filter gradient of stride-1 convolutions
// match the CPU backend within the backend's tolerance, run the FFT
// kernels (one filter transform, one or two per chunk) and neither im2col
// nor col2im, and give the same bits twice; with the workspace of one
// sample, the batch runs in chunks and still matches; all of it with the
// activations' spectra duplicated in the products and with the other
// operand's (fftConv.dupActs).
func TestOpenCLFFT(t *testing.T) {
	o := openCLForTest(t)
	setFFT(t, o, FFTOn)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(51, 52))
	sizes := map[int]bool{}
	for _, dup := range []int{1, 2} {
		for _, g := range fftGeoms {
			if err := g.Setup(); err != nil {
				t.Fatal(err)
			}
			sizes[fftSize(&g)] = true
			t.Run(fmt.Sprintf("dup=%s/%+v", map[int]string{1: "acts", 2: "other"}[dup], g), func(t *testing.T) {
				f := newFFTConv(o, FFTOn)
				f.dupForce = dup
				useFFT(t, o, f)
				if !o.fftConv.runs(&g) {
					t.Fatal("FFT not chosen with the mode forced on")
				}
				x := newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
				w := newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
				bias := newTwin(o, gputest.Rand(r, g.K))
				y := newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
				dy := newTwin(o, gputest.Rand(r, y.cpu.Len()))
				dx := newTwin(o, gputest.Rand(r, x.cpu.Len())) // garbage: must be overwritten
				dw := newTwin(o, gputest.Rand(r, w.cpu.Len()))
				db := newTwin(o, gputest.Rand(r, g.K))
				y2, dx2, dw2 := o.Alloc(y.cl.Len()), o.Alloc(dx.cl.Len()), o.Alloc(dw.cl.Len())
				wsC := cpu.Alloc(cpu.ConvWorkspace(g))
				one := g
				one.N = 1
				fwd, _ := o.fftConv.units(&g, fftPassForward)
				data, _ := o.fftConv.units(&g, fftPassData)
				filter, _ := o.fftConv.units(&g, fftPassFilter)
				for _, ws := range []gpu.Buffer{o.Alloc(o.ConvWorkspace(g)), o.Alloc(o.ConvWorkspace(one))} {
					chunks := fftChunks(o, &g, ws, fwd)
					for _, withBias := range []bool{false, true} {
						bc, bo := gpu.Buffer(nil), gpu.Buffer(nil)
						if withBias {
							bc, bo = bias.cpu, bias.cl
						}
						cpu.ConvForward(g, y.cpu, x.cpu, w.cpu, bc, wsC)
						o.Profile(true)
						o.ConvForward(g, y.cl, x.cl, w.cl, bo, ws)
						n := fftLaunches(o)
						y.check(t, o, fmt.Sprintf("forward bias=%v, %d chunks", withBias, chunks))
						if n["fft_r2c"] != 1+chunks || n["fft_c2r"] != chunks || n["im2col"] != 0 || n["wino_"] != 0 {
							t.Errorf("forward in %d chunks launched %v, want FFT's kernels and no im2col", chunks, n)
						}
						// The filters (and planes of at most 8×8) by the thin
						// transform.
						if thin := 1 + chunks*b2i(g.H <= fftThinMax && g.W <= fftThinMax); n["fft_r2c_thin"] != thin {
							t.Errorf("forward in %d chunks launched %d thin transforms, want %d", chunks, n["fft_r2c_thin"], thin)
						}
					}
					first := download(o, y.cl)
					o.ConvForward(g, y.cl, x.cl, w.cl, bias.cl, ws)
					requireSameBits(t, "forward, second run", download(o, y.cl), first)
					// ReLU6 fused into the inverse transform: the bits of the
					// forward, then the activation. (Against the CPU, clipping
					// shrinks the tolerance's floor, 1e-2 of the largest value,
					// below an error that scales with the unclipped values.)
					o.Activate(gpu.ReLU6, y.cl, y.cl)
					first = download(o, y.cl)
					o.ConvForwardAct(gpu.ReLU6, g, y.cl, x.cl, w.cl, bias.cl, ws, nil)
					requireSameBits(t, "forward + ReLU6 fused", download(o, y.cl), first)

					chunks = fftChunks(o, &g, ws, data)
					cpu.ConvBackwardData(g, dx.cpu, dy.cpu, w.cpu, wsC)
					o.Profile(true)
					o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
					n := fftLaunches(o)
					dx.check(t, o, fmt.Sprintf("backward data, %d chunks", chunks))
					if n["fft_r2c"] != 1+chunks || n["fft_c2r"] != chunks || n["col2im"] != 0 || n["wino_"] != 0 {
						t.Errorf("backward data in %d chunks launched %v, want FFT's kernels and no col2im", chunks, n)
					}
					first = download(o, dx.cl)
					o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
					requireSameBits(t, "backward data, second run", download(o, dx.cl), first)

					chunks = fftChunks(o, &g, ws, filter)
					o.Upload(dw.cl, gputest.Rand(r, dw.cl.Len())) // garbage: must be overwritten
					cpu.ConvBackwardFilter(g, dw.cpu, db.cpu, dy.cpu, x.cpu, wsC)
					o.Profile(true)
					o.ConvBackwardFilter(g, dw.cl, db.cl, dy.cl, x.cl, ws)
					n = fftLaunches(o)
					dw.check(t, o, fmt.Sprintf("backward filter, %d chunks", chunks))
					db.check(t, o, "bias gradient")
					if n["fft_r2c"] != 2*chunks || n["fft_c2r"] != 1 || n["fft_c2r_thin"] != 1 || n["im2col"] != 0 {
						t.Errorf("backward filter in %d chunks launched %v, want FFT's kernels (the thin inverse for R×S) and no im2col", chunks, n)
					}
					first = download(o, dw.cl)
					o.ConvBackwardFilter(g, dw.cl, nil, dy.cl, x.cl, ws)
					requireSameBits(t, "backward filter, second run", download(o, dw.cl), first)

					// Work-groups of 32 items, fewer than a group's row tasks:
					// the kernels' passes in several rounds, the same bits.
					small := newFFTConv(o, FFTOn)
					small.dupForce, small.wgCap = dup, 32
					withFFT(o, small, func() {
						o.ConvForward(g, y.cl, x.cl, w.cl, bias.cl, ws)
						o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
						o.ConvBackwardFilter(g, dw.cl, nil, dy.cl, x.cl, ws)
					})
					o.ConvForward(g, y2, x.cl, w.cl, bias.cl, ws)
					o.ConvBackwardData(g, dx2, dy.cl, w.cl, ws)
					o.ConvBackwardFilter(g, dw2, nil, dy.cl, x.cl, ws)
					requireSameBits(t, "forward, small work-groups", download(o, y.cl), download(o, y2))
					requireSameBits(t, "backward data, small work-groups", download(o, dx.cl), download(o, dx2))
					requireSameBits(t, "backward filter, small work-groups", download(o, dw.cl), download(o, dw2))
				}
			})
		}
	}
	if !sizes[16] || !sizes[32] {
		t.Errorf("FFT sizes covered %v, want 16 and 32", sizes)
	}
}

// TestOpenCLFFTGroups: the planes per work-group fit the local memory
// (with fftGroup's headroom) for devices of 32 KiB (OpenCL's least), 48
// KiB (the H100's) and more, and not reported.
func TestOpenCLFFTGroups(t *testing.T) {
	for _, c := range []struct {
		p         int
		mem       int64
		fat, thin int
	}{
		{32, 32 << 10, 4, 16},
		{32, 48 << 10, 8, 32},
		{32, 0, 4, 16},
		{32, 1 << 30, 8, 32},
		{16, 32 << 10, 8, 32},
		{16, 48 << 10, 16, 32},
	} {
		fat, thin := fftGroup(c.p, c.mem), fftThinGroup(c.p, c.mem)
		if fat != c.fat || thin != c.thin {
			t.Errorf("P = %d, %d bytes: %d and %d planes (fft_c2r_thin), want %d and %d", c.p, c.mem, fat, thin, c.fat, c.thin)
		}
		room := c.mem
		if room <= 0 {
			room = 32 << 10
		}
		if need := int64(thin * (fftThinMax*(c.p/2+1) + 1) * 8); need > room {
			t.Errorf("P = %d, %d bytes: fft_c2r_thin needs %d", c.p, c.mem, need)
		}
		if need := int64(fftThinPlanes * (fftThinMax*fftThinMax + 1) * 4); need > room {
			t.Errorf("P = %d, %d bytes: fft_r2c_thin needs %d", c.p, c.mem, need)
		}
	}
}

// tolUnits is the largest error of got against want in units of the
// backend's tolerance bound: max |got−want| / (|want| + 1e-2·max|want|)
// (the backend's tolerance is 1e-4 in this measure).
func tolUnits(got, want []float32) float64 {
	var top, worst float64
	for _, v := range want {
		top = max(top, math.Abs(float64(v)))
	}
	for i := range want {
		w := float64(want[i])
		worst = max(worst, math.Abs(float64(got[i])-w)/(math.Abs(w)+1e-2*top))
	}
	return worst
}

// TestOpenCLFFTAlexNetConv2: AlexNet's conv2 (27×27 planes, 64→192
// channels, 5×5 filters padded by 2: P = 32) matches the CPU by FFT in all
// three passes at batch 2, with the bias and a fused ReLU forward; it logs
// each pass's error in the tolerance's measure (tolUnits) by FFT and by
// im2col and GEMM (FFT off), the figures docs/opencl.md quotes.
func TestOpenCLFFTAlexNetConv2(t *testing.T) {
	o := openCLForTest(t)
	setFFT(t, o, FFTAuto)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(53, 54))
	g := alexConvs[1].g
	g.N = 2
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	if !o.fftConv.runs(&g) || fftSize(&g) != 32 {
		t.Fatalf("auto mode: FFT %v at size %d for conv2, want true at 32", o.fftConv.runs(&g), fftSize(&g))
	}
	x := newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
	w := newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
	bias := newTwin(o, gputest.Rand(r, g.K))
	y := newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
	dy, dx := newTwin(o, gputest.Rand(r, y.cpu.Len())), newTwin(o, gputest.Rand(r, x.cpu.Len()))
	dw, db := newTwin(o, gputest.Rand(r, w.cpu.Len())), newTwin(o, gputest.Rand(r, g.K))
	ws, wsC := o.Alloc(o.ConvWorkspace(g)), cpu.Alloc(cpu.ConvWorkspace(g))
	relu := gpu.ReLU
	cpu.ConvForward(g, y.cpu, x.cpu, w.cpu, bias.cpu, wsC)
	cpu.Activate(relu, y.cpu, y.cpu)
	cpu.ConvBackwardData(g, dx.cpu, dy.cpu, w.cpu, wsC)
	cpu.ConvBackwardFilter(g, dw.cpu, db.cpu, dy.cpu, x.cpu, wsC)
	errs := map[string]float64{}
	for _, mode := range []string{FFTOff, FFTAuto} {
		setFFT(t, o, mode)
		o.Profile(true)
		o.ConvForwardAct(relu, g, y.cl, x.cl, w.cl, bias.cl, ws, nil)
		n := fftLaunches(o)
		y.check(t, o, "forward + ReLU, fft="+mode)
		if mode == FFTAuto && (n["fft_r2c"] != 2 || n["fft_c2r"] != 1 || n["im2col"] != 0) {
			t.Errorf("fused forward launched %v, want FFT's kernels only", n)
		}
		o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
		dx.check(t, o, "backward data, fft="+mode)
		o.ConvBackwardFilter(g, dw.cl, db.cl, dy.cl, x.cl, ws)
		dw.check(t, o, "backward filter, fft="+mode)
		for name, tw := range map[string]twin{"forward": y, "data": dx, "filter": dw} {
			errs[name+"/fft="+mode] = tolUnits(download(o, tw.cl), []float32(tw.cpu.(gpu.Host)))
		}
	}
	t.Logf("largest error / (|want| + 1e-2·max|want|): %v", errs)
}

// TestOpenCLFFTGate: the auto mode picks FFT for AlexNet's conv2 and not
// for 3×3 filters (Winograd's), few channels, planes past 32, strides or
// groups; off turns it off everywhere; on everywhere it applies, before
// Winograd; half storage never; ConvWorkspace holds the spectra where it
// is chosen; and ConvKeepColumns keeps nothing for an FFT layer.
func TestOpenCLFFTGate(t *testing.T) {
	o := openCLForTest(t)
	conv2 := alexConvs[1].g
	conv3 := alexConvs[2].g
	few := gpu.ConvGeom{N: 32, C: 32, H: 27, W: 27, K: 192, R: 5, S: 5, PadH: 2, PadW: 2}
	big := gpu.ConvGeom{N: 32, C: 64, H: 29, W: 29, K: 192, R: 5, S: 5, PadH: 2, PadW: 2}
	strided := gpu.ConvGeom{N: 32, C: 64, H: 27, W: 27, K: 192, R: 5, S: 5, StrideH: 2, StrideW: 2, PadH: 2, PadW: 2}
	grouped := gpu.ConvGeom{N: 32, C: 64, H: 27, W: 27, K: 192, R: 5, S: 5, Groups: 2, PadH: 2, PadW: 2}
	point := gpu.ConvGeom{N: 32, C: 64, H: 27, W: 27, K: 192, R: 1, S: 1}
	cases := []struct {
		name string
		g    gpu.ConvGeom
		auto bool
		on   bool
	}{
		{"alexnet conv2", conv2, true, true},
		{"alexnet conv3 (3x3)", conv3, false, true},
		{"32 channels", few, false, true},
		{"29x29 padded to 33", big, false, false},
		{"stride 2", strided, false, false},
		{"2 groups", grouped, false, false},
		{"1x1", point, false, false},
	}
	setWinograd(t, o, WinogradAuto)
	for _, c := range cases {
		g := c.g
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct {
			mode string
			want bool
		}{{FFTAuto, c.auto}, {FFTOn, c.on}, {FFTOff, false}} {
			setFFT(t, o, m.mode)
			if got := o.fftConv.runs(&g); got != m.want {
				t.Errorf("%s, mode %s: FFT %v, want %v", c.name, m.mode, got, m.want)
			}
			if m.want {
				if ws := o.ConvWorkspace(g); ws < o.fftConv.workspace(&g) {
					t.Errorf("%s, mode %s: workspace %d, FFT needs %d", c.name, m.mode, ws, o.fftConv.workspace(&g))
				}
				if o.ConvKeepColumns(g) != nil {
					t.Errorf("%s, mode %s: ConvKeepColumns granted a buffer to an FFT convolution", c.name, m.mode)
				}
			}
		}
	}
	h := openCLHalfForTest(t)
	setFFT(t, h, FFTOn)
	if g := conv2; g.Setup() == nil && h.fftConv.runs(&g) {
		t.Error("half storage: FFT chosen")
	}
}

// TestOpenCLFFTKeptColumns: a convolution whose kept-column buffer was
// granted before FFT was turned on gets from ConvForwardKeep the bits of
// ConvForward (by FFT), and from ConvBackwardFilterCols the filter gradient
// of the columns the forward expanded for it (im2col's, within tolerance
// of the FFT one).
func TestOpenCLFFTKeptColumns(t *testing.T) {
	o := openCLForTest(t)
	r := rand.New(rand.NewPCG(55, 56))
	g := gpu.ConvGeom{N: 3, C: 6, H: 7, W: 9, K: 5, R: 5, S: 5, PadH: 2, PadW: 2}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	setFFT(t, o, FFTOff)
	cols := o.ConvKeepColumns(g)
	if cols == nil {
		t.Fatal("no kept columns with FFT off")
	}
	setFFT(t, o, FFTOn)
	x, w, dy, ws := checkKeptForward(t, o, r, g, cols)
	dw1 := newTwin(o, gputest.Rand(r, w.cl.Len()))
	dw2, db2 := o.Alloc(w.cl.Len()), o.Alloc(g.K)
	cpu := newCPU()
	cpu.ConvBackwardFilter(g, dw1.cpu, cpu.Alloc(g.K), dy.cpu, x.cpu, cpu.Alloc(cpu.ConvWorkspace(g)))
	o.Fill(ws, float32(math.NaN())) // the workspace holds nothing the kept path needs
	o.ConvBackwardFilterCols(g, dw2, db2, dy.cl, ws, cols)
	o.Copy(dw1.cl, dw2)
	dw1.check(t, o, "ConvBackwardFilterCols")
}

// TestOpenCLFFTTimedVariant: with per-shape timing on, the first batched
// FFT launch of a shape large enough times every GEMM variant and keeps
// the fastest for the shape; the results keep their bits, and the next
// call launches no timing runs.
func TestOpenCLFFTTimedVariant(t *testing.T) {
	o := openCLForTest(t)
	setFFT(t, o, FFTOn)
	g := gpu.ConvGeom{N: 2, C: 64, H: 27, W: 27, K: 192, R: 5, S: 5, PadH: 2, PadW: 2} // 544 products of 192×4×128: 1.07e8 flops
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	key := batchShape{m: g.K, n: 2 * g.N, kc: 2 * g.C, layers: fftFreqs(32)}
	checkTimedVariant(t, o, rand.New(rand.NewPCG(57, 58)), g, key,
		func() int { return o.fftConv.pick(key.m, key.n, key.kc, key.layers) }, "fftConv.pick's")
}

// TestOpenCLFFTMode: New refuses an FFT mode that is none of 0, 1
// and auto, naming it, before it opens a device.
func TestOpenCLFFTMode(t *testing.T) {
	checkModeSetting(t, "FFT", func(m string) error { _, err := fftMode(m); return err },
		func(cfg *Config, m string) { cfg.FFT = m }, "on", ErrFFT)
}

// BenchmarkOpenCLFFT times AlexNet's conv2 (batch 32, 27×27 planes, 5×5
// filters, 64→192 channels; COTRAIN_BENCH_BATCH sets another batch) and,
// for comparison with Winograd, conv3–conv5 (13×13, 3×3: P = 16), forward
// (no bias), backward data and backward filter, by im2col and GEMM
// ("im2col"; Winograd off) and by FFT ("fft"), and for conv3–conv5 by
// Winograd ("winograd"; forward and data gradient), in one run:
//
//	go test -c -tags opencl -o .dev/gpu.test ./gpu
//	.dev/gpu.test -test.run '^$' -test.bench OpenCLFFT -test.benchtime 50x
//
// im2col-TFLOPS counts im2col's multiplications per second whichever path
// ran, so the ratio of two paths' rates is their speed ratio. On PoCL
// (OpenCL on the CPU) every path is bound by the CPU's arithmetic and the
// ratios say little about a GPU.
func BenchmarkOpenCLFFT(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	r := newBenchRand()
	for _, c := range alexConvs[1:] {
		g := c.g
		g.N = nb
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		x, w := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows())
		y, dx := o.Alloc(g.N*g.K*g.OH*g.OW), o.Alloc(g.N*g.C*g.H*g.W)
		for _, z := range []gpu.Buffer{x, w, y} {
			o.Upload(z, gputest.Rand(r, z.Len()))
		}
		ws := o.Alloc(max(o.ConvWorkspace(g), o.fftConv.workspace(&g), o.wino.workspace(&g))) // room for every path
		flops := 2 * float64(g.N*g.K*g.OH*g.OW*g.ColRows())
		paths := []struct{ name, fft, wino string }{{"im2col", FFTOff, WinogradOff}, {"fft", FFTOn, WinogradOff}}
		if winoEligible(g) {
			paths = append(paths, struct{ name, fft, wino string }{"winograd", FFTOff, WinogradOn})
		}
		for _, m := range paths {
			passes := []struct {
				name string
				run  func()
			}{
				{"forward", func() { o.ConvForward(g, y, x, w, nil, ws) }},
				{"backward-data", func() { o.ConvBackwardData(g, dx, y, w, ws) }},
				{"backward-filter", func() { o.ConvBackwardFilter(g, w, nil, y, x, ws) }},
			}
			for _, p := range passes {
				if m.name == "winograd" && p.name == "backward-filter" {
					continue // im2col's
				}
				b.Run(c.name+"/"+p.name+"/"+m.name, func(b *testing.B) {
					setFFT(b, o, m.fft)
					setWinograd(b, o, m.wino)
					benchKernel(b, o, 0, p.run)
					b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "im2col-TFLOPS")
				})
			}
		}
	}
}
