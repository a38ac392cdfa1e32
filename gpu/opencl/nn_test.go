//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

var clConvGeoms = []gpu.ConvGeom{
	{N: 2, C: 3, H: 7, W: 9, K: 4, R: 3, S: 3, PadH: 1, PadW: 1},                                    // same padding
	{N: 1, C: 1, H: 28, W: 28, K: 6, R: 5, S: 5},                                                    // LeNet conv1
	{N: 3, C: 4, H: 9, W: 8, K: 6, R: 3, S: 2, StrideH: 2, StrideW: 3, PadH: 1},                     // strides, rectangular
	{N: 2, C: 6, H: 6, W: 6, K: 4, R: 3, S: 3, Groups: 2, PadH: 1, PadW: 1},                         // groups
	{N: 2, C: 5, H: 7, W: 7, K: 5, R: 3, S: 3, Groups: 5, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1}, // depthwise
	{N: 2, C: 3, H: 5, W: 6, K: 6, R: 3, S: 3, Groups: 3, PadH: 2, PadW: 0},                         // depthwise, multiplier 2
	{N: 2, C: 8, H: 5, W: 5, K: 12, R: 1, S: 1},                                                     // pointwise
	{N: 1, C: 4, H: 6, W: 6, K: 4, R: 1, S: 1, StrideH: 2, StrideW: 2, Groups: 2},                   // 1x1 strided, groups
	// depthwise over 2·100·100 output positions: the filter gradient is a
	// two-level reduction (redParts: 3 parts, the last one shorter)
	{N: 2, C: 3, H: 100, W: 100, K: 3, R: 3, S: 3, Groups: 3, PadH: 1, PadW: 1},
}

func TestOpenCLConv(t *testing.T) { bothStorages(t, testOpenCLConv) }

func testOpenCLConv(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(21, 22))
	for _, g := range clConvGeoms {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
			x := newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
			w := newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
			bias := newTwin(o, gputest.Rand(r, g.K))
			y := newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
			wsC, wsO := cpu.Alloc(cpu.ConvWorkspace(g)), o.Alloc(o.ConvWorkspace(g))
			for _, withBias := range []bool{false, true} {
				bc, bo := gpu.Buffer(nil), gpu.Buffer(nil)
				if withBias {
					bc, bo = bias.cpu, bias.cl
				}
				cpu.ConvForward(g, y.cpu, x.cpu, w.cpu, bc, wsC)
				o.ConvForward(g, y.cl, x.cl, w.cl, bo, wsO)
				y.check(t, o, fmt.Sprintf("forward bias=%v", withBias))
			}
			dy := newTwin(o, gputest.Rand(r, y.cpu.Len()))
			dx := newTwin(o, gputest.Rand(r, x.cpu.Len())) // garbage: must be overwritten
			cpu.ConvBackwardData(g, dx.cpu, dy.cpu, w.cpu, wsC)
			o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, wsO)
			dx.check(t, o, "backward data")
			dw := newTwin(o, gputest.Rand(r, w.cpu.Len()))
			cpu.ConvBackwardFilter(g, dw.cpu, bias.cpu, dy.cpu, x.cpu, wsC)
			o.ConvBackwardFilter(g, dw.cl, bias.cl, dy.cl, x.cl, wsO)
			dw.check(t, o, "backward filter")
			bias.check(t, o, "backward bias")
			cpu.ConvBackwardFilter(g, dw.cpu, nil, dy.cpu, x.cpu, wsC)
			o.ConvBackwardFilter(g, dw.cl, nil, dy.cl, x.cl, wsO)
			dw.check(t, o, "backward filter, no bias")
		})
	}
}

// TestOpenCLConvBatched checks the batched convolution: with a workspace
// for fewer samples than the batch, the batch is cut into chunks (3, 3, 1
// here) and the results still match the CPU; with room for all, a layer is
// one im2col and one GEMM per group (plus the bias pass without the GEMM
// epilogue), whatever the batch.
func TestOpenCLConvBatched(t *testing.T) { bothStorages(t, testOpenCLConvBatched) }

