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

// The GEMM epilogue (gemm.cl): a convolution's or a fully connected
// layer's product adds the bias and applies a fused ReLU or ReLU6 as it
// stores its output, where a bias_act (add_bias) pass followed it before.
// These tests compare it with that older path on the same device (a
// backend opened with Config.NoEpilogue, on the same data), bit for bit.

// noEpilogue returns a backend like o with Config.NoEpilogue set.
func noEpilogue(t testing.TB, o *OpenCL) *OpenCL {
	t.Helper()
	return openCLWith(t, o, func(cfg *Config, _ *knobs) { cfg.NoEpilogue = true })
}

// TestOpenCLConvEpilogue: ConvForward, ConvForwardAct and ConvForwardKeep
// give the same bits with the epilogue as with the product then the bias
// pass, on every GEMM path (im2col, kept columns, pointwise, grouped,
// without bias, the batch cut into chunks), in one launch fewer where
// there is a bias or an activation; half storage runs the pass either way.
func TestOpenCLConvEpilogue(t *testing.T) { bothStorages(t, testOpenCLConvEpilogue) }

func testOpenCLConvEpilogue(t *testing.T, o *OpenCL) {
	off := noEpilogue(t, o)
	for _, b := range []*OpenCL{o, off} {
		setWinograd(t, b, WinogradOff)
		setFFT(t, b, FFTOff)
	}
	r := rand.New(rand.NewPCG(51, 52))
	geoms := []gpu.ConvGeom{
		{N: 3, C: 3, H: 23, W: 23, K: 8, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2},
		{N: 3, C: 6, H: 9, W: 9, K: 10, R: 5, S: 5, PadH: 2, PadW: 2},
		{N: 2, C: 8, H: 5, W: 5, K: 12, R: 1, S: 1},
		{N: 2, C: 8, H: 6, W: 6, K: 12, R: 1, S: 1},
		{N: 3, C: 6, H: 7, W: 7, K: 9, R: 3, S: 3, PadH: 1, PadW: 1, Groups: 3},
		{N: 3, C: 5, H: 9, W: 7, K: 6, R: 3, S: 3, StrideH: 2, StrideW: 2, PadH: 1},
	}
	for gi, g := range geoms {
		if err := g.Setup(); err != nil {
			t.Fatal(err)
		}
		x := o.Alloc(g.N * g.C * g.H * g.W)
		o.Upload(x, scaled(gputest.Rand(r, x.Len()), 4))
		w := o.Alloc(g.K * g.ColRows())
		o.Upload(w, scaled(gputest.Rand(r, w.Len()), 2))
		bias := o.Alloc(g.K)
		o.Upload(bias, gputest.Rand(r, g.K))
		xOff, wOff, biasOff := mirror(off, o, x), mirror(off, o, w), mirror(off, o, bias)
		ny := g.N * g.K * g.OH * g.OW
		// The whole batch in one column matrix, and one sample per chunk.
		per := max(o.ConvWorkspace(g)/g.N, 1)
		for _, ws := range []gpu.Buffer{o.Alloc(max(o.ConvWorkspace(g), 1)), o.Alloc(per)} {
			chunks := ws.Len() < g.N*g.ColRows()*g.OH*g.OW && !g.Pointwise()
			for _, a := range []gpu.Act{{}, gpu.ReLU, gpu.ReLU6} {
				for _, b := range []gpu.Buffer{bias, nil} {
					for _, keep := range []bool{false, true} {
						name := fmt.Sprintf("%d/%v/bias=%v/keep=%v/chunks=%v", gi, a.Kind, b != nil, keep, chunks)
						// run runs the forward on backend be into a new y,
						// returning y's values and the launches it took.
						run := func(be *OpenCL, x, w, b, ws gpu.Buffer) ([]float32, int) {
							var cols gpu.Buffer
							if keep {
								if cols = be.ConvKeepColumns(g); cols == nil {
									return nil, 0 // pointwise: nothing to keep
								}
							}
							y := be.Alloc(ny)
							before := be.ctx.launches
							switch {
							case a.Kind == 0 && cols != nil:
								be.ConvForwardKeep(g, y, x, w, b, ws, cols)
							case a.Kind == 0:
								be.ConvForward(g, y, x, w, b, ws)
							default:
								be.ConvForwardAct(a, g, y, x, w, b, ws, cols)
							}
							return download(be, y), be.ctx.launches - before
						}
						var bOff gpu.Buffer
						if b != nil {
							bOff = biasOff
						}
						got, nOn := run(o, x, w, b, ws)
						if got == nil {
							continue
						}
						want, nOff := run(off, xOff, wOff, bOff, off.Alloc(ws.Len()))
						for i := range want {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s: y[%d] = %v with the epilogue, %v without", name, i, got[i], want[i])
							}
						}
						fewer := 0
						if !o.half && (b != nil || a.Kind != 0) {
							fewer = 1
						}
						if nOn != nOff-fewer {
							t.Errorf("%s: %d launches with the epilogue, %d without: want %d fewer", name, nOn, nOff, fewer)
						}
					}
				}
			}
		}
	}
}

