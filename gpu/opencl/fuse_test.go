//go:build opencl

package opencl

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
)

// fuseGeoms are convolutions of each forward path: im2col and GEMM on
// planes that are not whole float4 groups (AlexNet's first layer, scaled
// down), one whose column matrices are kept, Winograd, depthwise,
// pointwise, and one without bias.
var fuseGeoms = []struct {
	g            gpu.ConvGeom
	wino, noBias bool
	keep         bool
}{
	{g: gpu.ConvGeom{N: 3, C: 3, H: 23, W: 23, K: 8, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2}},
	{g: gpu.ConvGeom{N: 3, C: 6, H: 9, W: 9, K: 10, R: 5, S: 5, PadH: 2, PadW: 2}, keep: true},
	{g: gpu.ConvGeom{N: 3, C: 7, H: 13, W: 13, K: 9, R: 3, S: 3, PadH: 1, PadW: 1}, wino: true},
	{g: gpu.ConvGeom{N: 2, C: 6, H: 8, W: 8, K: 6, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 6}},
	{g: gpu.ConvGeom{N: 2, C: 8, H: 5, W: 5, K: 12, R: 1, S: 1}},
	{g: gpu.ConvGeom{N: 3, C: 5, H: 9, W: 7, K: 6, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1}, noBias: true},
	{g: gpu.ConvGeom{N: 3, C: 7, H: 13, W: 13, K: 9, R: 3, S: 3, PadH: 1, PadW: 1}, wino: true, noBias: true},
}

// sameBitsCL fails unless got and want are equal bit for bit.
func sameBitsCL(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s[%d] = %v fused, %v unfused", what, i, got[i], want[i])
		}
	}
}

// TestOpenCLActFuser: the fused kernels give the bits of the unfused
// sequence (gpu.Unfused) on the same device, in float and half storage,
// with bias gradients in one part per channel and in several, and with one
// launch fewer in each direction (none fewer forward without a bias on
// the GEMM path without its epilogue, where the activation replaces the
// bias pass), and
// match the CPU; ReLU6's outputs reach both bounds. With NoFuse the
// methods launch what Unfused does.
func TestOpenCLActFuser(t *testing.T) { bothStorages(t, testOpenCLActFuser) }

