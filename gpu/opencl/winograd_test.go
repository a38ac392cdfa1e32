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

// setWinograd gives o a Winograd algorithm in mode for the rest of the
// test (as New builds it from Config.Winograd).
func setWinograd(t testing.TB, o *OpenCL, mode string) {
	t.Helper()
	old := o.wino
	o.wino = newWinograd(o, mode)
	t.Cleanup(func() { o.wino = old })
}

// winogradBatched is o's Winograd algorithm in mode with the 16 products
// of a chunk launched as one (batched) or one by one.
func winogradBatched(o *OpenCL, mode string, batched bool) *winograd {
	w := newWinograd(o, mode)
	w.batched = batched
	return w
}

// withWinograd runs run with o's Winograd algorithm replaced by w.
func withWinograd(o *OpenCL, w *winograd, run func()) {
	old := o.wino
	o.wino = w
	defer func() { o.wino = old }()
	run()
}

// winoGeoms are 3×3 stride-1 convolutions on odd and even planes (1×1 to
// 14×14), padded by 0, 1 and 2 (the data gradient's padding is then 2, 1
// and 0), unevenly, and by more than the filter's reach (3 and 4: the data
// gradient's padding is negative, the tiles crop dy), at batches 1 and 3, with channel counts that are
// not multiples of 4, and one with enough channels for the products to
// sum long.
var winoGeoms = []gpu.ConvGeom{
	{N: 1, C: 5, H: 1, W: 1, K: 7, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 3, C: 5, H: 2, W: 2, K: 7, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 3, C: 3, H: 3, W: 3, K: 6, R: 3, S: 3},
	{N: 1, C: 3, H: 3, W: 3, K: 6, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 3, C: 6, H: 5, W: 7, K: 5, R: 3, S: 3},
	{N: 1, C: 6, H: 5, W: 7, K: 5, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 3, C: 7, H: 13, W: 13, K: 9, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 1, C: 7, H: 13, W: 13, K: 9, R: 3, S: 3},
	{N: 3, C: 5, H: 14, W: 14, K: 3, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 1, C: 5, H: 14, W: 14, K: 3, R: 3, S: 3},
	{N: 2, C: 4, H: 6, W: 5, K: 4, R: 3, S: 3, PadH: 2, PadW: 0}, // backward padded by 0 and 2
	{N: 2, C: 3, H: 5, W: 6, K: 5, R: 3, S: 3, PadH: 0, PadW: 1},
	{N: 2, C: 131, H: 13, W: 13, K: 70, R: 3, S: 3, PadH: 1, PadW: 1},
	{N: 2, C: 5, H: 4, W: 5, K: 6, R: 3, S: 3, PadH: 3, PadW: 4}, // backward padded by −1 and −2: cropped
}

// winoLaunches returns how many times each Winograd kernel ran since the
// profile was turned on, and the im2col and col2im kernels (all variants
// counted as "im2col" and "col2im"), and turns the profile off.
func winoLaunches(o *OpenCL) map[string]int {
	n := map[string]int{}
	for _, kt := range o.Profile(false) {
		for _, p := range []string{"im2col", "col2im"} {
			if strings.HasPrefix(kt.Name, p) {
				n[p] += kt.Launches
			}
		}
		if strings.HasPrefix(kt.Name, "wino_") {
			n[kt.Name] += kt.Launches
		}
	}
	return n
}

// winoChunks is how many chunks a Winograd pass from in to out channels
// over planes of h×w outputs runs in with workspace ws.
func winoChunks(t *testing.T, o *OpenCL, g *gpu.ConvGeom, ws gpu.Buffer, in, out, h, w int) int {
	nb := winoBatch(o.buf(ws), winoChans(in, out), winoTiles(h, w), g.N)
	if nb < 1 {
		t.Fatalf("workspace of %d holds no sample", ws.Len())
	}
	return (g.N + nb - 1) / nb
}

