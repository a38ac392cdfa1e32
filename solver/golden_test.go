package solver_test

// Golden-value tests: every layer, the loss, the optimizers and the schedules
// against PyTorch 1.13, from the fixtures that scripts/golden.py writes into
// testdata/golden (regenerate with /usr/bin/python3 scripts/golden.py; these
// tests never run Python).
//
// Layers are driven directly, not through a Net, so that the input gradient
// dx is computed too (a Net skips it for its first layer): Setup, Bind with
// views of buffers filled from the fixture, Resize, then Forward and Backward
// with a Pass built here. Outputs and gradients are filled with NaN first, so
// an element a kernel forgets to write fails the comparison.
//
// The references are float64 computations rounded to float32 (see
// scripts/golden.py), so the error measured is our float32 rounding alone.
//
// The metric, per tensor: err = max_i |got_i - want_i| / max(|want_i|, F·M, 1e-30)
// with M = max_i |want_i| and the floor F = 1e-3 (1e-2 for the whole-model
// check). It is relative for elements of ordinary size and absolute
// (relative to the tensor's scale) for elements near zero, where float32
// rounding of a sum with cancellation is not small relative to the element
// itself. A tensor passes when err <= 1e-4; NaN and Inf fail.
//
// Measured margins (go test ./solver -run TestGolden -v prints every worst
// error): single layers reach 4.7e-5 (a 3x3 conv output near zero); LeNet-5's
// gradients, five layers deep, reach 8.5e-5 under F = 1e-3 and 1.4e-5 under
// F = 1e-2, hence the looser floor there, so that an equally valid summation
// order does not fail it.

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// goldenTol is the bound on the metric described above; goldenFloor and
// goldenModelFloor are its F for one layer (or loss, optimizer, schedule)
// and for a whole model.
const (
	goldenTol        = 1e-4
	goldenFloor      = 1e-3
	goldenModelFloor = 1e-2
)

// goldenConfig is the union of the layer configurations scripts/golden.py
// writes; each layer reads the fields it needs.
type goldenConfig struct {
	Out             int     `json:"out"`
	KH              int     `json:"kh"`
	KW              int     `json:"kw"`
	StrideH         int     `json:"stride_h"`
	StrideW         int     `json:"stride_w"`
	PadH            int     `json:"pad_h"`
	PadW            int     `json:"pad_w"`
	Groups          int     `json:"groups"`
	NoBias          bool    `json:"no_bias"`
	CeilMode        bool    `json:"ceil_mode"`
	CountIncludePad bool    `json:"count_include_pad"`
	Eps             float32 `json:"eps"`
	Momentum        float32 `json:"momentum"`
	P               float32 `json:"p"`
	Name            string  `json:"name"`
	WeightDecay     float32 `json:"weight_decay"`
	Nesterov        bool    `json:"nesterov"`
	Base            float32 `json:"base"`
	StepSize        int     `json:"step_size"`
	Gamma           float32 `json:"gamma"`
	TMax            int     `json:"t_max"`
	EtaMin          float32 `json:"eta_min"`
	Alpha           float32 `json:"alpha"`
	Beta            float32 `json:"beta"`
	Lo              float32 `json:"lo"`
	Hi              float32 `json:"hi"`
	NoLo            bool    `json:"no_lo"`
	NoHi            bool    `json:"no_hi"`
	First           int     `json:"first"`
	Last            int     `json:"last"`
}