func testOpenCLActFuser(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(41, 42))
	for _, c := range fuseGeoms {
		g := c.g
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		mode := WinogradOff
		if c.wino {
			mode = WinogradOn
		}
		setWinograd(t, o, mode)
		wino := o.wino.runs(&g)
		if c.wino && !wino && !o.half {
			t.Fatalf("%+v: Winograd on, but the convolution does not run it", g)
		}
		for i, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6, gpu.ReLU, gpu.ReLU6, gpu.ReLU, gpu.ReLU6} {
			// The bias gradients (BiasGrad's three paths): one item per
			// channel, as a linear layer's; one work-group per channel;
			// parts of 16 elements, as a large layer's are split in parts
			// of redPartLen.
			path := []string{"items", "groups", "parts"}[i/2]
			t.Run(fmt.Sprintf("%v/%+v/nobias=%v/%s", a, g, c.noBias, path), func(t *testing.T) {
				setKnobs := func(kn *knobs) {
					switch path {
					case "items":
						kn.biasColsMax = 1 << 30
					case "groups":
						kn.biasColsMax = 0
					default:
						kn.biasColsMax, kn.redPartLen = 0, 16
					}
				}
				o := openCLKnobs(t, o, setKnobs)
				setWinograd(t, o, mode)
				x := newTwin(o, scaled(gputest.Rand(r, g.N*g.C*g.H*g.W), 4))
				w := newTwin(o, scaled(gputest.Rand(r, g.K*g.ColRows()), 2))
				var biasCL, biasCPU gpu.Buffer
				if !c.noBias {
					b := newTwin(o, gputest.Rand(r, g.K))
					biasCL, biasCPU = b.cl, b.cpu
				}
				ny := g.N * g.K * g.OH * g.OW
				ws := o.Alloc(max(o.ConvWorkspace(g), 1))
				var cols gpu.Buffer
				if c.keep {
					if cols = o.ConvKeepColumns(g); cols == nil {
						t.Fatal("no kept columns granted")
					}
				}
				yf, yu := o.Alloc(ny), o.Alloc(ny)
				before := o.ctx.launches
				o.ConvForwardAct(a, g, yf, x.cl, w.cl, biasCL, ws, cols)
				fused := o.ctx.launches - before
				before = o.ctx.launches
				gpu.Unfused(o).ConvForwardAct(a, g, yu, x.cl, w.cl, biasCL, ws, cols)
				unfused := o.ctx.launches - before
				got, want := download(o, yf), download(o, yu)
				sameBitsCL(t, "y", got, want)
				fewer := 1 // the bias pass, or the activation in the GEMM's epilogue
				if c.noBias && !wino && !o.epilogueOn() {
					fewer = 0
				}
				if fused != unfused-fewer {
					t.Errorf("forward: %d launches fused, %d unfused: want %d fewer", fused, unfused, fewer)
				}
				yc := gpu.Host(make([]float32, ny))
				cpu.ConvForward(g, yc, x.cpu, w.cpu, biasCPU, cpu.Alloc(cpu.ConvWorkspace(g)))
				cpu.Activate(a, yc, yc)
				assertCloseFor(t, o, "y against the CPU", got, yc)
				var neg, mid, top int
				for _, v := range got {
					switch {
					case v == 0:
						neg++
					case a == gpu.ReLU6 && v == 6:
						top++
					default:
						mid++
					}
				}
				if neg == 0 || mid == 0 || (a == gpu.ReLU6 && top == 0) {
					t.Errorf("outputs: %d at 0, %d between, %d at 6: the test data misses a bound", neg, mid, top)
				}

				fwdUnfused := unfused

				// Backward, from the fused output.
				dy := newTwin(o, gputest.Rand(r, ny))
				dxf, dxu, dbf, dbu := o.Alloc(ny), o.Alloc(ny), o.Alloc(g.K), o.Alloc(g.K)
				before = o.ctx.launches
				o.ActivateBackwardBias(a, dxf, dbf, dy.cl, yf, g.N, g.K, g.OH*g.OW)
				fused = o.ctx.launches - before
				before = o.ctx.launches
				gpu.Unfused(o).ActivateBackwardBias(a, dxu, dbu, dy.cl, yf, g.N, g.K, g.OH*g.OW)
				unfused = o.ctx.launches - before
				sameBitsCL(t, "dx", download(o, dxf), download(o, dxu))
				gotDB := download(o, dbf)
				sameBitsCL(t, "dbias", gotDB, download(o, dbu))
				wantF := 1 // per channel, or parts and their sum
				if _, p := o.kn.redParts(g.N * g.OH * g.OW); p > 1 {
					wantF = 2
				} else if path == "parts" {
					t.Fatalf("%d elements per channel: not split in parts of %d", g.N*g.OH*g.OW, o.kn.redPartLen)
				}
				if fused != wantF || unfused != wantF+1 {
					t.Errorf("backward: %d launches fused, %d unfused: want %d and %d", fused, unfused, wantF, wantF+1)
				}
				dxc, dbc := gpu.Host(make([]float32, ny)), gpu.Host(make([]float32, g.K))
				cpu.ActivateBackward(a, dxc, dy.cpu, gpu.Host(got))
				cpu.BiasGrad(dbc, dxc, g.N, g.K, g.OH*g.OW)
				assertCloseFor(t, o, "dx against the CPU", download(o, dxf), dxc)
				assertCloseFor(t, o, "dbias against the CPU", gotDB, dbc)

				// NoFuse (a backend of its own, on the same data): what
				// Unfused launches.
				nf := openCLWith(t, o, func(cfg *Config, kn *knobs) { cfg.NoFuse = true; setKnobs(kn) })
				setWinograd(t, nf, mode)
				nx, nw, ndy := mirror(nf, o, x.cl), mirror(nf, o, w.cl), mirror(nf, o, dy.cl)
				var nbias, ncols gpu.Buffer
				if biasCL != nil {
					nbias = mirror(nf, o, biasCL)
				}
				if c.keep {
					if ncols = nf.ConvKeepColumns(g); ncols == nil {
						t.Fatal("NoFuse: no kept columns granted")
					}
				}
				nyb, ndx, ndb, nws := nf.Alloc(ny), nf.Alloc(ny), nf.Alloc(g.K), nf.Alloc(ws.Len())
				before = nf.ctx.launches
				nf.ConvForwardAct(a, g, nyb, nx, nw, nbias, nws, ncols)
				nf.ActivateBackwardBias(a, ndx, ndb, ndy, nyb, g.N, g.K, g.OH*g.OW)
				if n := nf.ctx.launches - before; n != fwdUnfused+unfused {
					t.Errorf("NoFuse: %d launches, want the unfused %d", n, fwdUnfused+unfused)
				}
				sameBitsCL(t, "y, NoFuse", download(nf, nyb), want)
				sameBitsCL(t, "dx, NoFuse", download(nf, ndx), download(o, dxf))
			})
		}
	}
}