func testOpenCLConvBatched(t *testing.T, o *OpenCL) {
	setWinograd(t, o, WinogradOff) // the im2col path (TestOpenCLWinograd chunks Winograd's)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(25, 26))
	for _, g := range []gpu.ConvGeom{
		{N: 7, C: 3, H: 9, W: 7, K: 5, R: 3, S: 3, PadH: 1, PadW: 1},
		{N: 7, C: 4, H: 6, W: 6, K: 6, R: 3, S: 3, Groups: 2, StrideH: 2, StrideW: 2, PadH: 1},
		{N: 7, C: 4, H: 13, W: 11, K: 6, R: 3, S: 3, Groups: 2, StrideH: 2, StrideW: 2, PadH: 1}, // planes of 35: im2col_win
		{N: 7, C: 8, H: 4, W: 4, K: 12, R: 1, S: 1},                                              // pointwise: no workspace
	} {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
			x := newTwin(o, gputest.Rand(r, g.N*g.C*g.H*g.W))
			w := newTwin(o, gputest.Rand(r, g.K*g.ColRows()))
			bias := newTwin(o, gputest.Rand(r, g.K))
			y := newTwin(o, gputest.Rand(r, g.N*g.K*g.OH*g.OW))
			dy := newTwin(o, gputest.Rand(r, y.cpu.Len()))
			dx := newTwin(o, gputest.Rand(r, x.cpu.Len()))
			dw := newTwin(o, gputest.Rand(r, w.cpu.Len()))
			db := newTwin(o, gputest.Rand(r, g.K))
			wsC := cpu.Alloc(cpu.ConvWorkspace(g))
			per := g.ColRows() * g.OH * g.OW
			if g.Pointwise() {
				per = 0
			}
			if full := o.ConvWorkspace(g); full != g.N*per {
				t.Fatalf("ConvWorkspace %d, want %d (the whole batch)", full, g.N*per)
			}
			cpu.ConvForward(g, y.cpu, x.cpu, w.cpu, bias.cpu, wsC)
			cpu.ConvBackwardData(g, dx.cpu, dy.cpu, w.cpu, wsC)
			cpu.ConvBackwardFilter(g, dw.cpu, db.cpu, dy.cpu, x.cpu, wsC)
			for _, nb := range []int{3, g.N} {
				ws := o.Alloc(nb*per + 1)
				before := o.ctx.launches
				o.ConvForward(g, y.cl, x.cl, w.cl, bias.cl, ws)
				launches := o.ctx.launches - before
				y.check(t, o, fmt.Sprintf("forward, %d per chunk", nb))
				o.ConvBackwardData(g, dx.cl, dy.cl, w.cl, ws)
				dx.check(t, o, fmt.Sprintf("backward data, %d per chunk", nb))
				o.ConvBackwardFilter(g, dw.cl, db.cl, dy.cl, x.cl, ws)
				dw.check(t, o, fmt.Sprintf("backward filter, %d per chunk", nb))
				db.check(t, o, "backward bias")
				perGroup := 2 // im2col + GEMM
				if g.Pointwise() {
					perGroup = 1
				}
				want := g.GroupCount() * perGroup
				if !o.epilogueOn() {
					want++ // the bias pass; else the GEMM's epilogue adds it
				}
				if nb == g.N && launches != want {
					t.Errorf("forward of a batch of %d: %d launches, want %d", g.N, launches, want)
				}
			}
		})
	}
}