// TestOpenCLLinearEpilogue: LinearForwardAct gives the bits of the product
// then bias_act (epilogue off) and of Unfused (Gemm, AddBias, Activate),
// for products split in k (the epilogue in gemm_sum) and not, rows of C
// that are whole float4 groups and not, with and without a bias, in one
// launch fewer with the epilogue; and matches the CPU.
func TestOpenCLLinearEpilogue(t *testing.T) { bothStorages(t, testOpenCLLinearEpilogue) }

func testOpenCLLinearEpilogue(t *testing.T, o *OpenCL) {
	off := noEpilogue(t, o)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(53, 54))
	for _, s := range []struct{ n, in, out int }{{5, 37, 33}, {8, 100, 64}, {8, 1024, 64}, {3, 1024, 30}, {1, 9, 1}} {
		splits, _ := o.kn.gemmSplits(s.n, s.out, s.in)
		for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6} {
			for _, withBias := range []bool{true, false} {
				name := fmt.Sprintf("%+v/split %d/%v/bias=%v", s, splits, a.Kind, withBias)
				x := newTwin(o, scaled(gputest.Rand(r, s.n*s.in), 2))
				w := newTwin(o, scaled(gputest.Rand(r, s.out*s.in), 8/float32(math.Sqrt(float64(s.in)))))
				var bcl, bcpu gpu.Buffer
				if withBias {
					b := newTwin(o, gputest.Rand(r, s.out))
					bcl, bcpu = b.cl, b.cpu
				}
				var bOff gpu.Buffer
				if withBias {
					bOff = mirror(off, o, bcl)
				}
				xOff, wOff := mirror(off, o, x.cl), mirror(off, o, w.cl)
				on, yOff, un := o.Alloc(s.n*s.out), off.Alloc(s.n*s.out), o.Alloc(s.n*s.out)
				before := o.ctx.launches
				o.LinearForwardAct(a, on, x.cl, w.cl, bcl, s.n, s.in, s.out)
				nOn := o.ctx.launches - before
				before = off.ctx.launches
				off.LinearForwardAct(a, yOff, xOff, wOff, bOff, s.n, s.in, s.out)
				nOff := off.ctx.launches - before
				gpu.Unfused(o).LinearForwardAct(a, un, x.cl, w.cl, bcl, s.n, s.in, s.out)
				got := download(o, on)
				sameBitsCL(t, name+": y, epilogue against bias_act", got, download(off, yOff))
				sameBitsCL(t, name+": y, epilogue against unfused", got, download(o, un))
				fewer := 1
				if o.half {
					fewer = 0
				}
				if nOn != nOff-fewer {
					t.Errorf("%s: %d launches with the epilogue, %d without: want %d fewer", name, nOn, nOff, fewer)
				}
				yc := gpu.Host(make([]float32, s.n*s.out))
				gpu.Unfused(cpu).LinearForwardAct(a, yc, x.cpu, w.cpu, bcpu, s.n, s.in, s.out)
				assertCloseFor(t, o, name+": y against the CPU", got, yc)
				var zero, mid int
				for _, v := range got {
					if v == 0 {
						zero++
					} else {
						mid++
					}
				}
				if len(got) >= 8 && (zero == 0 || mid == 0) {
					t.Errorf("%s: %d outputs at 0, %d above: the test data misses the kink", name, zero, mid)
				}
			}
		}
	}
}