// goldenFixture is one file of testdata/golden; which fields are set depends
// on Kind ("layer", "loss", "optimizer", "schedule", "model").
type goldenFixture struct {
	Case   string       `json:"case"`
	Kind   string       `json:"kind"`
	Layer  string       `json:"layer"`
	Config goldenConfig `json:"config"`

	// layer
	InShape    []int                `json:"in_shape"`
	Train      bool                 `json:"train"`
	X          []float32            `json:"x"`
	Params     map[string][]float32 `json:"params"`
	State      map[string][]float32 `json:"state"`
	Y          []float32            `json:"y"`
	DY         []float32            `json:"dy"`
	DX         []float32            `json:"dx"`
	Grads      map[string][]float32 `json:"grads"`
	StateAfter map[string][]float32 `json:"state_after"`

	// loss
	Classes int       `json:"classes"`
	Logits  []float32 `json:"logits"`
	Labels  []int32   `json:"labels"`
	Loss    float64   `json:"loss"`
	DLogits []float32 `json:"dlogits"`

	// optimizer: StepPs[i] holds the parameters after step i+1
	P0        []float32   `json:"p0"`
	LRs       []float32   `json:"lrs"`
	StepGrads [][]float32 `json:"step_grads"`
	StepPs    [][]float32 `json:"step_params"`

	// model
	Model       string    `json:"model"`
	ParamNames  []string  `json:"param_names"`
	ParamShapes [][]int   `json:"param_shapes"`
	ParamScales []float32 `json:"param_scales"`
	LCGSeed     uint32    `json:"lcg_seed"`
	GradsFile   string    `json:"grads_file"`
	NumParams   int       `json:"num_params"`
	Checksum    float64   `json:"param_checksum"`
}

// loadGolden reads testdata/golden/<name>.json.
func loadGolden(t *testing.T, name string) *goldenFixture {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name+".json"))
	if err != nil {
		t.Fatalf("golden: %v (regenerate with /usr/bin/python3 scripts/golden.py)", err)
	}
	fx := &goldenFixture{}
	if err := json.Unmarshal(raw, fx); err != nil {
		t.Fatalf("golden: %s: %v", name, err)
	}
	if fx.Case != name {
		t.Fatalf("golden: file %s holds case %q", name, fx.Case)
	}
	return fx
}

// goldenErr returns the metric described at the top of this file with floor
// F and the index of the worst element; a length mismatch or an empty
// reference is an error.
func goldenErr(got, want []float32, floor float64) (float64, int, error) {
	if len(got) != len(want) || len(want) == 0 {
		return 0, 0, fmt.Errorf("%d elements, want %d (an empty fixture checks nothing)", len(got), len(want))
	}
	m := 0.0
	for _, w := range want {
		m = max(m, math.Abs(float64(w)))
	}
	worst, at := 0.0, 0
	for i := range want {
		g, w := float64(got[i]), float64(want[i])
		e := math.Abs(g-w) / max(math.Abs(w), floor*m, 1e-30)
		if math.IsNaN(e) || math.IsInf(g, 0) {
			e = math.Inf(1)
		}
		if e > worst {
			worst, at = e, i
		}
	}
	return worst, at, nil
}

// checkClose fails the test when got is farther from want than goldenTol,
// naming the case, the tensor and the worst element.
func checkClose(t *testing.T, what string, got, want []float32) {
	t.Helper()
	checkCloseFloor(t, what, got, want, goldenFloor)
}

// checkCloseFloor is checkClose with the metric's floor F given.
func checkCloseFloor(t *testing.T, what string, got, want []float32, floor float64) {
	t.Helper()
	e, i, err := goldenErr(got, want, floor)
	switch {
	case err != nil:
		t.Errorf("%s: %v", what, err)
	case e > goldenTol:
		t.Errorf("%s: relative error %.3g > %g at [%d]: got %g, want %g", what, e, goldenTol, i, got[i], want[i])
	default:
		t.Logf("%s: worst relative error %.3g", what, e) // shown with -v, for the margin
	}
}

// download copies a buffer to the host.
func download(b gpu.Backend, buf gpu.Buffer) []float32 {
	h := make([]float32, buf.Len())
	b.Download(h, buf)
	return h
}

// nanBuffer allocates n elements filled with NaN, so that unwritten output shows.
func nanBuffer(b gpu.Backend, n int) gpu.Buffer {
	buf := b.Alloc(n)
	b.Fill(buf, float32(math.NaN()))
	return buf
}