var clPoolGeoms = []gpu.PoolGeom{
	{N: 2, C: 3, H: 8, W: 8, KH: 2, KW: 2},                                                           // LeNet
	{N: 1, C: 2, H: 7, W: 9, KH: 3, KW: 3, StrideH: 2, StrideW: 2},                                   // overlap
	{N: 2, C: 2, H: 7, W: 7, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},                 // overlap + padding
	{N: 1, C: 3, H: 6, W: 7, KH: 3, KW: 2, StrideH: 2, StrideW: 2, CeilMode: true},                   // ceil
	{N: 2, C: 2, H: 5, W: 5, KH: 2, KW: 3, StrideH: 2, StrideW: 1, PadW: 1, CeilMode: true},          // ceil + pad
	{N: 1, C: 2, H: 9, W: 9, KH: 4, KW: 4, StrideH: 1, StrideW: 3, PadH: 2, PadW: 2},                 // heavy overlap
	{N: 2, C: 4, H: 7, W: 6, KH: 7, KW: 6},                                                           // global
	{N: 1, C: 1, H: 6, W: 6, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true}, // both
	// planes of at least 32 positions: both passes over planes, the
	// gather's stride-2 twin (AlexNet's 3×3/2) and its general one
	{N: 2, C: 3, H: 17, W: 15, KH: 3, KW: 3, StrideH: 2, StrideW: 2},
	{N: 1, C: 2, H: 16, W: 16, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true},
	{N: 1, C: 2, H: 13, W: 12, KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1, CeilMode: true},
	// dilated windows: small planes (one item per element), planes of 32
	// and more (the stride-2 gather and the general one), 1-D (H = 1)
	{N: 2, C: 2, H: 7, W: 5, KH: 2, KW: 2, StrideH: 1, StrideW: 1, PadH: 1, DilH: 2, DilW: 3},
	{N: 1, C: 2, H: 15, W: 14, KH: 3, KW: 3, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1, DilH: 2, DilW: 2, CeilMode: true},
	{N: 1, C: 3, H: 12, W: 13, KH: 3, KW: 2, StrideH: 1, StrideW: 2, PadH: 1, PadW: 1, DilH: 3, DilW: 2},
	{N: 2, C: 2, H: 1, W: 40, KH: 1, KW: 3, StrideH: 1, StrideW: 2, PadW: 1, DilW: 3, CeilMode: true},
}

func TestOpenCLPool(t *testing.T) { bothStorages(t, testOpenCLPool) }

func testOpenCLPool(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(23, 24))
	for _, base := range clPoolGeoms {
		for _, incl := range []bool{false, true} {
			g := base
			g.CountIncludePad = incl
			if err := g.Setup(); err != nil {
				t.Fatal(err)
			}
			t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
				// Values on a coarse grid, so windows hold ties: the first
				// maximum must get the gradient, as on the CPU.
				xv := gputest.Rand(r, g.N*g.C*g.H*g.W)
				for i := range xv {
					xv[i] = float32(math.Round(float64(xv[i]) * 3))
				}
				x := newTwin(o, xv)
				y := newTwin(o, gputest.Rand(r, g.N*g.C*g.OH*g.OW))
				dy := newTwin(o, gputest.Rand(r, y.cpu.Len()))
				dx := newTwin(o, gputest.Rand(r, x.cpu.Len()))
				cpu.MaxPoolForward(g, y.cpu, x.cpu)
				o.MaxPoolForward(g, y.cl, x.cl)
				y.check(t, o, "max forward")
				cpu.MaxPoolBackward(g, dx.cpu, dy.cpu, x.cpu)
				o.MaxPoolBackward(g, dx.cl, dy.cl, x.cl)
				// Same summation order as the CPU's scatter: bit-identical
				// (in float; half storage rounds the sums).
				if got := download(o, dx.cl); o.half || !slices.Equal(got, dx.cpu.(gpu.Host)) {
					dx.check(t, o, "max backward")
					if !o.half {
						t.Error("max backward: not bit-identical to the CPU")
					}
				}
				cpu.AvgPoolForward(g, y.cpu, x.cpu)
				o.AvgPoolForward(g, y.cl, x.cl)
				y.check(t, o, "avg forward")
				cpu.AvgPoolBackward(g, dx.cpu, dy.cpu)
				o.AvgPoolBackward(g, dx.cl, dy.cl)
				dx.check(t, o, "avg backward")
			})
		}
	}
}

func TestOpenCLBatchNorm(t *testing.T) { bothStorages(t, testOpenCLBatchNorm) }