// TestOpenCLBiasAct: BiasAct (a linear layer's bias and ReLU, one
// position per channel, and a convolution's planes) gives the bits of
// AddBias then Activate in one launch, with and without a bias, and
// matches the CPU.
func TestOpenCLBiasAct(t *testing.T) { bothStorages(t, testOpenCLBiasAct) }

func testOpenCLBiasAct(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(43, 44))
	for _, s := range []struct{ n, c, hw int }{{5, 33, 1}, {3, 4, 13}, {1, 7, 1}} {
		for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6} {
			for _, withBias := range []bool{true, false} {
				data := scaled(gputest.Rand(r, s.n*s.c*s.hw), 8)
				x := newTwin(o, data)
				xu := newTwin(o, data)
				var bcl, bcpu gpu.Buffer
				if withBias {
					b := newTwin(o, gputest.Rand(r, s.c))
					bcl, bcpu = b.cl, b.cpu
				}
				before := o.ctx.launches
				o.BiasAct(a, x.cl, bcl, s.n, s.c, s.hw)
				if n := o.ctx.launches - before; n != 1 {
					t.Errorf("%v %+v bias %v: %d launches, want 1", a, s, withBias, n)
				}
				gpu.Unfused(o).BiasAct(a, xu.cl, bcl, s.n, s.c, s.hw)
				sameBitsCL(t, fmt.Sprintf("%v %+v bias %v", a, s, withBias), download(o, x.cl), download(o, xu.cl))
				gpu.Unfused(cpu).BiasAct(a, x.cpu, bcpu, s.n, s.c, s.hw)
				x.check(t, o, fmt.Sprintf("%v %+v bias %v against the CPU", a, s, withBias))
			}
		}
	}
}

// TestOpenCLFusedKinks: the fused kernels give the unfused bits at -0, 0,
// NaN, ReLU6's bounds and values that round onto them, forward (BiasAct,
// with and without a bias) and backward (ActivateBackwardBias on outputs
// holding those values).
func TestOpenCLFusedKinks(t *testing.T) { bothStorages(t, testOpenCLFusedKinks) }

func testOpenCLFusedKinks(t *testing.T, o *OpenCL) {
	r := rand.New(rand.NewPCG(45, 46))
	special := []float32{float32(math.Copysign(0, -1)), 0, 6, -6, float32(math.NaN()), 5.999, 6.001, 5.9999995, 1e-30,
		-1e-30, 1e-8, -1e-8, 3, -3, 7, 100}
	const n = 3
	c := len(special)
	vals := make([]float32, 0, n*c)
	for range n {
		vals = append(vals, special...)
	}
	bias := o.Alloc(c)
	o.Upload(bias, scaled(gputest.Rand(r, c), 1e-3))
	for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6} {
		for _, b := range []gpu.Buffer{nil, bias} {
			x, xu := o.Alloc(len(vals)), o.Alloc(len(vals))
			o.Upload(x, vals)
			o.Upload(xu, vals)
			o.BiasAct(a, x, b, n, c, 1)
			gpu.Unfused(o).BiasAct(a, xu, b, n, c, 1)
			sameBitsCL(t, fmt.Sprintf("%v, bias %v", a, b != nil), download(o, x), download(o, xu))
		}
		y, dy := o.Alloc(len(vals)), o.Alloc(len(vals))
		o.Upload(y, vals)
		o.Upload(dy, gputest.Rand(r, len(vals)))
		// BiasGrad's three paths: items, work-groups, parts of one element
		// (backends with those knobs, on the same data).
		for _, p := range [][2]int{{o.kn.biasColsMax, o.kn.redPartLen}, {0, o.kn.redPartLen}, {0, 1}} {
			ob := openCLKnobs(t, o, func(kn *knobs) { kn.biasColsMax, kn.redPartLen = p[0], p[1] })
			y, dy := mirror(ob, o, y), mirror(ob, o, dy)
			dxf, dxu, dbf, dbu := ob.Alloc(len(vals)), ob.Alloc(len(vals)), ob.Alloc(c), ob.Alloc(c)
			ob.ActivateBackwardBias(a, dxf, dbf, dy, y, n, c, 1)
			gpu.Unfused(ob).ActivateBackwardBias(a, dxu, dbu, dy, y, n, c, 1)
			sameBitsCL(t, fmt.Sprintf("%v dx %v", a, p), download(ob, dxf), download(ob, dxu))
			sameBitsCL(t, fmt.Sprintf("%v dbias %v", a, p), download(ob, dbf), download(ob, dbu))
		}
	}
}