// shapeOf turns a fixture's [N,C,H,W] or [N,C] into a batch and a per-sample shape.
func shapeOf(t *testing.T, in []int) (int, solver.Shape) {
	t.Helper()
	switch len(in) {
	case 2:
		return in[0], solver.Shape{C: in[1], H: 1, W: 1}
	case 4:
		return in[0], solver.Shape{C: in[1], H: in[2], W: in[3]}
	}
	t.Fatalf("golden: in_shape %v", in)
	return 0, solver.Shape{}
}

// bindFromFixture allocates one buffer per spec, filled from vals[spec.Name];
// the specs and the fixture must name the same tensors.
func bindFromFixture(t *testing.T, b gpu.Backend, what string, specs []solver.ParamSpec, vals map[string][]float32) []gpu.Buffer {
	t.Helper()
	if len(specs) != len(vals) {
		t.Fatalf("%s: layer has %d tensors, fixture %d (%v)", what, len(specs), len(vals), keys(vals))
	}
	bufs := make([]gpu.Buffer, len(specs))
	for i, s := range specs {
		v, ok := vals[s.Name]
		if !ok {
			t.Fatalf("%s: fixture has no %q (has %v)", what, s.Name, keys(vals))
		}
		if len(v) != s.Size() {
			t.Fatalf("%s %s: layer wants %v = %d elements, fixture has %d", what, s.Name, s.Dims, s.Size(), len(v))
		}
		bufs[i] = b.Alloc(len(v))
		b.Upload(bufs[i], v)
	}
	return bufs
}

func keys(m map[string][]float32) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// runGoldenLayer drives l through one forward and, for training fixtures with
// a dy, one backward, and compares everything the fixture recorded.
func runGoldenLayer(t *testing.T, l solver.Layer, fx *goldenFixture) {
	b := cpu.NewCPU()
	n, in := shapeOf(t, fx.InShape)
	out, err := l.Setup([]solver.Shape{in})
	if err != nil {
		t.Fatalf("Setup(%v): %v", in, err)
	}
	if len(fx.X) != n*in.Size() {
		t.Fatalf("fixture x has %d elements for %d×%v", len(fx.X), n, in)
	}
	params := bindFromFixture(t, b, "params", l.Params(), fx.Params)
	state := bindFromFixture(t, b, "state", l.State(), fx.State)
	grads := make([]gpu.Buffer, len(params))
	for i, p := range params {
		grads[i] = nanBuffer(b, p.Len())
	}
	l.Bind(b, params, grads, state)
	l.Resize(b, n)
	p := &solver.Pass{B: b, N: n, Train: fx.Train, Rand: rand.New(rand.NewPCG(1, 2)),
		WS: b.Alloc(max(l.Workspace(n), 1))}

	x := b.Alloc(len(fx.X))
	b.Upload(x, fx.X)
	y := nanBuffer(b, n*out.Size())
	l.Forward(p, y, []gpu.Buffer{x})
	checkClose(t, "y", download(b, y), fx.Y)
	if fx.DY == nil {
		return
	}
	dy := b.Alloc(len(fx.DY))
	b.Upload(dy, fx.DY)
	dx := nanBuffer(b, len(fx.X))
	l.Backward(p, []gpu.Buffer{dx}, dy, []gpu.Buffer{x}, y, true)
	checkClose(t, "dx", download(b, dx), fx.DX)
	for i, s := range l.Params() {
		checkClose(t, "grad "+s.Name, download(b, grads[i]), fx.Grads[s.Name])
	}
	for i, s := range l.State() {
		checkClose(t, "state after "+s.Name, download(b, state[i]), fx.StateAfter[s.Name])
	}
}