func testOpenCLBatchNorm(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(25, 26))
	for _, g := range []gpu.BNGeom{
		{N: 4, C: 3, HW: 25, Eps: 1e-5, Momentum: 0.1},
		{N: 64, C: 10, HW: 1, Eps: 1e-5, Momentum: 0.1},
		{N: 2, C: 5, HW: 300, Eps: 1e-3, Momentum: 0.3},
		{N: 1, C: 2, HW: 1, Eps: 1e-5, Momentum: 0.1},   // M == 1
		{N: 40, C: 3, HW: 49, Eps: 1e-5, Momentum: 0.1}, // each item steps over several images and wraps within one
		// two-level reductions (redParts): 3 parts of 8192, 8192 and
		// 1616 elements, a part boundary inside an image; 5 parts of one image
		{N: 3, C: 2, HW: 6000, Eps: 1e-5, Momentum: 0.1},
		{N: 1, C: 3, HW: 40000, Eps: 1e-5, Momentum: 0.1},
	} {
		t.Run(fmt.Sprintf("%+v", g), func(t *testing.T) {
			n := g.N * g.C * g.HW
			xv := gputest.Rand(r, n)
			for i := range xv {
				xv[i] = xv[i]*3 + 5 // a mean away from zero
			}
			x, y, dy := newTwin(o, xv), newTwin(o, make([]float32, n)), newTwin(o, gputest.Rand(r, n))
			gamma, beta := newTwin(o, gputest.Rand(r, g.C)), newTwin(o, gputest.Rand(r, g.C))
			rm, rv := newTwin(o, gputest.Rand(r, g.C)), newTwin(o, scaled(gputest.Rand(r, g.C), 0)) // runVar 0 then updated
			sm, si := newTwin(o, make([]float32, g.C)), newTwin(o, make([]float32, g.C))
			for step := 0; step < 2; step++ {
				cpu.BatchNormTrain(g, y.cpu, x.cpu, gamma.cpu, beta.cpu, rm.cpu, rv.cpu, sm.cpu, si.cpu)
				o.BatchNormTrain(g, y.cl, x.cl, gamma.cl, beta.cl, rm.cl, rv.cl, sm.cl, si.cl)
			}
			y.check(t, o, "train y")
			rm.check(t, o, "running mean")
			rv.check(t, o, "running var")
			sm.check(t, o, "saved mean")
			si.check(t, o, "saved inv std")
			cpu.BatchNormInfer(g, y.cpu, x.cpu, gamma.cpu, beta.cpu, rm.cpu, rv.cpu)
			o.BatchNormInfer(g, y.cl, x.cl, gamma.cl, beta.cl, rm.cl, rv.cl)
			y.check(t, o, "infer y")
			dx, dg, db := newTwin(o, make([]float32, n)), newTwin(o, gputest.Rand(r, g.C)), newTwin(o, gputest.Rand(r, g.C))
			for mask := 0; mask < 8; mask++ {
				pick := func(on bool, tw twin) (gpu.Buffer, gpu.Buffer) {
					if on {
						return tw.cpu, tw.cl
					}
					return nil, nil
				}
				dxc, dxo := pick(mask&1 != 0, dx)
				dgc, dgo := pick(mask&2 != 0, dg)
				dbc, dbo := pick(mask&4 != 0, db)
				cpu.BatchNormBackward(g, dxc, dgc, dbc, dy.cpu, x.cpu, gamma.cpu, sm.cpu, si.cpu)
				o.BatchNormBackward(g, dxo, dgo, dbo, dy.cl, x.cl, gamma.cl, sm.cl, si.cl)
				dx.check(t, o, fmt.Sprintf("dx (outputs %03b)", mask))
				dg.check(t, o, fmt.Sprintf("dgamma (outputs %03b)", mask))
				db.check(t, o, fmt.Sprintf("dbeta (outputs %03b)", mask))
			}
		})
	}
}

// TestOpenCLDeterministic runs a convolution and batch-norm backward pass
// twice on the same inputs: the bits must not change between runs.
func TestOpenCLDeterministic(t *testing.T) { bothStorages(t, testOpenCLDeterministic) }

