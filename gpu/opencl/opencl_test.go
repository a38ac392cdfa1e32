//go:build opencl

package opencl

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/gputest"
	"github.com/cotrain/cotrain/gpu/half"
)

// OpenCL kernels are checked against the CPU backend on random data. Run with
//
//	go test -tags opencl ./gpu -run OpenCL
//
// The tests use the device Open("opencl") picks (COTRAIN_TEST_DEVICE=opencl:N
// overrides) and skip when the machine has no OpenCL device at all.

// testBackend is one shared backend of the tests, built on first use.
type testBackend struct {
	once sync.Once
	o    *OpenCL
	err  error
}

// testCL and testCLHalf are the float and the half-storage backends.
var testCL, testCLHalf testBackend

func (tb *testBackend) get(t testing.TB, half bool) *OpenCL {
	t.Helper()
	return tb.getConfig(t, testConfig(half))
}

// getConfig is get with the configuration cfg.
func (tb *testBackend) getConfig(t testing.TB, cfg Config) *OpenCL {
	t.Helper()
	tb.once.Do(func() { tb.o, tb.err = New(cfg) })
	if errors.Is(tb.err, gpu.ErrNoOpenCL) || errors.Is(tb.err, gpu.ErrNoDevice) {
		t.Skipf("no OpenCL device: %v", tb.err)
	}
	if tb.err != nil {
		t.Fatal(tb.err)
	}
	return tb.o
}

// testConfig is the configuration of the shared test backends: envConfig
// with tuning off, and with half storage two small GEMM tilings (enough
// to compare variants, and a fraction of the build time of all six on
// PoCL).
func testConfig(half bool) Config {
	cfg := envConfig()
	cfg.Tune, cfg.HalfStorage = false, half
	if half {
		cfg.GemmVariants = halfTestGemms
	}
	return cfg
}

// testBackends are the backends of the tests that need a configuration of
// their own (openCLWith), by its description: each is built on first use
// (its programs from the cache the shared ones filled) and shared by the
// tests that ask for the same configuration, as testCL is.
var testBackends struct {
	sync.Mutex
	by map[string]*testBackend
}

// openCLWith returns a backend configured as o (a shared test backend,
// float or half) with set applied to its Config: the way a test gets other
// knobs or switches than the defaults, which stay fixed once a backend is
// open.
func openCLWith(t testing.TB, o *OpenCL, set func(cfg *Config, kn *knobs)) *OpenCL {
	t.Helper()
	cfg, kn := testConfig(o.half), defaultKnobs()
	set(&cfg, &kn)
	cfg.knobs = nil
	key := fmt.Sprintf("%+v %+v", cfg, kn)
	cfg.knobs = &kn
	testBackends.Lock()
	if testBackends.by == nil {
		testBackends.by = map[string]*testBackend{}
	}
	tb := testBackends.by[key]
	if tb == nil {
		tb = &testBackend{}
		testBackends.by[key] = tb
	}
	testBackends.Unlock()
	return tb.getConfig(t, cfg)
}

// mirror returns a buffer of dst holding what b, a buffer of src, holds.
func mirror(dst, src *OpenCL, b gpu.Buffer) gpu.Buffer {
	m := dst.Alloc(b.Len())
	dst.Upload(m, download(src, b))
	return m
}

// openCLKnobs is openCLWith changing the knobs only.
func openCLKnobs(t testing.TB, o *OpenCL, set func(kn *knobs)) *OpenCL {
	t.Helper()
	return openCLWith(t, o, func(_ *Config, kn *knobs) { set(kn) })
}

// halfTestGemms are the GEMM tilings of the half-storage test backends.
var halfTestGemms = []string{"32x32/4x4/k16", "64x64/8x4/k16/w4"}

// openCLForTest returns the backend shared by the tests (building the
// kernels once per test binary), tuning off.
func openCLForTest(t testing.TB) *OpenCL { return testCL.get(t, false) }

// openCLHalfForTest is openCLForTest with half storage.
func openCLHalfForTest(t testing.TB) *OpenCL { return testCLHalf.get(t, true) }

// useTuner makes o run its products with tn until the test ends, then
// with the tuner it had.
func useTuner(t testing.TB, o *OpenCL, tn *gemmTuner) {
	prev := o.tuner
	o.tuner = tn
	t.Cleanup(func() { o.tuner = prev })
}