// goldenLayers lists every layer fixture with the constructor that builds the
// layer from the fixture's configuration.
var goldenLayers = []struct {
	file  string
	build func(c goldenConfig) solver.Layer
}{
	{"linear", func(c goldenConfig) solver.Layer { return solver.NewLinear("fc", c.Out) }},
	{"relu", func(goldenConfig) solver.Layer { return solver.NewReLU("relu") }},
	{"relu6", func(goldenConfig) solver.Layer { return solver.NewReLU6("relu6") }},
	{"flatten", func(goldenConfig) solver.Layer { return solver.NewFlatten("flat") }},
	{"conv2d_3x3_s1_p1", goldenConv},
	{"conv2d_3x3_s2_p0", goldenConv},
	{"conv2d_5x5_p2_lenet", goldenConv},
	{"conv2d_3x5_nonsquare", goldenConv},
	{"conv2d_groups2", goldenConv},
	{"conv2d_depthwise_m1", goldenConv},
	{"conv2d_depthwise_m2", goldenConv},
	{"conv2d_nobias", goldenConv},
	{"maxpool2d_2x2_s2", goldenMaxPool},
	{"maxpool2d_3x3_s2_alexnet", goldenMaxPool},
	{"maxpool2d_3x3_s2_p1", goldenMaxPool},
	{"maxpool2d_2x2_s2_ceil", goldenMaxPool},
	{"maxpool2d_3x3_s2_ceil", goldenMaxPool},
	{"avgpool2d_2x2_s2", goldenAvgPool},
	{"avgpool2d_3x3_s2_p1_incl", goldenAvgPool},
	{"avgpool2d_3x3_s2_p1_excl", goldenAvgPool},
	{"globalavgpool", func(goldenConfig) solver.Layer { return solver.NewGlobalAvgPool("gap") }},
	{"batchnorm2d_train", goldenBN},
	{"batchnorm1d_train", goldenBN},
	{"batchnorm2d_eval", goldenBN},
	{"batchnorm1d_eval", goldenBN},
	{"sigmoid", goldenAct(func(goldenConfig) gpu.Act { return gpu.Sigmoid })},
	{"tanh", goldenAct(func(goldenConfig) gpu.Act { return gpu.Tanh })},
	{"hardswish", goldenAct(func(goldenConfig) gpu.Act { return gpu.HardSwish })},
	{"silu", goldenAct(func(goldenConfig) gpu.Act { return gpu.SiLU })},
	{"hardsigmoid_torch", goldenAct(func(c goldenConfig) gpu.Act { return gpu.HardSigmoid(c.Alpha, c.Beta) })},
	{"hardsigmoid_onnx", goldenAct(func(c goldenConfig) gpu.Act { return gpu.HardSigmoid(c.Alpha, c.Beta) })},
	{"leakyrelu", goldenAct(func(c goldenConfig) gpu.Act { return gpu.LeakyReLU(c.Alpha) })},
	{"leakyrelu_negative", goldenAct(func(c goldenConfig) gpu.Act { return gpu.LeakyReLU(c.Alpha) })},
	{"clip_both", goldenAct(goldenClip)},
	{"clip_min", goldenAct(goldenClip)},
	{"clip_max", goldenAct(goldenClip)},
	{"softmax_channels", goldenSoftmax},
	{"softmax_vector", goldenSoftmax},
	{"softmax_height", goldenSoftmax},
	{"softmax_flat", goldenSoftmax},
	{"dropout_p0_train", goldenDropout},
	{"dropout_p05_eval", goldenDropout},
}

// goldenAct builds an activation layer from the fixture's parameters.
func goldenAct(act func(goldenConfig) gpu.Act) func(goldenConfig) solver.Layer {
	return func(c goldenConfig) solver.Layer { return solver.NewActivation("act", act(c)) }
}

// goldenClip is Clip(lo, hi), a bound the fixture marks absent infinite.
func goldenClip(c goldenConfig) gpu.Act {
	lo, hi := c.Lo, c.Hi
	if c.NoLo {
		lo = float32(math.Inf(-1))
	}
	if c.NoHi {
		hi = float32(math.Inf(1))
	}
	return gpu.Clip(lo, hi)
}

func goldenSoftmax(c goldenConfig) solver.Layer {
	return solver.NewSoftmax("softmax", nil, c.First, c.Last)
}