func testOpenCLDeterministic(t *testing.T, o *OpenCL) {
	r := rand.New(rand.NewPCG(27, 28))
	g := gpu.ConvGeom{N: 8, C: 6, H: 14, W: 14, K: 16, R: 5, S: 5, PadH: 2, PadW: 2}
	if err := g.Setup(); err != nil {
		t.Fatal(err)
	}
	bn := gpu.BNGeom{N: g.N, C: g.K, HW: g.OH * g.OW, Eps: 1e-5, Momentum: 0.1}
	x, w, dy := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows()), o.Alloc(g.N*g.K*g.OH*g.OW)
	for _, b := range []gpu.Buffer{x, w, dy} {
		o.Upload(b, gputest.Rand(r, b.Len()))
	}
	gamma := o.Alloc(g.K)
	o.Fill(gamma, 1)
	run := func() []float32 {
		ws, dw, db, dg := o.Alloc(o.ConvWorkspace(g)), o.Alloc(w.Len()), o.Alloc(g.K), o.Alloc(g.K)
		sm, si, dx := o.Alloc(g.K), o.Alloc(g.K), o.Alloc(dy.Len())
		o.ConvBackwardFilter(g, dw, db, dy, x, ws)
		o.BatchNormTrain(bn, dx, dy, gamma, db, o.Alloc(g.K), o.Alloc(g.K), sm, si)
		o.BatchNormBackward(bn, dx, dg, db, dy, dy, gamma, sm, si)
		return slices.Concat(download(o, dw), download(o, db), download(o, dg), download(o, dx))
	}
	if a, b := run(), run(); !slices.Equal(a, b) {
		t.Error("two runs on the same inputs differ")
	}
}

// TestOpenCLActivationsParam checks the parameterised activations and the
// axis softmax against the CPU, forward and backward, on lengths that leave
// a partial work-group, with the backward pass given x or y as FromOutput
// says.
func TestOpenCLActivationsParam(t *testing.T) { bothStorages(t, testOpenCLActivationsParam) }

func testOpenCLActivationsParam(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{1, 130, 4099} {
		for _, a := range gputest.ParamActs() {
			t.Run(fmt.Sprintf("%v%+v/%d", a, a, n), func(t *testing.T) {
				xs := gputest.Rand(r, n)
				op, _ := a.Op()
				for i := range xs {
					xs[i] *= 6 // across HardSwish's and the clips' kinks
					if op.Positive {
						xs[i] = float32(math.Abs(float64(xs[i]))) + 0.1
					}
					if o.half && math.Abs(float64(xs[i])) < 0.1 {
						// 1/x's gradient y² would pass half's largest, 65504.
						xs[i] = float32(math.Copysign(0.1, float64(xs[i])))
					}
				}
				x, y, dy, dx := newTwin(o, xs), newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n))
				cpu.Activate(a, y.cpu, x.cpu)
				o.Activate(a, y.cl, x.cl)
				y.check(t, o, "forward")
				tt := x
				if a.FromOutput() {
					tt = y
				}
				cpu.ActivateBackward(a, dx.cpu, dy.cpu, tt.cpu)
				o.ActivateBackward(a, dx.cl, dy.cl, tt.cl)
				dx.check(t, o, "backward")
			})
		}
	}
	for _, g := range [][3]int{{2, 5, 12}, {3, 10, 1}, {4, 1, 3}, {5, 33, 7}} {
		t.Run(fmt.Sprintf("softmax %v", g), func(t *testing.T) {
			n := g[0] * g[1] * g[2]
			xs := gputest.Rand(r, n)
			for i := range xs {
				xs[i] *= 8
			}
			x, y, dy, dx := newTwin(o, xs), newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n))
			cpu.Softmax(y.cpu, x.cpu, g[0], g[1], g[2])
			o.Softmax(y.cl, x.cl, g[0], g[1], g[2])
			y.check(t, o, "forward")
			cpu.SoftmaxBackward(dx.cpu, dy.cpu, y.cpu, g[0], g[1], g[2])
			o.SoftmaxBackward(dx.cl, dy.cl, y.cl, g[0], g[1], g[2])
			dx.check(t, o, "backward")
		})
	}
}

// BenchmarkOpenCLActivateKinds times each kind on the device next to the
// CPU backend, on 16×16×56×56 (MobileNetV3's second-stage activation at
// batch 16): the same data and run, so the ratio is meaningful.
func BenchmarkOpenCLActivateKinds(b *testing.B) {
	o := openCLForTest(b)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(33, 34))
	n := 16 * 16 * 56 * 56
	xs := gputest.Rand(r, n)
	for _, a := range []gpu.Act{gpu.ReLU, gpu.Sigmoid, gpu.HardSwish, gpu.HardSigmoid(1.0/6, 0.5), gpu.Tanh} {
		for _, be := range []gpu.Backend{cpu, o} {
			x, y := be.Alloc(n), be.Alloc(n)
			be.Upload(x, xs)
			name := "cpu"
			if be == gpu.Backend(o) {
				name = "opencl"
			}
			one, first := make([]float32, 1), be.View(y, 0, 1)
			b.Run(a.String()+"/"+name, func(b *testing.B) {
				for b.Loop() {
					be.Activate(a, y, x)
					be.Download(one, first) // waits for the queue: the kernel's time, not its enqueueing
				}
			})
		}
	}
}

