package onnx

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
	"google.golang.org/protobuf/proto"
)

// 1-D CNNs (N×C×L) as PyTorch exports them: fixtures written by
// scripts/onnx_1d_fixtures.py into testdata/conv1d (Conv1d, BatchNorm1d,
// ReLU, MaxPool1d, AvgPool1d with padding, AdaptiveAvgPool1d, Linear; one
// time-major N×L×C input transposed in the model; one default export with
// the batch norms folded). Each is imported, run in evaluation mode and in
// a training step, and its output and parameter gradients compared with
// PyTorch's float64 values to a relative 1e-4.

type conv1dFixture struct {
	Name    string   `json:"name"`
	Input   []int    `json:"input"`
	Classes int      `json:"classes"`
	Ops     []string `json:"ops"`
}

type conv1dGolden struct {
	X, Y, YTrain, DY []float32
	Grads            map[string][]float32
}

func (g *conv1dGolden) UnmarshalJSON(b []byte) error {
	var raw struct {
		X      []float32            `json:"x"`
		Y      []float32            `json:"y"`
		YTrain []float32            `json:"y_train"`
		DY     []float32            `json:"dy"`
		Grads  map[string][]float32 `json:"grads"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	*g = conv1dGolden{X: raw.X, Y: raw.Y, YTrain: raw.YTrain, DY: raw.DY, Grads: raw.Grads}
	return nil
}

func loadConv1D(t testing.TB) []conv1dFixture {
	t.Helper()
	fx := readJSON[[]conv1dFixture](t, "testdata/conv1d/manifest.json")
	if len(fx) < 4 {
		t.Fatalf("%d 1-D fixtures, want 4", len(fx))
	}
	return fx
}

func readConv1DGolden(t testing.TB, name string) conv1dGolden {
	t.Helper()
	g := readJSON[conv1dGolden](t, filepath.Join("testdata", "conv1d", name+".json"))
	return g
}

// check1D builds f on b and compares it with the golden values: the
// evaluation output, and where the fixture has them the training-step
// output and parameter gradients. It returns the worst relative error.
func check1D(t *testing.T, f *models.File, fx conv1dFixture, g conv1dGolden, b gpu.Backend) float64 {
	t.Helper()
	net, err := f.Build(b)
	if err != nil {
		t.Fatal(err)
	}
	// An N×C×L input is stored as C×1×L; a time-major N×L×C one is what
	// its Transpose reads, flat.
	wantIn := solver.Shape{C: fx.Input[0], H: 1, W: fx.Input[1]}
	if net.In != wantIn || net.Out.Size() != fx.Classes {
		t.Fatalf("net %v -> %v, want %v -> %d", net.In, net.Out, wantIn, fx.Classes)
	}
	worst := relErr(forward(net, g.X), g.Y)
	if !(worst <= 1e-4) {
		t.Errorf("evaluation output: relative error %.3g > 1e-4", worst)
	}
	if len(g.Grads) == 0 {
		return worst
	}
	y, grads := trainStep(net, g.X, g.DY)
	if e := relErr(y, g.YTrain); !(e <= 1e-4) {
		t.Errorf("training output: relative error %.3g > 1e-4", e)
	} else {
		worst = max(worst, e)
	}
	if len(grads) != len(g.Grads) {
		t.Errorf("%d parameter tensors, PyTorch has %d", len(grads), len(g.Grads))
	}
	var scale float64 // the largest gradient of any parameter
	for _, want := range g.Grads {
		for _, v := range want {
			scale = max(scale, math.Abs(float64(v)))
		}
	}
	for name, want := range g.Grads {
		got, ok := grads[name]
		if !ok || len(got) != len(want) {
			t.Errorf("gradient %s: %d values, PyTorch has %d", name, len(got), len(want))
			continue
		}
		e := gradErr(got, want, scale)
		if !(e <= 1e-4) {
			t.Errorf("gradient %s: relative error %.3g > 1e-4", name, e)
		}
		worst = max(worst, e)
	}
	return worst
}

// gradErr is relErr, except for a gradient that is zero in exact arithmetic
// (a convolution's bias before a training batch norm, which subtracts any
// constant the bias adds: PyTorch's float64 values are below 1e-9 of the
// largest gradient): float32 leaves rounding noise there, which is measured
// against scale, the largest gradient of the network.
func gradErr(got, want []float32, scale float64) float64 {
	var top float64
	for _, v := range want {
		top = max(top, math.Abs(float64(v)))
	}
	if top > 1e-9*scale {
		return relErr(got, want)
	}
	var diff float64
	for i := range want {
		diff = max(diff, math.Abs(float64(got[i])-float64(want[i])))
	}
	return diff / scale
}

func TestImport1DMatchesPyTorch(t *testing.T) {
	for _, fx := range loadConv1D(t) {
		t.Run(fx.Name, func(t *testing.T) {
			f := importFile(t, filepath.Join("testdata", "conv1d", fx.Name+".onnx"))
			g := readConv1DGolden(t, fx.Name)
			worst := check1D(t, f, fx, g, cpu.NewCPU())
			t.Logf("worst relative error %.2g (ops %v)", worst, fx.Ops)
		})
	}
}

// The 1-D layers are the 2-D ones with a height of one: the import maps
// every 1-D window to 1×k, and adds no copy for an N×C×L input (the
// time-major fixture's Transpose is its only structural layer).
func TestImport1DLayers(t *testing.T) {
	f := importFile(t, filepath.Join("testdata", "conv1d", "cnn1d_op13.onnx"))
	layers, err := models.DecodeGraph(models.MetaValue(f.Meta, models.MetaGraph))
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, l := range layers {
		kinds = append(kinds, l.Kind)
		if (l.Kind == "conv2d" || l.Kind == "maxpool2d" || l.Kind == "avgpool2d") && (l.KH != 1 || l.SH != 1 || l.PH != 0) {
			t.Errorf("layer %s: %dx%d window, stride %dx%d, pads %dx%d; want 1×k, 1×s, 0×p", l.Name, l.KH, l.KW, l.SH, l.SW, l.PH, l.PW)
		}
	}
	want := []string{"conv2d", "batchnorm", "relu", "maxpool2d", "conv2d", "batchnorm", "relu", "avgpool2d", "globalavgpool", "flatten", "linear"}
	if !slices.Equal(kinds, want) {
		t.Errorf("layers %v, want %v", kinds, want)
	}
}

// TestExport1DRoundTrip: PyTorch's file → import → export → import gives
// the same network and the same bits: equal layers, equal weights, and
// identical logits. The export is 1-D again (an N×C×L input, 1-D
// windows), which TestExport1DForPython hands to onnx.checker.
func TestExport1DRoundTrip(t *testing.T) {
	for _, fx := range loadConv1D(t) {
		t.Run(fx.Name, func(t *testing.T) {
			f := importFile(t, filepath.Join("testdata", "conv1d", fx.Name+".onnx"))
			g := readConv1DGolden(t, fx.Name)
			check1DExport(t, f, fx)
			back := reimport(t, f)
			if !reflect.DeepEqual(back.Params, f.Params) || !reflect.DeepEqual(back.State, f.State) {
				t.Errorf("weights differ after the round trip")
			}
			l1, _ := models.DecodeGraph(models.MetaValue(f.Meta, models.MetaGraph))
			l2, _ := models.DecodeGraph(models.MetaValue(back.Meta, models.MetaGraph))
			if len(l1) != len(l2) {
				t.Fatalf("%d layers after the round trip, %d before", len(l2), len(l1))
			}
			for i := range l1 {
				a, b := l1[i], l2[i]
				a.Name, b.Name = "", ""
				if ja, jb := mustJSON(t, a), mustJSON(t, b); ja != jb {
					t.Errorf("layer %d: %s after the round trip, %s before", i, jb, ja)
				}
			}
			var outs [2][]float32
			for i, file := range []*models.File{f, back} {
				net, err := file.Build(cpu.NewCPU())
				if err != nil {
					t.Fatal(err)
				}
				outs[i] = forward(net, g.X)
			}
			for i := range outs[0] {
				if math.Float32bits(outs[0][i]) != math.Float32bits(outs[1][i]) {
					t.Fatalf("logit %d: %v after the round trip, %v before", i, outs[1][i], outs[0][i])
				}
			}
		})
	}
}

// check1DExport exports f and checks that the file is 1-D as PyTorch
// writes it: an N×C×L input, Conv weights O×C×k, and every window
// attribute (kernel_shape, strides, dilations) of one value, pads of two.
func check1DExport(t *testing.T, f *models.File, fx conv1dFixture) {
	t.Helper()
	var buf bytes.Buffer
	if err := Export(&buf, f); err != nil {
		t.Fatal(err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatal(err)
	}
	if dims := m.GetGraph().GetInput()[0].GetType().GetTensorType().GetShape().GetDim(); len(dims) != 3 {
		t.Errorf("exported input of rank %d, want 3 (N×C×L)", len(dims))
	}
	weights := map[string]int{}
	for _, init := range m.GetGraph().GetInitializer() {
		weights[init.GetName()] = len(init.GetDims())
	}
	convs := 0
	for _, n := range m.GetGraph().GetNode() {
		switch n.GetOpType() {
		case "Conv", "MaxPool", "AveragePool":
		default:
			continue
		}
		for _, a := range n.GetAttribute() {
			want := 1
			if a.GetName() == "pads" {
				want = 2
			}
			if len(a.GetInts()) != want && a.GetType() == onnxpb.AttributeProto_INTS {
				t.Errorf("%s %s: %s %v, want %d value(s)", n.GetOpType(), n.GetName(), a.GetName(), a.GetInts(), want)
			}
		}
		if n.GetOpType() == "Conv" {
			convs++
			if r := weights[n.GetInput()[1]]; r != 3 {
				t.Errorf("Conv %s: weight of rank %d, want 3 (O×C×k)", n.GetName(), r)
			}
		}
	}
	if convs != 2 {
		t.Errorf("%d Conv nodes exported, want 2", convs)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Fine-tuning the imported 1-D CNN with every layer trained (--train-last
// all): 30 SGD steps on a fixed task (class by the sign of channel 0's
// mean, with noise) lower the training loss. Its batch norms train too.
func TestFinetune1DLossFalls(t *testing.T) {
	finetune1D(t, cpu.NewCPU())
}

func finetune1D(t *testing.T, b gpu.Backend) {
	f := importFile(t, filepath.Join("testdata", "conv1d", "cnn1d_op13.onnx"))
	net, err := f.Build(b)
	if err != nil {
		t.Fatal(err)
	}
	net.Unfreeze()
	tr := solver.NewTrainer(net, solver.NewSGD(b, net.NumParams(), 0.9, 0, false), solver.Constant(0.05))
	const n = 32
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, n*net.In.Size())
	labels := make([]int32, n)
	for i := range n {
		labels[i] = int32(i % net.Out.Size())
		for j := range net.In.Size() {
			x[i*net.In.Size()+j] = float32(r.NormFloat64()*0.5) + float32(labels[i])*0.5 - 0.75
		}
	}
	var first, last float64
	for step := range 30 {
		loss, err := tr.Step(x, labels)
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = loss
		}
		last = loss
	}
	if !(last < first/2) {
		t.Errorf("%s: loss %.4f after 30 steps, %.4f at the first: want it at least halved", b.Name(), last, first)
	}
	t.Logf("%s: loss %.4f → %.4f in 30 steps", b.Name(), first, last)
}

// TestExport1DForPython writes cotrain's exports of the 1-D fixtures for
// `scripts/onnx_1d_fixtures.py check` when COTRAIN_ONNX_EXPORT names a
// folder; otherwise it is skipped (a Go test never needs Python).
func TestExport1DForPython(t *testing.T) {
	dir := os.Getenv("COTRAIN_ONNX_EXPORT")
	if dir == "" {
		t.Skip("COTRAIN_ONNX_EXPORT not set")
	}
	for _, fx := range loadConv1D(t) {
		f := importFile(t, filepath.Join("testdata", "conv1d", fx.Name+".onnx"))
		var buf bytes.Buffer
		if err := Export(&buf, f); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "conv1d_"+fx.Name+".cotrain.onnx"), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestImport1DAsymmetricPads: a Conv1d whose pads differ at the two ends
// of L (TensorFlow's "same" padding of an even kernel) imports as a pad
// layer along L before the convolution, which keeps its own padding at 0;
// pads1d_op13 (TestZooOps) checks the values against PyTorch.
func TestImport1DAsymmetricPads(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "conv1d", "cnn1d_op13.onnx"))
	if err != nil {
		t.Fatal(err)
	}
	var m onnxpb.ModelProto
	if err := proto.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	changed := false
	for _, n := range m.GetGraph().GetNode() {
		if n.GetOpType() != "Conv" || changed {
			continue
		}
		for _, a := range n.GetAttribute() {
			if a.GetName() == "pads" {
				a.Ints, changed = []int64{1, 3}, true
			}
		}
	}
	if !changed {
		t.Fatal("no Conv with pads in the fixture")
	}
	b, err := proto.Marshal(&m)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Import(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	layers, err := models.DecodeGraph(f.MetaValue(models.MetaGraph))
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) < 2 || layers[0].Kind != "pad" || !slices.Equal(layers[0].Before, []int{0, 1}) || !slices.Equal(layers[0].After, []int{0, 3}) ||
		layers[0].Mode != "" {
		t.Fatalf("layers %+v: want a zero pad of [0 1] and [0 3] first", layers[:min(len(layers), 3)])
	}
	for _, l := range layers {
		if l.Kind == "conv2d" {
			if l.PW != 0 {
				t.Errorf("the convolution pads %d itself, want 0", l.PW)
			}
			break
		}
	}
}