func goldenBN(c goldenConfig) solver.Layer { return solver.NewBatchNorm("bn", c.Eps, c.Momentum) }

func goldenDropout(c goldenConfig) solver.Layer { return solver.NewDropout("drop", c.P) }
func goldenConv(c goldenConfig) solver.Layer {
	return solver.NewConv2D("conv", solver.ConvConfig{Out: c.Out, KH: c.KH, KW: c.KW, StrideH: c.StrideH,
		StrideW: c.StrideW, PadH: c.PadH, PadW: c.PadW, Groups: c.Groups, NoBias: c.NoBias})
}

func goldenPool(c goldenConfig) solver.PoolConfig {
	return solver.PoolConfig{KH: c.KH, KW: c.KW, StrideH: c.StrideH, StrideW: c.StrideW, PadH: c.PadH,
		PadW: c.PadW, CeilMode: c.CeilMode, CountIncludePad: c.CountIncludePad}
}

func goldenMaxPool(c goldenConfig) solver.Layer { return solver.NewMaxPool2D("pool", goldenPool(c)) }

func goldenAvgPool(c goldenConfig) solver.Layer { return solver.NewAvgPool2D("pool", goldenPool(c)) }

func TestGoldenLayers(t *testing.T) {
	for _, tc := range goldenLayers {
		t.Run(tc.file, func(t *testing.T) {
			fx := loadGolden(t, tc.file)
			if fx.Kind != "layer" {
				t.Fatalf("fixture kind %q, want layer", fx.Kind)
			}
			runGoldenLayer(t, tc.build(fx.Config), fx)
		})
	}
}

func TestGoldenCrossEntropy(t *testing.T) {
	for _, file := range []string{"xent_random", "xent_large_logits"} {
		t.Run(file, func(t *testing.T) {
			fx := loadGolden(t, file)
			b := cpu.NewCPU()
			logits := b.Alloc(len(fx.Logits))
			b.Upload(logits, fx.Logits)
			l := solver.NewSoftmaxCrossEntropy(fx.Classes)
			loss := l.Forward(b, logits, fx.Labels)
			checkClose(t, "loss", []float32{float32(loss)}, []float32{float32(fx.Loss)})
			checkClose(t, "dlogits", download(b, l.Backward(b)), fx.DLogits)
		})
	}
}

func TestGoldenOptimizers(t *testing.T) {
	for _, file := range []string{"sgd_plain", "sgd_momentum", "sgd_nesterov", "sgd_weight_decay",
		"sgd_momentum_weight_decay", "sgd_nesterov_weight_decay", "adam", "adam_weight_decay"} {
		t.Run(file, func(t *testing.T) {
			fx := loadGolden(t, file)
			c := fx.Config
			b := cpu.NewCPU()
			n := len(fx.P0)
			opt, err := solver.NewOptimizer(b, c.Name, n, c.Momentum, c.WeightDecay, c.Nesterov)
			if err != nil {
				t.Fatal(err)
			}
			params, grads := b.Alloc(n), b.Alloc(n)
			b.Upload(params, fx.P0)
			if len(fx.LRs) == 0 || len(fx.StepGrads) != len(fx.LRs) || len(fx.StepPs) != len(fx.LRs) {
				t.Fatalf("fixture: %d lrs, %d grads, %d params", len(fx.LRs), len(fx.StepGrads), len(fx.StepPs))
			}
			for i, lr := range fx.LRs {
				b.Upload(grads, fx.StepGrads[i])
				opt.Step(params, grads, []solver.Range{{Off: 0, Len: n}}, lr)
				checkClose(t, fmt.Sprintf("params after step %d (lr %g)", i+1, lr), download(b, params), fx.StepPs[i])
			}
		})
	}
}

