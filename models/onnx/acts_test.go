package onnx

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
	"github.com/cotrain/cotrain/solver"
)

// actFixture is one entry of testdata/acts/acts.json (scripts/onnx_acts.py).
type actFixture struct {
	Name    string   `json:"name"`
	Opset   int      `json:"opset"`
	Classes int      `json:"classes"`
	Ops     []string `json:"ops"`
	Kinds   []string `json:"kinds"`  // layer kinds the import must produce
	Absent  []string `json:"absent"` // and must not
}

// loadActs reads testdata/acts/acts.json.
func loadActs(t *testing.T) []actFixture {
	t.Helper()
	fixtures := readJSON[[]actFixture](t, "testdata/acts/acts.json")
	return fixtures
}

// kinds returns the layer kinds of a graph file.
func kinds(t *testing.T, f *models.File) []string {
	t.Helper()
	_, nodes, err := models.FileNodes(f)
	if err != nil {
		t.Fatal(err)
	}
	var ks []string
	for _, nd := range nodes {
		ks = append(ks, nd.Layer.Kind())
	}
	return ks
}

// TestImportActivations imports PyTorch's exports of every activation kind
// at the opsets where it writes them differently, compares the logits with
// PyTorch's to a relative 1e-4, checks the layers made (a Hardswish written
// as x·HardSigmoid(x) is one hardswish layer), then exports the network and
// imports it again: the same layers and the same logits, bit for bit.
func TestImportActivations(t *testing.T) {
	fixtures := loadActs(t)
	if len(fixtures) < 10 {
		t.Fatalf("only %d fixtures", len(fixtures))
	}
	for _, fx := range fixtures {
		t.Run(fx.Name, func(t *testing.T) {
			base := filepath.Join("testdata", "acts", fx.Name)
			f := importFile(t, base+".onnx")
			x, _ := readNPY(t, base+".x.npy")
			want, _ := readNPY(t, base+".y.npy")
			net, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			got := forward(net, x)
			if e := relErr(got, want); !(e <= 1e-4) {
				t.Errorf("relative error %.3g > 1e-4 (got %v, want %v)", e, got[:min(4, len(got))], want[:min(4, len(want))])
			} else {
				t.Logf("opset %d: ops %v, relative error %.2g", fx.Opset, fx.Ops, e)
			}
			ks := kinds(t, f)
			for _, k := range fx.Kinds {
				if !slices.Contains(ks, k) {
					t.Errorf("no %s layer in %v", k, ks)
				}
			}
			for _, k := range fx.Absent {
				if slices.Contains(ks, k) {
					t.Errorf("a %s layer in %v", k, ks)
				}
			}
			if _, err := os.Stat(base + ".json"); err == nil {
				checkGrads(t, net, readJSON[structGolden](t, base+".json"))
			}
			back := reimport(t, f)
			if bk := kinds(t, back); !slices.Equal(bk, ks) {
				t.Errorf("layers after export and import %v, want %v", bk, ks)
			}
			net2, err := back.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(forward(net2, x), got); e != 0 {
				t.Errorf("after export and import: relative change %.3g", e)
			}
		})
	}
}

// checkGrads compares a training step of net with a gradient golden
// (scripts/onnx_acts.py's grads: x, dy, PyTorch's output and every
// parameter's gradient by autograd): each to 1e-4 relative.
func checkGrads(t *testing.T, net *solver.Net, g structGolden) {
	t.Helper()
	y, grads := trainStep(net, g.X, g.DY)
	if e := relErr(y, g.Y); !(e <= 1e-4) {
		t.Errorf("training output: relative error %.3g > 1e-4", e)
	}
	if len(grads) != len(g.Grads) {
		t.Errorf("%d parameter tensors, PyTorch has %d", len(grads), len(g.Grads))
	}
	worst := 0.0
	for name, want := range g.Grads {
		got, ok := grads[name]
		if !ok || len(got) != len(want) {
			t.Errorf("gradient %s: %d values, PyTorch has %d", name, len(got), len(want))
			continue
		}
		e := relErr(got, want)
		if maxAbs(want) < 1e-6 {
			// A gradient that is 0 in exact arithmetic (a bias whose
			// channel a layer norm then removes, or a softmax over the
			// keys an attention's key bias): compared absolutely.
			e = maxAbs(got)
		}
		if !(e <= 1e-4) {
			t.Errorf("gradient %s: relative error %.3g > 1e-4", name, e)
		}
		worst = max(worst, e)
	}
	t.Logf("%s: training output relative error %.2g, %d parameter gradients: worst relative error %.2g",
		net.B.Name(), relErr(y, g.Y), len(g.Grads), worst)
}

// maxAbs is max|v|.
func maxAbs(v []float32) float64 {
	var m float64
	for _, x := range v {
		m = max(m, math.Abs(float64(x)))
	}
	return m
}