// TestOpenCLEpilogueKinks: the epilogue gives the bias_act bits at 0, NaN,
// ReLU6's bounds and values that round onto them: a product with k = 1 and
// weights 1 passes x through exactly, and the bias moves it by 0 or a
// little.
func TestOpenCLEpilogueKinks(t *testing.T) {
	o := openCLForTest(t)
	special := []float32{0, 6, -6, float32(math.NaN()), 5.999, 6.001, 5.9999995, 1e-30, -1e-30, 1e-8, -1e-8, 3, -3, 7,
		100, float32(math.Inf(1)), float32(math.Inf(-1))}
	n, out := len(special), 5
	r := rand.New(rand.NewPCG(55, 56))
	x, w, bias := o.Alloc(n), o.Alloc(out), o.Alloc(out)
	o.Upload(x, special)
	o.Upload(w, []float32{1, 1, 1, 1, 1})
	o.Upload(bias, append([]float32{0, float32(math.Copysign(0, -1))}, scaled(gputest.Rand(r, out-2), 1e-3)...))
	off := noEpilogue(t, o)
	xOff, wOff, biasOff := mirror(off, o, x), mirror(off, o, w), mirror(off, o, bias)
	for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6} {
		for i, b := range []gpu.Buffer{nil, bias} {
			bOff := []gpu.Buffer{nil, biasOff}[i]
			on, yOff := o.Alloc(n*out), off.Alloc(n*out)
			o.LinearForwardAct(a, on, x, w, b, n, 1, out)
			off.LinearForwardAct(a, yOff, xOff, wOff, bOff, n, 1, out)
			sameBitsCL(t, fmt.Sprintf("%v, bias %v", a, b != nil), download(o, on), download(off, yOff))
		}
	}
}

// BenchmarkOpenCLEpilogue times the forwards the epilogue changes with it
// and without it (the product, then bias_act) in one run: AlexNet's conv1
// and conv2 with bias and ReLU, and fc6 (batch COTRAIN_BENCH_BATCH, 32 by
// default).
func BenchmarkOpenCLEpilogue(b *testing.B) {
	def := openCLForTest(b)
	batch := benchBatch(b)
	type layer struct {
		name string
		run  func()
	}
	// layers are the three forwards on backend o, on data drawn the same
	// for each backend.
	layers := func(o *OpenCL) []layer {
		setWinograd(b, o, WinogradOff)
		setFFT(b, o, FFTOff)
		r := rand.New(rand.NewPCG(1, 2))
		var ls []layer
		for i, g := range []gpu.ConvGeom{
			{N: batch, C: 3, H: 224, W: 224, K: 64, R: 11, S: 11, StrideH: 4, StrideW: 4, PadH: 2, PadW: 2},
			{N: batch, C: 64, H: 27, W: 27, K: 192, R: 5, S: 5, PadH: 2, PadW: 2},
		} {
			if err := g.Setup(); err != nil {
				b.Fatal(err)
			}
			x, w, bias := o.Alloc(g.N*g.C*g.H*g.W), o.Alloc(g.K*g.ColRows()), o.Alloc(g.K)
			o.Upload(x, gputest.Rand(r, x.Len()))
			o.Upload(w, gputest.Rand(r, w.Len()))
			o.Upload(bias, gputest.Rand(r, bias.Len()))
			y, ws := o.Alloc(g.N*g.K*g.OH*g.OW), o.Alloc(max(o.ConvWorkspace(g), 1))
			ls = append(ls, layer{fmt.Sprintf("conv%d", i+1), func() { o.ConvForwardAct(gpu.ReLU, g, y, x, w, bias, ws, nil) }})
		}
		const in, out = 9216, 4096
		x, w, bias, y := o.Alloc(batch*in), o.Alloc(out*in), o.Alloc(out), o.Alloc(batch*out)
		o.Upload(x, gputest.Rand(r, x.Len()))
		o.Upload(w, gputest.Rand(r, w.Len()))
		o.Upload(bias, gputest.Rand(r, out))
		return append(ls, layer{"fc6", func() { o.LinearForwardAct(gpu.ReLU, y, x, w, bias, batch, in, out) }})
	}
	backends := map[bool]*OpenCL{true: def, false: noEpilogue(b, def)}
	byMode := map[bool][]layer{true: layers(backends[true]), false: layers(backends[false])}
	for i := range byMode[true] {
		for _, on := range []bool{true, false} {
			o, l := backends[on], byMode[on][i]
			b.Run(fmt.Sprintf("%s/epilogue=%v", l.name, on), func(b *testing.B) {
				l.run()
				if err := o.Finish(); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					l.run()
				}
				if err := o.Finish(); err != nil {
					b.Fatal(err)
				}
			})
		}
	}
}