func TestGoldenSchedules(t *testing.T) {
	for _, file := range []string{"steplr_3_half", "steplr_30_tenth", "cosine_10_min", "cosine_100_zero"} {
		t.Run(file, func(t *testing.T) {
			fx := loadGolden(t, file)
			c := fx.Config
			var s solver.Schedule
			switch c.Name {
			case "steplr":
				s = solver.StepLR{Base: c.Base, Gamma: c.Gamma, Every: c.StepSize}
			case "cosine":
				s = solver.Cosine{Base: c.Base, Min: c.EtaMin, Total: c.TMax}
			default:
				t.Fatalf("fixture schedule %q", c.Name)
			}
			got := make([]float32, len(fx.LRs))
			for i := range got {
				got[i] = s.LR(i)
			}
			checkClose(t, "lr per iteration", got, fx.LRs)
		})
	}
}

// TestGoldenCoversFixtures fails when a fixture in testdata/golden is used by
// no test above (a generated case that nothing checks) or a test names a file
// that does not exist.
func TestGoldenCoversFixtures(t *testing.T) {
	used := map[string]bool{}
	for _, tc := range goldenLayers {
		used[tc.file] = true
	}
	for _, f := range goldenOther {
		used[f] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "golden", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	var unused []string
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".json")
		if !used[name] {
			unused = append(unused, name)
		}
		delete(used, name)
	}
	if len(unused) > 0 {
		t.Errorf("fixtures checked by no test: %v", unused)
	}
	if len(used) > 0 {
		t.Errorf("tests name missing fixtures: %v", keysBool(used))
	}
}

func keysBool(m map[string]bool) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// goldenOther names the fixtures the loss, optimizer, schedule and model tests use.
var goldenOther = []string{
	"xent_random", "xent_large_logits",
	"sgd_plain", "sgd_momentum", "sgd_nesterov", "sgd_weight_decay",
	"sgd_momentum_weight_decay", "sgd_nesterov_weight_decay", "adam", "adam_weight_decay",
	"steplr_3_half", "steplr_30_tenth", "cosine_10_min", "cosine_100_zero",
	"model_lenet5",
}

// lcgParams mirrors scripts/golden.py's lcg_params: a portable parameter
// generator whose every step is exact in float32.
func lcgParams(seed uint32, sizes []int, scales []float32) []float32 {
	s := seed
	var out []float32
	for k, n := range sizes {
		for range n {
			s = s*1664525 + 1013904223
			u := float32(int32((s>>8)*2)-1<<24) / (1 << 24)
			out = append(out, u*scales[k])
		}
	}
	return out
}

// readF32 reads a little-endian float32 file.
func readF32(t *testing.T, name string) []float32 {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "golden", name))
	if err != nil {
		t.Fatalf("golden: %v", err)
	}
	if len(raw)%4 != 0 {
		t.Fatalf("golden: %s: %d bytes is not float32s", name, len(raw))
	}
	v := make([]float32, len(raw)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return v
}

// TestGoldenLCGMatchesGenerator checks that lcgParams reproduces the
// parameters scripts/golden.py gave the model fixture (their float64 sum).
func TestGoldenLCGMatchesGenerator(t *testing.T) {
	fx := loadGolden(t, "model_lenet5")
	sizes := make([]int, len(fx.ParamShapes))
	for i, sh := range fx.ParamShapes {
		sizes[i] = 1
		for _, d := range sh {
			sizes[i] *= d
		}
	}
	p := lcgParams(fx.LCGSeed, sizes, fx.ParamScales)
	if len(p) != fx.NumParams {
		t.Fatalf("%d parameters, fixture has %d", len(p), fx.NumParams)
	}
	sum := 0.0
	for _, v := range p {
		sum += float64(v)
	}
	if math.Abs(sum-fx.Checksum) > 1e-9*max(1, math.Abs(fx.Checksum)) {
		t.Fatalf("parameter sum %.12g, generator's %.12g: lcgParams differs from scripts/golden.py", sum, fx.Checksum)
	}
	if g := readF32(t, fx.GradsFile); len(g) != fx.NumParams {
		t.Fatalf("%s holds %d floats, want %d", fx.GradsFile, len(g), fx.NumParams)
	}
}