// tunerLike is a copy of o's tuner with its per-size choice, no shape or
// batched launch chosen yet, saving nowhere, timing new shapes when
// timeShapes is set.
func tunerLike(o *OpenCL, timeShapes bool) *gemmTuner {
	tn := *o.tuner
	tn.byShape, tn.batched, tn.path, tn.tuned.Shapes = nil, nil, "", nil
	tn.timeShapes = timeShapes && len(tn.vars) > 1
	return &tn
}

// bothStorages runs test as subtests "fp32" and "fp16", on the float and the
// half-storage backend. On the latter, twins hold half-rounded data on the
// CPU side too, so that both compute from the same inputs, and checks allow
// for the device's rounding of its outputs (halfTol).
func bothStorages(t *testing.T, test func(t *testing.T, o *OpenCL)) {
	t.Run("fp32", func(t *testing.T) { test(t, openCLForTest(t)) })
	t.Run("fp16", func(t *testing.T) { test(t, openCLHalfForTest(t)) })
}

// halfTol is the relative tolerance of half storage: four roundings to half
// (2⁻¹¹ each), for checks after a few kernels whose outputs the device
// rounds and the CPU does not.
const halfTol = 2e-3

// forStorage returns data as o stores it: rounded to half with half storage.
func forStorage(o *OpenCL, data []float32) []float32 {
	if o.half {
		for i, v := range data {
			data[i] = half.Round(v)
		}
	}
	return data
}

// twin holds the same data on the CPU and on OpenCL.
type twin struct {
	cpu gpu.Buffer
	cl  gpu.Buffer
}

func newTwin(o *OpenCL, data []float32) twin {
	c := o.Alloc(len(data))
	o.Upload(c, data)
	return twin{cpu: gpu.Host(forStorage(o, append([]float32(nil), data...))), cl: c}
}

func download(o *OpenCL, b gpu.Buffer) []float32 {
	out := make([]float32, b.Len())
	o.Download(out, b)
	return out
}

// assertClose checks got against want element by element:
// |got-want| <= rel*(|want| + 1e-2*max|want|) (the second term absorbs
// cancellation in sums whose terms are much larger than their result).
func assertClose(t *testing.T, what string, got, want []float32, rel float64) {
	t.Helper()
	assertCloseFloor(t, what, got, want, rel, 1e-2)
}

// assertCloseFor is assertClose with o's tolerance: 1e-4 in float; with half
// storage halfTol and a floor of half max|want|, as every intermediate the
// device stores (a product before its bias, the column matrix col2im sums)
// is rounded to 2⁻¹¹ of its own size, which can be far larger than the
// result's.
func assertCloseFor(t *testing.T, o *OpenCL, what string, got, want []float32) {
	t.Helper()
	if o.half {
		assertCloseFloor(t, what, got, want, halfTol, 0.5)
		return
	}
	assertClose(t, what, got, want, tol)
}

// assertCloseFloor is assertClose with the floor's fraction of max|want|.
func assertCloseFloor(t *testing.T, what string, got, want []float32, rel, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	var scale float64
	for _, w := range want {
		scale = max(scale, math.Abs(float64(w)))
	}
	bad := 0
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(w) && math.IsNaN(g) {
			continue
		}
		if math.Abs(g-w) > rel*(math.Abs(w)+floor*scale) || math.IsNaN(g) != math.IsNaN(w) {
			if bad < 5 {
				t.Errorf("%s[%d] = %g, want %g", what, i, g, w)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d values differ (rel %g)", what, bad, len(got), rel)
	}
}

// check compares a twin's OpenCL side with its CPU side. With half
// storage it then sets the CPU side to the device's values, so that the
// next kernel's check starts from the same inputs on both sides again.
func (tw twin) check(t *testing.T, o *OpenCL, what string) {
	t.Helper()
	got := download(o, tw.cl)
	assertCloseFor(t, o, what, got, []float32(tw.cpu.(gpu.Host)))
	if o.half {
		copy(tw.cpu.(gpu.Host), got)
	}
}

const tol = 1e-4

func TestOpenCLElementwise(t *testing.T) { bothStorages(t, testOpenCLElementwise) }

func testOpenCLElementwise(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 7, 128, 1000, 4097} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			x, y, z := newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n))
			x.check(t, o, "upload")
			cpu.Axpy(0.7, x.cpu, y.cpu)
			o.Axpy(0.7, x.cl, y.cl)
			y.check(t, o, "axpy")
			cpu.Scale(y.cpu, -1.3)
			o.Scale(y.cl, -1.3)
			y.check(t, o, "scale")
			cpu.Mul(z.cpu, x.cpu, y.cpu)
			o.Mul(z.cl, x.cl, y.cl)
			z.check(t, o, "mul")
			for _, a := range []gpu.Act{gpu.ReLU, gpu.ReLU6} {
				big := newTwin(o, scaled(gputest.Rand(r, n), 8))
				cpu.Activate(a, z.cpu, big.cpu)
				o.Activate(a, z.cl, big.cl)
				z.check(t, o, a.String())
				cpu.ActivateBackward(a, y.cpu, x.cpu, big.cpu)
				o.ActivateBackward(a, y.cl, x.cl, big.cl)
				y.check(t, o, a.String()+" backward")
			}
			cpu.Copy(z.cpu, x.cpu)
			o.Copy(z.cl, x.cl)
			z.check(t, o, "copy")
			cpu.Fill(z.cpu, 2.5)
			o.Fill(z.cl, 2.5)
			z.check(t, o, "fill")
		})
	}
}