// TestOpenCLWinograd: with Winograd forced on, the forward (with and
// without bias) and the data gradient of 3×3 stride-1 convolutions match
// the CPU backend within the backend's tolerance, run the Winograd
// kernels and neither im2col nor col2im, and give the same bits twice,
// and again with the 16 products launched one by one (winograd.batched false;
// none of these is split in k);
// the filter gradient (im2col and GEMM) still matches; and with the
// workspace of one sample, the batch runs in chunks and still matches.
func TestOpenCLWinograd(t *testing.T) {
	o := openCLForTest(t)
	setWinograd(t, o, WinogradOn)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(41, 42))
	for _, g := range winoGeoms {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
			if !o.wino.runs(&g) {
				t.Fatal("Winograd not chosen with the mode forced on")
			}
			x := newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
			w := newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
			bias := newTwin(o, gputest.Rand(r, g.K))
			y := newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
			dy := newTwin(o, gputest.Rand(r, y.cpu.Len()))
			dx := newTwin(o, gputest.Rand(r, x.cpu.Len())) // garbage: must be overwritten
			dw := newTwin(o, gputest.Rand(r, w.cpu.Len()))
			wsC := cpu.Alloc(cpu.ConvWorkspace(g))
			one := g
			one.N = 1
			for _, ws := range []gpu.Buffer{o.Alloc(o.ConvWorkspace(g)), o.Alloc(o.ConvWorkspace(one))} {
				chunks := winoChunks(t, o, &g, ws, g.C, g.K, g.OH, g.OW)
				for _, withBias := range []bool{false, true} {
					bc, bo := gpu.Buffer(nil), gpu.Buffer(nil)
					if withBias {
						bc, bo = bias.cpu, bias.cl
					}
					cpu.ConvForward(g, y.cpu, x.cpu, w.cpu, bc, wsC)
					o.Profile(true)
					o.ConvForward(g, y.cl, x.cl, w.cl, bo, ws)
					n := winoLaunches(o)
					y.check(t, o, fmt.Sprintf("forward bias=%v, %d chunks", withBias, chunks))
					if n["wino_filter"] != 1 || n["wino_input"] != chunks || n["wino_output"] != chunks || n["im2col"] != 0 {
						t.Errorf("forward in %d chunks launched %v, want Winograd's kernels and no im2col", chunks, n)
					}
				}
				first := download(o, y.cl)
				o.ConvForward(g, y.cl, x.cl, w.cl, bias.cl, ws)
				requireSameBits(t, "forward, second run", download(o, y.cl), first)
				withWinograd(o, winogradBatched(o, WinogradOn, false), func() { o.ConvForward(g, y.cl, x.cl, w.cl, bias.cl, ws) })
				requireSameBits(t, "forward, 16 products", download(o, y.cl), first)

				chunks = winoChunks(t, o, &g, ws, g.K, g.C, g.H, g.W)
				cpu.ConvBackwardData(g, dx.cpu, dy.cpu, w.cpu, wsC)
				o.Profile(true)
				o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
				n := winoLaunches(o)
				dx.check(t, o, fmt.Sprintf("backward data, %d chunks", chunks))
				if n["wino_filter"] != 1 || n["wino_input"] != chunks || n["wino_output"] != chunks || n["col2im"] != 0 {
					t.Errorf("backward data in %d chunks launched %v, want Winograd's kernels and no col2im", chunks, n)
				}
				first = download(o, dx.cl)
				o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
				requireSameBits(t, "backward data, second run", download(o, dx.cl), first)
				withWinograd(o, winogradBatched(o, WinogradOn, false), func() { o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws) })
				requireSameBits(t, "backward data, 16 products", download(o, dx.cl), first)

				cpu.ConvBackwardFilter(g, dw.cpu, bias.cpu, dy.cpu, x.cpu, wsC)
				o.ConvBackwardFilter(g, dw.cl, bias.cl, dy.cl, x.cl, ws)
				dw.check(t, o, "backward filter")
			}
		})
	}
}

// TestOpenCLWinogradGate: the auto mode picks Winograd for AlexNet's 3×3
// layers and not for few channels, 1×1 or 3×3 planes, strides, groups or
// other filter sizes; off turns it off everywhere; on everywhere it
// applies; half storage never; and ConvWorkspace grows only where it is
// chosen.
func TestOpenCLWinogradGate(t *testing.T) {
	o := openCLForTest(t)
	setFFT(t, o, FFTOff) // the 5×5 layer would grow the workspace for FFT (TestOpenCLFFTGate)
	alex := gpu.ConvGeom{N: 32, C: 192, H: 13, W: 13, K: 384, R: 3, S: 3, PadH: 1, PadW: 1}
	few := gpu.ConvGeom{N: 32, C: 32, H: 13, W: 13, K: 384, R: 3, S: 3, PadH: 1, PadW: 1}
	small := gpu.ConvGeom{N: 32, C: 192, H: 3, W: 3, K: 384, R: 3, S: 3, PadH: 1, PadW: 1}
	strided := gpu.ConvGeom{N: 32, C: 192, H: 13, W: 13, K: 384, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}
	grouped := gpu.ConvGeom{N: 32, C: 192, H: 13, W: 13, K: 384, R: 3, S: 3, Groups: 2, PadH: 1, PadW: 1}
	five := gpu.ConvGeom{N: 32, C: 192, H: 13, W: 13, K: 384, R: 5, S: 5, PadH: 2, PadW: 2}
	cases := []struct {
		name string
		g    gpu.ConvGeom
		auto bool
		on   bool
	}{
		{"alexnet conv3", alex, true, true},
		{"32 channels", few, false, true},
		{"3x3 plane", small, false, true},
		{"stride 2", strided, false, false},
		{"2 groups", grouped, false, false},
		{"5x5", five, false, false},
	}
	for _, c := range cases {
		g := c.g
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		for _, m := range []struct {
			mode string
			want bool
		}{{WinogradAuto, c.auto}, {WinogradOn, c.on}, {WinogradOff, false}} {
			setWinograd(t, o, m.mode)
			if got := o.wino.runs(&g); got != m.want {
				t.Errorf("%s, mode %s: Winograd %v, want %v", c.name, m.mode, got, m.want)
			}
			base := g.ColRows() * g.OH * g.OW * g.N
			if ws := o.ConvWorkspace(g); (ws > base) != m.want {
				t.Errorf("%s, mode %s: workspace %d, column matrix %d: grown %v, want %v", c.name, m.mode, ws, base, ws > base, m.want)
			}
		}
	}
	h := openCLHalfForTest(t)
	setWinograd(t, h, WinogradOn)
	if g := alex; g.Setup() == nil && h.wino.runs(&g) {
		t.Error("half storage: Winograd chosen")
	}
}