// TestGoldenErrMetric pins the comparison itself, so that a broken metric
// cannot let every golden test pass.
func TestGoldenErrMetric(t *testing.T) {
	nan := float32(math.NaN())
	for _, tc := range []struct {
		name      string
		got, want []float32
		pass      bool
	}{
		{"equal", []float32{1, -2, 3}, []float32{1, -2, 3}, true},
		{"relative 5e-5", []float32{1.00005, 2}, []float32{1, 2}, true},
		{"relative 2e-4", []float32{1.0002, 2}, []float32{1, 2}, false},
		{"near zero uses the tensor scale", []float32{1e-8, 10}, []float32{0, 10}, true},
		{"near zero error above 1e-7 of scale", []float32{2e-6, 10}, []float32{0, 10}, false},
		{"all zero must be exact", []float32{1e-20}, []float32{0}, false},
		{"NaN fails", []float32{nan, 1}, []float32{1, 1}, false},
		{"Inf fails", []float32{float32(math.Inf(1))}, []float32{1}, false},
	} {
		e, _, err := goldenErr(tc.got, tc.want, goldenFloor)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if (e <= goldenTol) != tc.pass {
			t.Errorf("%s: error %g, want pass=%v", tc.name, e, tc.pass)
		}
	}
	if _, _, err := goldenErr([]float32{1}, []float32{1, 2}, goldenFloor); err == nil {
		t.Error("length mismatch: no error")
	}
	if _, _, err := goldenErr(nil, nil, goldenFloor); err == nil {
		t.Error("empty reference: no error")
	}
}

// TestGoldenLeNet5 checks a whole model: models.Build("lenet5") with the
// fixture's parameters (from lcgParams) must give PyTorch's logits, loss and
// full flat gradient on a batch of 4, which also checks that the flat
// parameter order and names are PyTorch's parameters().
func TestGoldenLeNet5(t *testing.T) {
	fx := loadGolden(t, "model_lenet5")
	b := cpu.NewCPU()
	net, err := models.Build(b, fx.Model, models.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ts := net.Tensors()
	if len(ts) != len(fx.ParamNames) {
		t.Fatalf("%d parameter tensors, PyTorch has %d", len(ts), len(fx.ParamNames))
	}
	sizes := make([]int, len(ts))
	for i, tn := range ts {
		if tn.Name != fx.ParamNames[i] || !slices.Equal(tn.Dims, fx.ParamShapes[i]) {
			t.Fatalf("tensor %d is %s %v, PyTorch's is %s %v", i, tn.Name, tn.Dims, fx.ParamNames[i], fx.ParamShapes[i])
		}
		sizes[i] = tn.Spec.Size()
	}
	if net.NumParams() != fx.NumParams {
		t.Fatalf("%d parameters, PyTorch has %d", net.NumParams(), fx.NumParams)
	}
	b.Upload(net.Params, lcgParams(fx.LCGSeed, sizes, fx.ParamScales))
	n, in := shapeOf(t, fx.InShape)
	if in != net.In {
		t.Fatalf("input %v, fixture %v", net.In, in)
	}
	x := b.Alloc(len(fx.X))
	b.Upload(x, fx.X)
	logits := net.Forward(x, n, true)
	checkCloseFloor(t, "logits", download(b, logits), fx.Logits, goldenModelFloor)
	loss := solver.NewSoftmaxCrossEntropy(net.Out.C)
	l := loss.Forward(b, logits, fx.Labels)
	checkClose(t, "loss", []float32{float32(l)}, []float32{float32(fx.Loss)})
	net.Backward(loss.Backward(b))
	got, want := download(b, net.Grads), readF32(t, fx.GradsFile)
	checkCloseFloor(t, "flat gradient", got, want, goldenModelFloor)
	for _, tn := range ts { // per tensor too, so a small tensor's error is not hidden by fc1's scale
		end := tn.Off + tn.Spec.Size()
		checkCloseFloor(t, "gradient "+tn.Name, got[tn.Off:end], want[tn.Off:end], goldenModelFloor)
	}
}