func scaled(v []float32, s float32) []float32 {
	for i := range v {
		v[i] *= s
	}
	return v
}

// TestOpenCLViews runs kernels on views at odd offsets of one allocation and
// checks the elements around them are untouched.
func TestOpenCLViews(t *testing.T) { bothStorages(t, testOpenCLViews) }

func testOpenCLViews(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(3, 4))
	all := newTwin(o, gputest.Rand(r, 100))
	views := func(b gpu.Backend, buf gpu.Buffer) (gpu.Buffer, gpu.Buffer, gpu.Buffer) {
		return b.View(buf, 3, 17), b.View(buf, 41, 17), b.View(b.View(buf, 60, 30), 5, 17)
	}
	ca, cb, cc := views(cpu, all.cpu)
	oa, ob, oc := views(o, all.cl)
	cpu.Axpy(2, ca, cb)
	o.Axpy(2, oa, ob)
	cpu.Mul(cc, ca, cb)
	o.Mul(oc, oa, ob)
	cpu.Copy(ca, cc)
	o.Copy(oa, oc)
	all.check(t, o, "views")
	got := make([]float32, 17)
	o.Download(got, oc)
	assertCloseFor(t, o, "view download", got, []float32(cc.(gpu.Host)))
	o.Upload(ob, got)
	cpu.Upload(cb, got)
	all.check(t, o, "view upload")
	if o.View(all.cl, 100, 0).Len() != 0 || o.Alloc(0).Len() != 0 {
		t.Error("empty views and buffers have a length")
	}
}

func TestOpenCLBias(t *testing.T) { bothStorages(t, testOpenCLBias) }

func testOpenCLBias(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(5, 6))
	for _, s := range []struct{ n, c, hw int }{{1, 1, 1}, {2, 3, 5}, {8, 16, 49}, {3, 7, 1000}, {64, 10, 1}} {
		x := newTwin(o, gputest.Rand(r, s.n*s.c*s.hw))
		b := newTwin(o, gputest.Rand(r, s.c))
		cpu.AddBias(x.cpu, b.cpu, s.n, s.c, s.hw)
		o.AddBias(x.cl, b.cl, s.n, s.c, s.hw)
		x.check(t, o, fmt.Sprintf("AddBias %+v", s))
		cpu.BiasGrad(b.cpu, x.cpu, s.n, s.c, s.hw)
		o.BiasGrad(b.cl, x.cl, s.n, s.c, s.hw)
		b.check(t, o, fmt.Sprintf("BiasGrad %+v", s))
	}
}

// TestOpenCLOptimizers runs in float only: half storage is for inference
// (the solver refuses to train on it; see StoresHalf), and its optimizer
// steps lose what the test would check, an update smaller than half a unit
// in the last place of the weight.
func TestOpenCLOptimizers(t *testing.T) {
	o := openCLForTest(t)
	cpu := newCPU()
	r := rand.New(rand.NewPCG(7, 8))
	const n = 1031
	for _, c := range []struct {
		mom, wd  float32
		nesterov bool
	}{{0, 0, false}, {0.9, 0, false}, {0.9, 5e-4, true}, {0, 1e-2, false}} {
		p, g, v := newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n)), newTwin(o, make([]float32, n))
		for step := 0; step < 3; step++ {
			cpu.SGDStep(p.cpu, g.cpu, v.cpu, 0.1, c.mom, c.wd, c.nesterov)
			o.SGDStep(p.cl, g.cl, v.cl, 0.1, c.mom, c.wd, c.nesterov)
		}
		p.check(t, o, fmt.Sprintf("SGD %+v params", c))
		v.check(t, o, fmt.Sprintf("SGD %+v velocity", c))
	}
	for _, wd := range []float32{0, 1e-2} {
		p, g := newTwin(o, gputest.Rand(r, n)), newTwin(o, gputest.Rand(r, n))
		m, v := newTwin(o, make([]float32, n)), newTwin(o, make([]float32, n))
		for step := 1; step <= 3; step++ {
			cpu.AdamStep(p.cpu, g.cpu, m.cpu, v.cpu, 1e-3, 0.9, 0.999, 1e-8, wd, step)
			o.AdamStep(p.cl, g.cl, m.cl, v.cl, 1e-3, 0.9, 0.999, 1e-8, wd, step)
		}
		p.check(t, o, "Adam params")
		m.check(t, o, "Adam m")
		v.check(t, o, "Adam v")
	}
}