// TestOpenCLDepthwise3Bits checks that the 3×3 depthwise kernels give the
// bits of the generic ones they replace: the filter gradient with all nine
// taps in one work-group (with one part and with several, redParts), and
// forward and backward data with stride 1 and 2 (3-D grid, unrolled taps).
func TestOpenCLDepthwise3Bits(t *testing.T) {
	o := openCLForTest(t)
	r := rand.New(rand.NewPCG(31, 32))
	same := func(g gpu.ConvGeom, what string, got, want []float32) {
		t.Helper()
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: %s %d: %g, generic kernel %g", g, what, i, got[i], want[i])
			}
		}
	}
	for _, g := range []gpu.ConvGeom{
		{N: 2, C: 4, H: 9, W: 7, K: 8, R: 3, S: 3, Groups: 4, StrideH: 2, StrideW: 2, PadH: 1, PadW: 1},
		{N: 2, C: 3, H: 8, W: 11, K: 3, R: 3, S: 3, Groups: 3, StrideH: 1, StrideW: 1, PadH: 2, PadW: 0},
		{N: 2, C: 3, H: 10, W: 9, K: 3, R: 3, S: 3, Groups: 3, StrideH: 2, StrideW: 1, PadH: 1, PadW: 1}, // generic fwd/bwd
		{N: 2, C: 2, H: 100, W: 100, K: 2, R: 3, S: 3, Groups: 2, PadH: 1, PadW: 1},
	} {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		x, dy := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.N*g.K*g.OH*g.OW)
		o.Upload(x, gputest.Rand(r, x.Len()))
		o.Upload(dy, gputest.Rand(r, dy.Len()))
		w := o.Alloc(g.K * 9)
		o.Upload(w, gputest.Rand(r, w.Len()))
		xs, dys, ws := o.buf(x), o.buf(dy), o.buf(w)
		y, yref := o.buf(o.Alloc(dy.Len())), o.buf(o.Alloc(dy.Len()))
		o.ConvForward(g, y, x, w, nil, nil)
		o.run1(kDwForward, yref.n, append([]any{yref.m, yref.off, xs.m, xs.off, ws.m, ws.off}, dwArgs(g)...)...)
		same(g, "forward", download(o, y), download(o, yref))
		dx, dxref := o.buf(o.Alloc(x.Len())), o.buf(o.Alloc(x.Len()))
		o.ConvBackwardData(g, dx, dy, w, nil)
		o.run1(kDwBackwardData, dxref.n, append([]any{dxref.m, dxref.off, dys.m, dys.off, ws.m, ws.off}, dwArgs(g)...)...)
		same(g, "backward data", download(o, dx), download(o, dxref))
		dw := o.Alloc(g.K * 9)
		o.ConvBackwardFilter(g, dw, nil, dy, x, nil)
		got := download(o, o.buf(dw))
		// The generic kernels: one work-group per tap (and part).
		ref := o.buf(o.Alloc(g.K * 9))
		if l, p := o.kn.redParts(g.N * g.OH * g.OW); p > 1 {
			part := o.scratch(&o.redPart, 2*ref.n*p)
			o.runGroups(kDwBackwardFilterPart, ref.n*p, append(append([]any{part, dys.m, dys.off, xs.m, xs.off}, dwArgs(g)...), l, p)...)
			o.run1(kDwBackwardFilterFinal, ref.n, ref.m, ref.off, part, ref.n, p)
		} else {
			o.runGroups(kDwBackwardFilter, ref.n, append([]any{ref.m, ref.off, dys.m, dys.off, xs.m, xs.off}, dwArgs(g)...)...)
		}
		same(g, "filter tap", got, download(o, ref))
	}
}