// TestOpenCLWinogradHalfOff: with half storage and Winograd forced on, a
// 3×3 convolution still runs im2col and col2im (and matches the CPU).
func TestOpenCLWinogradHalfOff(t *testing.T) {
	o := openCLHalfForTest(t)
	setWinograd(t, o, WinogradOn)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(43, 44))
	g := gpu.ConvGeom{N: 2, C: 5, H: 13, W: 13, K: 7, R: 3, S: 3, PadH: 1, PadW: 1}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	x := newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
	w := newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
	y := newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
	dx := newTwin(o, gputest.Rand(r, x.cpu.Len()))
	ws, wsC := o.Alloc(o.ConvWorkspace(g)), cpu.Alloc(cpu.ConvWorkspace(g))
	o.Profile(true)
	o.ConvForward(g, y.cl, x.cl, w.cl, nil, ws)
	o.ConvBackwardData(g, dx.cl, y.cl, w.cl, ws)
	n := winoLaunches(o)
	cpu.ConvForward(g, y.cpu, x.cpu, w.cpu, nil, wsC)
	y.check(t, o, "forward")
	cpu.ConvBackwardData(g, dx.cpu, y.cpu, w.cpu, wsC)
	dx.check(t, o, "backward data")
	if n["wino_input"] != 0 || n["im2col"] != 1 || n["col2im"] != 1 {
		t.Errorf("half storage, Winograd forced: launched %v, want im2col and col2im only", n)
	}
}

// TestOpenCLWinogradKeptColumns: a convolution that runs Winograd keeps no
// column matrices (ConvKeepColumns answers nil); one whose buffer was
// granted before Winograd was turned on gets from ConvForwardKeep the
// bits of ConvForward, and from ConvBackwardFilterCols those of
// ConvBackwardFilter: the forward expands x into the buffer for it.
func TestOpenCLWinogradKeptColumns(t *testing.T) {
	o := openCLForTest(t)
	r := rand.New(rand.NewPCG(45, 46))
	g := gpu.ConvGeom{N: 3, C: 6, H: 7, W: 9, K: 5, R: 3, S: 3, PadH: 1, PadW: 1}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	setWinograd(t, o, WinogradOff)
	cols := o.ConvKeepColumns(g)
	if cols == nil {
		t.Fatal("no kept columns with Winograd off")
	}
	setWinograd(t, o, WinogradOn)
	if c := o.ConvKeepColumns(g); c != nil {
		t.Error("ConvKeepColumns granted a buffer to a Winograd convolution")
	}
	x, w, dy, ws := checkKeptForward(t, o, r, g, cols)
	dw1, dw2 := o.Alloc(w.cl.Len()), o.Alloc(w.cl.Len())
	db1, db2 := o.Alloc(g.K), o.Alloc(g.K)
	o.ConvBackwardFilter(g, dw1, db1, dy.cl, x.cl, ws)
	o.Fill(ws, float32(math.NaN())) // the workspace holds nothing the kept path needs
	o.ConvBackwardFilterCols(g, dw2, db2, dy.cl, ws, cols)
	requireSameBits(t, "ConvBackwardFilterCols", download(o, dw2), download(o, dw1))
	requireSameBits(t, "ConvBackwardFilterCols bias", download(o, db2), download(o, db1))
}

// TestOpenCLWinogradMode: New refuses a Winograd mode that is none
// of 0, 1 and auto, naming it, before it opens a device.
func TestOpenCLWinogradMode(t *testing.T) {
	checkModeSetting(t, "Winograd", func(m string) error { _, err := winogradMode(m); return err },
		func(cfg *Config, m string) { cfg.Winograd = m }, "yes", ErrWinograd)
}

