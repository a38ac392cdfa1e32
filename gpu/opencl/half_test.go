//go:build opencl

package opencl_test

import (
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/gpu/half"
	"github.com/cotrain/cotrain/gpu/opencl"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// Half storage end to end: whole networks run inference on a backend that
// stores every tensor as half, against the CPU backend given the same
// half-rounded weights and inputs. The kernels are checked one by one in
// both storages by the other OpenCL tests (bothStorages).

// openHalfForTest opens a half-storage backend with the GEMM tilings of the
// kernel tests (built once for both), or with every candidate when all is
// set (benchmarks).
func openHalfForTest(t testing.TB, all bool) *opencl.OpenCL {
	t.Helper()
	return openUntuned(t, func(cfg *opencl.Config) {
		cfg.HalfStorage = true
		if !all {
			cfg.GemmVariants = []string{"32x32/4x4/k16", "64x64/8x4/k16/w4"}
		}
	})
}

// halfCases are the models of the half-storage tests: convolutions with
// bias and pooling (LeNets), depthwise and pointwise convolutions with
// batch norm and ReLU6 (MobileNet).
var halfCases = []struct {
	model string
	cfg   models.Config
}{
	{"lenet5", models.Config{}},
	{"lenet-caffe", models.Config{}},
	{"mobilenet-small", models.Config{Width: 0.25}},
}

// roundedBuffer downloads b, rounds it to half and uploads it again.
func roundedBuffer(be gpu.Backend, b gpu.Buffer) []float32 {
	v := make([]float32, b.Len())
	be.Download(v, b)
	for i := range v {
		v[i] = half.Round(v[i])
	}
	be.Upload(b, v)
	return v
}

func TestOpenCLHalfInference(t *testing.T) {
	o := openHalfForTest(t, false)
	defer o.Close()
	if !gpu.StoresHalf(o) || gpu.StoresHalf(cpu.NewCPU()) {
		t.Fatal("StoresHalf does not tell the backends apart")
	}
	for _, c := range halfCases {
		t.Run(c.model, func(t *testing.T) {
			// Weights and batch-norm statistics from a few CPU training
			// steps, so that the running statistics are not the initial 0 and 1.
			cpu := cpu.NewCPU()
			ref, err := models.Build(cpu, c.model, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			ref.InitParams(rand.New(rand.NewPCG(1, 2)))
			r := rand.New(rand.NewPCG(3, 4))
			const batch = 32
			x := make([]float32, batch*ref.In.Size())
			labels := make([]int32, batch)
			tr := solver.NewTrainer(ref, solver.NewSGD(cpu, ref.NumParams(), 0.9, 0, false), solver.Constant(0.01))
			for range 3 {
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				for i := range labels {
					labels[i] = int32(r.IntN(ref.Out.Size()))
				}
				if _, err := tr.Step(x, labels); err != nil {
					t.Fatal(err)
				}
			}
			params, state := roundedBuffer(cpu, ref.Params), roundedBuffer(cpu, ref.State)
			for i := range x {
				x[i] = half.Round(float32(r.NormFloat64()))
			}
			want := make([]float32, batch*ref.Out.Size())
			cpu.Download(want, tr.Logits(x, batch))

			net, err := models.Build(o, c.model, c.cfg)
			if err != nil {
				t.Fatal(err)
			}
			o.Upload(net.Params, params)
			o.Upload(net.State, state)
			ht := solver.NewTrainer(net, nil, nil)
			got := make([]float32, len(want))
			o.Download(got, ht.Logits(x, batch))

			// Every activation is rounded to 2⁻¹¹ of its size on the way:
			// the logits must agree to a few of those over the depth of the
			// network, relative to the largest logit, and the predicted
			// classes must agree wherever the top two float logits are
			// further apart than that.
			var scale, worst float64
			for _, w := range want {
				scale = max(scale, math.Abs(float64(w)))
			}
			for i := range want {
				worst = max(worst, math.Abs(float64(got[i]-want[i]))/scale)
			}
			classes := ref.Out.Size()
			agree, decided := 0, 0
			for s := 0; s < batch; s++ {
				w, g := want[s*classes:(s+1)*classes], got[s*classes:(s+1)*classes]
				first, second := top2(w)
				if float64(w[first]-w[second]) <= 4*worst*scale {
					continue // too close to call at half precision
				}
				decided++
				if gf, _ := top2(g); gf == first {
					agree++
				}
			}
			t.Logf("largest logit difference %.3g of the largest logit; %d of %d clear predictions agree", worst, agree, decided)
			if worst > 1e-2 {
				t.Errorf("logits differ by up to %.3g of the largest logit, want at most 1e-2", worst)
			}
			if agree != decided {
				t.Errorf("%d of %d clear predictions differ from the CPU's", decided-agree, decided)
			}
		})
	}
}

func top2(v []float32) (first, second int) {
	first, second = 0, -1
	for i := 1; i < len(v); i++ {
		switch {
		case v[i] > v[first]:
			first, second = i, first
		case second < 0 || v[i] > v[second]:
			second = i
		}
	}
	return first, second
}

// Training on half storage is refused with a message that says why.
func TestOpenCLHalfRefusesTraining(t *testing.T) {
	o := openHalfForTest(t, false)
	defer o.Close()
	net, err := models.Build(o, "lenet5", models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tr := solver.NewTrainer(net, solver.NewSGD(o, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	defer func() {
		if msg, _ := recover().(string); !strings.Contains(msg, "fp16 storage") {
			t.Errorf("training on half storage: recovered %q, want a panic about fp16 storage", msg)
		}
	}()
	tr.Step(make([]float32, net.In.Size()), []int32{3})
}

// BenchmarkOpenCLInference times inference batches (upload, forward) in
// float and in half storage side by side, with the CPU backend for
// reference: lenet-caffe at batch 256, mobilenet-v1 (α 0.5, 128×128) at
// batch 64.
func BenchmarkOpenCLInference(b *testing.B) {
	o, oh := openForE2E(b), openHalfForTest(b, true)
	defer o.Close()
	defer oh.Close()
	cases := []struct {
		name, model string
		cfg         models.Config
		batch       int
	}{
		{"lenet-caffe/b256", "lenet-caffe", models.Config{}, 256},
		{"mobilenet-v1-0.5-128/b64", "mobilenet-v1", models.Config{Width: 0.5, Input: solver.Shape{C: 3, H: 128, W: 128}}, 64},
	}
	for _, be := range []struct {
		name string
		b    gpu.Backend
	}{{"opencl-fp32", o}, {"opencl-fp16", oh}, {"cpu", cpu.NewCPU()}} {
		for _, c := range cases {
			b.Run(be.name+"/"+c.name, func(b *testing.B) {
				net, err := models.Build(be.b, c.model, c.cfg)
				if err != nil {
					b.Fatal(err)
				}
				net.InitParams(rand.New(rand.NewPCG(1, 2)))
				tr := solver.NewTrainer(net, nil, nil)
				r := rand.New(rand.NewPCG(5, 6))
				x := make([]float32, c.batch*net.In.Size())
				for i := range x {
					x[i] = float32(r.NormFloat64())
				}
				out := make([]float32, c.batch*net.Out.Size())
				be.b.Download(out, tr.Logits(x, c.batch))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					be.b.Download(out, tr.Logits(x, c.batch))
				}
				b.ReportMetric(float64(b.N*c.batch)/b.Elapsed().Seconds(), "img/s")
				if cl, ok := be.b.(*opencl.OpenCL); ok && os.Getenv("COTRAIN_OPENCL_PROFILE") == "1" {
					b.StopTimer()
					profileStep(b, cl, func() { be.b.Download(out, tr.Logits(x, c.batch)) })
				}
			})
		}
	}
}

// Upload rounds on the device (vstore_half_rte) exactly as half.Round does
// on the host: ties to even, half subnormals, overflow to infinity, signed
// zeros and NaN; Download returns the stored halves exactly.
func TestOpenCLHalfRounding(t *testing.T) {
	o := openHalfForTest(t, false)
	defer o.Close()
	r := rand.New(rand.NewPCG(7, 8))
	var v []float32
	for range 100_000 {
		v = append(v, math.Float32frombits(r.Uint32()&0xc7ffffff)) // every magnitude up to about 2¹⁶
		v = append(v, float32(r.NormFloat64()*1e-5))               // half subnormals
	}
	for h := uint16(0); h < 0x7bff; h += 7 {
		mid := (float64(half.ToFloat32(h)) + float64(half.ToFloat32(h+1))) / 2 // a tie
		v = append(v, float32(mid), -float32(mid))
	}
	v = append(v, 65504, 65519, 65520, -1e9, float32(math.Inf(1)), float32(math.Copysign(0, -1)),
		math.SmallestNonzeroFloat32, float32(math.NaN()))
	b := o.Alloc(len(v))
	o.Upload(b, v)
	got := make([]float32, len(v))
	o.Download(got, b)
	bad := 0
	for i, x := range v {
		want := half.Round(x)
		if math.Float32bits(got[i]) != math.Float32bits(want) && !(math.IsNaN(float64(want)) && math.IsNaN(float64(got[i]))) {
			if bad < 5 {
				t.Errorf("%g stored as %g, want %g", x, got[i], want)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d values rounded differently from half.Round", bad, len(v))
	}
}