// TestOpenCLVec4Bits checks that the four-elements-per-item kernels give the
// bits of the scalar ones, on views at an odd offset and with -0, NaN and
// ReLU6's kinks among the inputs.
func TestOpenCLVec4Bits(t *testing.T) { bothStorages(t, testOpenCLVec4Bits) }

func testOpenCLVec4Bits(t *testing.T, o *OpenCL) {
	r := rand.New(rand.NewPCG(35, 36))
	g := gpu.BNGeom{N: 3, C: 5, HW: 12}
	n := g.N * g.C * g.HW
	vals := scaled(gputest.Rand(r, n+1), 8)
	copy(vals[1:], []float32{float32(math.Copysign(0, -1)), 0, 6, -6, float32(math.NaN()), 5.999, 6.001})
	all, dyAll := o.Alloc(n+1), o.Alloc(n+1)
	o.Upload(all, vals)
	o.Upload(dyAll, gputest.Rand(r, n+1))
	x, dy := o.buf(o.View(all, 1, n)), o.buf(o.View(dyAll, 1, n))
	coef := o.scratch(&o.coef, 4*g.C)
	cv := gputest.Rand(r, 4*g.C)
	must(o.ctx.write(coef, 0, unsafe.Pointer(&cv[0]), 4*len(cv)))
	for _, c := range []struct {
		name, name4 kernelID
		args        func(y *clBuf) []any
	}{
		{kAct, kAct4, func(y *clBuf) []any { return []any{int(gpu.KindReLU), y.m, y.off, x.m, x.off, n} }},
		{kAct, kAct4, func(y *clBuf) []any { return []any{int(gpu.KindReLU6), y.m, y.off, x.m, x.off, n} }},
		{kActBackward, kActBackward4, func(y *clBuf) []any { return []any{int(gpu.KindReLU), y.m, y.off, dy.m, dy.off, x.m, x.off, n} }},
		{kActBackward, kActBackward4, func(y *clBuf) []any { return []any{int(gpu.KindReLU6), y.m, y.off, dy.m, dy.off, x.m, x.off, n} }},
		{kBnApply, kBnApply4, func(y *clBuf) []any { return []any{y.m, y.off, x.m, x.off, coef, g.N, g.C, g.HW} }},
		{kBnBackwardDx, kBnBackwardDx4, func(y *clBuf) []any { return []any{y.m, y.off, dy.m, dy.off, x.m, x.off, coef, g.N, g.C, g.HW} }},
	} {
		var out [2][]float32
		for i, kernel := range []kernelID{c.name, c.name4} {
			y := o.buf(o.View(o.Alloc(n+1), 1, n))
			o.run1(kernel, n/(1+3*i), c.args(y)...)
			out[i] = download(o, y)
		}
		for i := range out[0] {
			if math.Float32bits(out[0][i]) != math.Float32bits(out[1][i]) {
				t.Fatalf("%s: element %d (x %g): %g with 4 per item, %g with 1", c.name, i, vals[1+i], out[1][i], out[0][i])
			}
		}
	}
}

// TestOpenCLConvBackwardDataTransposedBits checks that the backward data of
// an im2col convolution, whose product runs with the filter matrix
// transposed into a scratch buffer (gemm_nn), gives the bits of the product
// that reads it transposed (gemm_tn), with groups and with a product split
// in k.
func TestOpenCLConvBackwardDataTransposedBits(t *testing.T) {
	o := openCLForTest(t)
	setWinograd(t, o, WinogradOff) // the im2col path
	r := rand.New(rand.NewPCG(37, 38))
	for _, g := range []gpu.ConvGeom{
		{N: 2, C: 6, H: 7, W: 9, K: 4, R: 3, S: 3, Groups: 2, PadH: 1, PadW: 1},
		{N: 2, C: 3, H: 5, W: 5, K: 600, R: 3, S: 3, PadH: 1, PadW: 1}, // k = 600: split in 2
	} {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		w, dy := o.Alloc(g.K*g.ColRows()), o.Alloc(g.N*g.K*g.OH*g.OW)
		o.Upload(w, gputest.Rand(r, w.Len()))
		o.Upload(dy, gputest.Rand(r, dy.Len()))
		ws := o.Alloc(o.ConvWorkspace(g))
		dx := o.Alloc(g.N * g.C * g.H * g.W)
		o.ConvBackwardData(g, dx, dy, w, ws)
		got := download(o, dx)
		// The product with W read transposed, then col2im, per group.
		ref, wsl, dys, col := o.buf(o.Alloc(dx.Len())), o.buf(w), o.buf(dy), o.buf(ws)
		grp := g.GroupCount()
		cg, kg, rows, ohw := g.C/grp, g.K/grp, g.ColRows(), g.OH*g.OW
		for gi := 0; gi < grp; gi++ {
			o.gemm(true, false, rows, g.N*ohw, kg, 1, plainMat(wsl.m, wsl.off+gi*kg*rows, rows), batchMat(dys, 0, g.N, gi*kg, g.K, ohw),
				0, plainMat(col.m, col.off, g.N*ohw))
			o.run1(kCol2im, g.N*cg*g.H*g.W, append([]any{ref.m, ref.off + gi*cg*g.H*g.W, col.m, col.off}, colArgs(g, g.N)...)...)
		}
		want := download(o, ref)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%+v: dx[%d] %g, with W read transposed %g", g, i, got[i], want[i])
			}
		}
	}
}