// TestSoftmaxAxes checks the axes a Softmax normalises over under each
// opset's rule (before 13: everything from axis on, default 1; from 13: the
// one axis, default -1) on an N×2×4×4 input, and that every form survives
// export and import with the same logits (several axes go out as Reshape,
// Softmax, Reshape and come back as those layers).
func TestSoftmaxAxes(t *testing.T) {
	x := make([]float32, 3*32)
	for i := range x {
		x[i] = float32(i%7) - 2.5
	}
	for _, tc := range []struct {
		opset int64
		axis  *int
		want  []int
	}{
		{11, nil, []int{0, 1, 2}},
		{11, ptr(1), []int{0, 1, 2}},
		{11, ptr(2), []int{1, 2}},
		{11, ptr(-1), []int{2}},
		{13, nil, []int{2}},
		{13, ptr(1), []int{0}},
		{13, ptr(-2), []int{1}},
	} {
		var attrs []*onnxpb.AttributeProto
		if tc.axis != nil {
			attrs = append(attrs, attrInt("axis", *tc.axis))
		}
		raw := tiny(tc.opset, headInits, withHead(nd("Softmax", "sm", []string{"x"}, "h", attrs...))...)
		f, err := Import(bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("opset %d axis %v: %v", tc.opset, tc.axis, err)
		}
		layers, err := models.DecodeGraph(f.MetaValue(models.MetaGraph))
		if err != nil {
			t.Fatal(err)
		}
		if sm := layers[0]; sm.Kind != "softmax" || !slices.Equal(sm.Axes, tc.want) || !slices.Equal(sm.Dims, []int{2, 4, 4}) {
			t.Errorf("opset %d axis %v: first layer %+v, want a softmax over axes %v of [2 4 4]", tc.opset, tc.axis, sm, tc.want)
		}
		// The head's weights are zeros in tiny: give them values so that the
		// logits show the softmax.
		for i := range f.Params {
			for k := range f.Params[i].Data {
				f.Params[i].Data[k] = float32(k%5) - 2
			}
		}
		net, err := f.Build(cpu.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		want := forward(net, x)
		back := reimport(t, f)
		net2, err := back.Build(cpu.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		if e := relErr(forward(net2, x), want); e != 0 {
			t.Errorf("opset %d axis %v: after export and import: relative change %.3g (%v)", tc.opset, tc.axis, e, kinds(t, back))
		}
	}
}

func ptr(v int) *int { return &v }

// TestMobileBlocks imports the network of modern mobile blocks that
// scripts/onnx_acts.py defines in PyTorch (hard-swish, squeeze-excitation
// with sigmoid and hard-sigmoid gates, a ShuffleNet unit's concat of
// branches and channel shuffle, batch norm kept): its logits equal
// PyTorch's to a relative 1e-4; exported and imported again it gives the
// same logits bit for bit, and it trains (a backward pass reaches every
// parameter).
func TestMobileBlocks(t *testing.T) {
	base := filepath.Join("testdata", "mobile_blocks")
	f := importFile(t, base+".onnx")
	x, _ := readNPY(t, base+".x.npy")
	want, _ := readNPY(t, base+".y.npy")
	net, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	got := forward(net, x)
	if e := relErr(got, want); !(e <= 1e-4) {
		t.Fatalf("relative error %.3g > 1e-4 (got %v, want %v)", e, got[:4], want[:4])
	} else {
		t.Logf("%d layers, %d params, relative error %.2g; layers %v", len(net.Layers()), net.NumParams(), e, kinds(t, f))
	}
	ks := kinds(t, f)
	for _, k := range []string{"hardswish", "sigmoid", "hardsigmoid", "batchnorm", "transpose"} {
		if !slices.Contains(ks, k) {
			t.Errorf("no %s layer in %v", k, ks)
		}
	}
	back := reimport(t, f)
	net2, err := back.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	if e := relErr(forward(net2, x), got); e != 0 {
		t.Errorf("after export and import: relative change %.3g", e)
	}
	// One training step's gradient is finite and reaches every parameter.
	n := len(x) / net.In.Size()
	xb := net.B.Alloc(len(x))
	net.B.Upload(xb, x)
	out := net.Forward(xb, n, true)
	dy := net.B.Alloc(out.Len())
	net.B.Fill(dy, 0.1)
	net.Backward(dy)
	grads := make([]float32, net.Grads.Len())
	net.B.Download(grads, net.Grads)
	for _, tn := range net.Tensors() {
		g := grads[tn.Off : tn.Off+tn.Spec.Size()]
		nonzero := false
		for _, v := range g {
			if v != v || v > 1e30 || v < -1e30 {
				t.Fatalf("%s: gradient %v", tn.Name, v)
			}
			nonzero = nonzero || v != 0
		}
		if !nonzero {
			t.Errorf("%s: zero gradient", tn.Name)
		}
	}
}