func TestOpenCLSoftmaxCrossEntropy(t *testing.T) { bothStorages(t, testOpenCLSoftmaxCrossEntropy) }

func testOpenCLSoftmaxCrossEntropy(t *testing.T, o *OpenCL) {
	cpu := newCPU()
	r := rand.New(rand.NewPCG(9, 10))
	for _, s := range []struct{ n, classes int }{{1, 2}, {7, 10}, {64, 10}, {300, 1000}} {
		logits := newTwin(o, scaled(gputest.Rand(r, s.n*s.classes), 20))
		probs := newTwin(o, make([]float32, s.n*s.classes))
		labels := make([]int32, s.n)
		for i := range labels {
			labels[i] = int32(r.IntN(s.classes))
		}
		want := cpu.SoftmaxCrossEntropy(probs.cpu, logits.cpu, labels, s.n, s.classes)
		got := o.SoftmaxCrossEntropy(probs.cl, logits.cl, labels, s.n, s.classes)
		if math.Abs(got-want) > 1e-5*math.Abs(want) {
			t.Errorf("%+v: loss %v, want %v", s, got, want)
		}
		probs.check(t, o, fmt.Sprintf("probs %+v", s))
		d := newTwin(o, make([]float32, s.n*s.classes))
		cpu.SoftmaxCrossEntropyBackward(d.cpu, probs.cpu, labels, s.n, s.classes, 1/float32(s.n))
		o.SoftmaxCrossEntropyBackward(d.cl, probs.cl, labels, s.n, s.classes, 1/float32(s.n))
		d.check(t, o, fmt.Sprintf("dlogits %+v", s))
		// New labels of the same length must be uploaded, not reused.
		for i := range labels {
			labels[i] = int32((int(labels[i]) + 1) % s.classes)
		}
		cpu.SoftmaxCrossEntropyBackward(d.cpu, probs.cpu, labels, s.n, s.classes, 0.5)
		o.SoftmaxCrossEntropyBackward(d.cl, probs.cl, labels, s.n, s.classes, 0.5)
		d.check(t, o, fmt.Sprintf("dlogits, new labels %+v", s))
	}
}

// TestOpenCLOpen: "opencl" accepts any device type (PoCL's CPU device too),
// and "opencl:N" addresses the Devices list.
func TestOpenCLOpen(t *testing.T) {
	openCLForTest(t)
	b, err := gpu.Open("opencl", gpu.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	devs, err := gpu.Devices()
	if err != nil || len(devs) == 0 {
		t.Fatalf("Devices() = %v, %v", devs, err)
	}
	b.(*OpenCL).Close()
	last := len(devs) - 1
	b, err = gpu.Open(fmt.Sprintf("opencl:%d", last), gpu.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.(*OpenCL).Close()
	if want := fmt.Sprintf("opencl:%d %s", last, devs[last].Name); b.Name() != want {
		t.Errorf("Name() = %q, want %q", b.Name(), want)
	}
	t.Logf("devices: %v", devs)
}

func TestOpenCLErrors(t *testing.T) {
	err := clErr("clBuildProgram", int32(-11))
	var ce *CLError
	if !errors.As(err, &ce) || ce.Code != -11 || ce.Name() != "CL_BUILD_PROGRAM_FAILURE" {
		t.Errorf("clErr: %v", err)
	}
	if !errors.Is(err, &CLError{Code: -11}) || errors.Is(err, &CLError{Code: -5}) {
		t.Error("errors.Is does not match on the code")
	}
	if got := err.Error(); got != "gpu: opencl: clBuildProgram: CL_BUILD_PROGRAM_FAILURE (-11)" {
		t.Errorf("Error() = %q", got)
	}
	if clErr("x", 0) != nil || (&CLError{Code: -9999}).Name() != "CL_ERROR" {
		t.Error("success or unknown codes mishandled")
	}
}