// BenchmarkOpenCLWinograd times AlexNet's three 3×3 convolutions (batch
// 32, 13×13 planes; COTRAIN_BENCH_BATCH sets another) forward (no bias) and
// backward data, by im2col and GEMM ("im2col"), by Winograd with its 16
// products in one launch ("winograd", the default) and in 16
// ("winograd-16"), in one run:
//
//	go test -c -tags opencl -o .dev/gpu.test ./gpu
//	.dev/gpu.test -test.run '^$' -test.bench OpenCLWinograd -test.benchtime 50x
//
// The ratio of a layer's im2col time to its winograd time is the
// speed-up. On PoCL (OpenCL on the CPU) both are bound by the CPU's
// arithmetic and its ratios say little about a GPU's.
func BenchmarkOpenCLWinograd(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	r := newBenchRand()
	for _, c := range alexConvs {
		g := c.g
		g.N = nb
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		if !winoEligible(g) {
			continue
		}
		x, w := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows())
		y, dx := o.Alloc(g.N*g.K*g.OH*g.OW), o.Alloc(g.N*g.C*g.H*g.W)
		for _, z := range []gpu.Buffer{x, w, y} {
			o.Upload(z, gputest.Rand(r, z.Len()))
		}
		setWinograd(b, o, WinogradOn)
		ws := o.Alloc(o.ConvWorkspace(g)) // room for both paths
		// The multiplications of im2col's products per second, whichever
		// path ran: a rate comparable with the GEMM's.
		flops := 2 * float64(g.N*g.K*g.OH*g.OW*g.ColRows())
		for _, m := range []struct {
			name, mode string
			batched    bool
		}{{"im2col", WinogradOff, true}, {"winograd", WinogradOn, true}, {"winograd-16", WinogradOn, false}} {
			b.Run(c.name+"/forward/"+m.name, func(b *testing.B) {
				withWinograd(o, winogradBatched(o, m.mode, m.batched), func() {
					benchKernel(b, o, 0, func() { o.ConvForward(g, y, x, w, nil, ws) })
				})
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "im2col-TFLOPS")
			})
			b.Run(c.name+"/backward-data/"+m.name, func(b *testing.B) {
				withWinograd(o, winogradBatched(o, m.mode, m.batched), func() {
					benchKernel(b, o, 0, func() { o.ConvBackwardData(g, dx, y, w, ws) })
				})
				b.ReportMetric(flops*float64(b.N)/b.Elapsed().Seconds()/1e12, "im2col-TFLOPS")
			})
		}
	}
}

// TestOpenCLWinogradAlexNetShapes: AlexNet's conv3 and conv4 (13×13
// planes, 192→384 and 384→256 channels: the products sum 192 and 384 terms
// deep, the data gradient's 384 and 256) match the CPU by Winograd too, at
// batch 2.
func TestOpenCLWinogradAlexNetShapes(t *testing.T) {
	o := openCLForTest(t)
	setWinograd(t, o, WinogradOn)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(47, 48))
	for _, c := range alexConvs[2:4] {
		g := c.g
		g.N = 2
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		x := newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
		w := newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
		bias := newTwin(o, gputest.Rand(r, g.K))
		y := newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
		dy, dx := newTwin(o, gputest.Rand(r, y.cpu.Len())), newTwin(o, gputest.Rand(r, x.cpu.Len()))
		ws, wsC := o.Alloc(o.ConvWorkspace(g)), cpu.Alloc(cpu.ConvWorkspace(g))
		cpu.ConvForward(g, y.cpu, x.cpu, w.cpu, bias.cpu, wsC)
		o.ConvForward(g, y.cl, x.cl, w.cl, bias.cl, ws)
		y.check(t, o, c.name+" forward")
		cpu.ConvBackwardData(g, dx.cpu, dy.cpu, w.cpu, wsC)
		o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
		dx.check(t, o, c.name+" backward data")
	}
}

// TestOpenCLWinogradTimedVariant: with per-shape timing on, the first
// batched launch of a large enough shape times every GEMM variant and
// keeps the fastest for the shape; the results keep their bits, and the
// next call launches no timing runs.
func TestOpenCLWinogradTimedVariant(t *testing.T) {
	o := openCLForTest(t)
	setWinograd(t, o, WinogradOn)
	g := gpu.ConvGeom{N: 8, C: 96, H: 14, W: 14, K: 96, R: 3, S: 3, PadH: 1, PadW: 1} // 16 products of 96×392×96: 1.2e8 flops
	if err := g.Setup(); err != nil {                                                 // winoTiles reads OH and OW
		t.Fatal(err)
	}
	key := batchShape{16, g.K, winoCols(g.N, winoTiles(g.OH, g.OW)), round4(g.C)}
	checkTimedVariant(t, o, rand.New(rand.NewPCG(49, 50)), g, key,
		func() int { return o.tuner.pick(key.m, 16*key.n, key.kc) }, "the tuner's pick")
}