// BenchmarkOpenCLConvReLU times a convolution with bias and ReLU, forward
// and the activation's and bias's gradients, fused and unfused in one run,
// at AlexNet's first two layers' shapes (batch COTRAIN_BENCH_BATCH, 32 by
// default): the ratio of the two is what fusing gains there.
func BenchmarkOpenCLConvReLU(b *testing.B) {
	o := openCLForTest(b)
	batch := benchBatch(b)
	for _, g := range []gpu.ConvGeom{
		{N: batch, C: 3, H: 224, W: 224, K: 64, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2},
		{N: batch, C: 64, H: 27, W: 27, K: 192, R: 5, S: 5, PadH: 2, PadW: 2},
		{N: batch, C: 192, H: 13, W: 13, K: 384, R: 3, S: 3, PadH: 1, PadW: 1},
	} {
		if err := g.Setup(); err != nil {
			b.Fatal(err)
		}
		r := rand.New(rand.NewPCG(1, 2))
		x, w, bias := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows()), o.Alloc(g.K)
		o.Upload(x, gputest.Rand(r, x.Len()))
		o.Upload(w, gputest.Rand(r, w.Len()))
		o.Upload(bias, gputest.Rand(r, bias.Len()))
		ny := g.N * g.K * g.OH * g.OW
		y, dy, dx, db := o.Alloc(ny), o.Alloc(ny), o.Alloc(ny), o.Alloc(g.K)
		o.Upload(dy, gputest.Rand(r, ny))
		ws := o.Alloc(max(o.ConvWorkspace(g), 1))
		for _, f := range []struct {
			name string
			f    gpu.ActFuser
		}{{"fused", o}, {"unfused", gpu.Unfused(o)}} {
			b.Run(fmt.Sprintf("%dx%d/%s", g.R, g.S, f.name), func(b *testing.B) {
				step := func() {
					f.f.ConvForwardAct(gpu.ReLU, g, y, x, w, bias, ws, nil)
					f.f.ActivateBackwardBias(gpu.ReLU, dx, db, dy, y, g.N, g.K, g.OH*g.OW)
				}
				step()
				o.Download(make([]float32, g.K), db)
				b.ResetTimer()
				for range b.N {
					step()
				}
				o.Download(make([]float32, g.K), db)
			})
		}
	}
}

// BenchmarkOpenCLBiasActPasses times the passes fusing replaces, without
// the convolution: the bias and ReLU forward (BiasAct against AddBias then
// Activate) and backward (ActivateBackwardBias against ActivateBackward
// then BiasGrad), fused and unfused side by side in one run, on the
// outputs of AlexNet's first two convolutions and first linear layer
// (batch COTRAIN_BENCH_BATCH, 32 by default).
func BenchmarkOpenCLBiasActPasses(b *testing.B) {
	o := openCLForTest(b)
	batch := benchBatch(b)
	for _, s := range []struct {
		name  string
		c, hw int
	}{{"conv1", 64, 55 * 55}, {"conv2", 192, 27 * 27}, {"fc6", 4096, 1}} {
		r := rand.New(rand.NewPCG(1, 2))
		n := batch * s.c * s.hw
		x, y, dy, dx, bias, db := o.Alloc(n), o.Alloc(n), o.Alloc(n), o.Alloc(n), o.Alloc(s.c), o.Alloc(s.c)
		o.Upload(x, gputest.Rand(r, n))
		o.Upload(y, gputest.Rand(r, n))
		o.Upload(dy, gputest.Rand(r, n))
		o.Upload(bias, gputest.Rand(r, s.c))
		for _, f := range []struct {
			name string
			f    gpu.ActFuser
		}{{"fused", o}, {"unfused", gpu.Unfused(o)}} {
			for _, dir := range []string{"forward", "backward"} {
				b.Run(s.name+"/"+dir+"/"+f.name, func(b *testing.B) {
					pass := func() { f.f.BiasAct(gpu.ReLU, x, bias, batch, s.c, s.hw) }
					if dir == "backward" {
						pass = func() { f.f.ActivateBackwardBias(gpu.ReLU, dx, db, dy, y, batch, s.c, s.hw) }
					}
					pass()
					if err := o.Finish(); err != nil {
						b.Fatal(err)
					}
					b.ResetTimer()
					for range b.N {
						pass()
					}
					if err := o.Finish(); err != nil {
						b.Fatal(err)
					}
					b.SetBytes(int64(4 * n))
				})
			}
		}
	}
}