// TestOpenCLConvPlainRows checks that convolutions over planes that are not
// whole float4 groups, whose GEMMs read batch tensors copied into plain
// matrices (plainRows), give the bits of reading them segmented, in whole
// batches and in chunks, pointwise, grouped and im2col; and that the copies
// run.
func TestOpenCLConvPlainRows(t *testing.T) { bothStorages(t, testOpenCLConvPlainRows) }

// withIm2col runs run with o's im2col convolution replaced by c.
func withIm2col(o *OpenCL, c *im2col, run func()) {
	old := o.cols
	o.cols = c
	defer func() { o.cols = old }()
	run()
}

func testOpenCLConvPlainRows(t *testing.T, o *OpenCL) {
	setWinograd(t, o, WinogradOff) // the im2col path
	r := rand.New(rand.NewPCG(27, 28))
	for _, g := range []gpu.ConvGeom{
		{N: 5, C: 6, H: 7, W: 7, K: 8, R: 1, S: 1},                      // pointwise on 7×7
		{N: 5, C: 3, H: 13, W: 13, K: 10, R: 3, S: 3, PadH: 1, PadW: 1}, // AlexNet's 13×13
		{N: 4, C: 4, H: 5, W: 5, K: 6, R: 3, S: 3, Groups: 2, PadH: 1, PadW: 1},
	} {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		x, w, bias := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows()), o.Alloc(g.K)
		dy := o.Alloc(g.N * g.K * g.OH * g.OW)
		for _, b := range []gpu.Buffer{x, w, bias, dy} {
			o.Upload(b, forStorage(o, gputest.Rand(r, b.Len())))
		}
		per := g.ColRows() * g.OH * g.OW
		for _, nb := range []int{2, g.N} {
			ws := o.Alloc(nb*per + 1)
			var got [2][][]float32
			var launches [2]int
			for i, plain := range []bool{false, true} {
				cols := newIm2col(o)
				cols.copyRows = plain
				y, dx, dw, db := o.Alloc(dy.Len()), o.Alloc(x.Len()), o.Alloc(w.Len()), o.Alloc(g.K)
				before := o.ctx.launches
				withIm2col(o, cols, func() {
					o.ConvForward(g, y, x, w, bias, ws)
					o.ConvBackwardData(g, dx, dy, w, ws)
					o.ConvBackwardFilter(g, dw, db, dy, x, ws)
				})
				launches[i] = o.ctx.launches - before
				got[i] = [][]float32{download(o, y), download(o, dx), download(o, dw), download(o, db)}
			}
			for j, name := range []string{"y", "dx", "dw", "dbias"} {
				if !gputest.SameBits(got[0][j], got[1][j]) {
					t.Errorf("%+v, %d per chunk: %s differs when the GEMMs read plain copies", g, nb, name)
				}
			}
			if launches[1] <= launches[0] {
				t.Errorf("%+v, %d per chunk: %d launches with copies, %d without: no copy ran", g, nb, launches[1], launches[0])
			}
		}
	}
}
