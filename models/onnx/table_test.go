package onnx

import (
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// TestUnaryTableRoundTrip walks gpu's operator table: every entry, with
// each parameter set the table tests, as the one layer of a graph file, is
// exported to ONNX and imported back as the same layer description (kind
// and parameters) before the export's flatten, computing the same outputs bit for bit. Entries without
// an ONNX operator of their own (ReLU6, SiLU) come back as what they are
// written as: ReLU6 as a relu6 (Clip(0, 6)), SiLU as a silu (x·Sigmoid(x));
// a Clip(0, 6) comes back as a relu6.
func TestUnaryTableRoundTrip(t *testing.T) {
	in := solver.Shape{C: 2, H: 3, W: 4}
	for _, op := range gpu.UnaryOps() {
		for _, a := range op.TestActs() {
			d := models.Layer{Kind: op.Name, Name: "act"}
			models.DescribeAct(&d, a)
			graph, err := models.EncodeGraph([]models.Layer{d})
			if err != nil {
				t.Fatal(err)
			}
			f := &models.File{Model: models.GraphModel, Config: models.Config{Classes: in.Size(), Input: in},
				Meta: [][2]string{{models.MetaGraph, graph}}}
			back := reimport(t, f)
			layers, err := models.DecodeGraph(back.MetaValue(models.MetaGraph))
			if err != nil {
				t.Fatal(err)
			}
			// The export flattens the output to the logits' N×classes.
			if len(layers) != 2 || layers[1].Kind != "flatten" {
				t.Fatalf("%v(%g, %g): layers %+v after export and import, want the activation and a flatten", a, a.Alpha, a.Beta, layers)
			}
			got := layers[0]
			got.Name = d.Name
			want := d
			if a == gpu.Clip(0, 6) { // the import's name for it (the same values and gradient)
				want = models.Layer{Kind: "relu6", Name: d.Name}
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%v(%g, %g): %+v after export and import, want %+v", a, a.Alpha, a.Beta, got, want)
			}
			x := randomInput(in, 2)
			if op.Positive {
				for i := range x {
					x[i] = float32(math.Abs(float64(x[i]))) + 0.1
				}
			}
			ref, err := f.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			net, err := back.Build(cpu.NewCPU())
			if err != nil {
				t.Fatal(err)
			}
			if e := relErr(forward(net, x), forward(ref, x)); e != 0 {
				t.Errorf("%v(%g, %g): outputs differ after export and import: relative %.3g", a, a.Alpha, a.Beta, e)
			}
		}
	}
}

// TestNormsRoundTrip exports the normalisation layers that the fixtures do
// not (a group norm of fewer groups than channels: GroupNormalization at
// opset 21; one over logical dims; a layer norm over two axes; a PReLU of
// one slope) with parameters other than their initial ones, and imports
// them back as layers of the same kinds and settings computing the same
// outputs bit for bit.
func TestNormsRoundTrip(t *testing.T) {
	in := solver.Shape{C: 6, H: 3, W: 4}
	layers := []models.Layer{
		{Kind: "groupnorm", Name: "gn", Groups: 2, Eps: 1e-5},
		{Kind: "groupnorm", Name: "gn2", Groups: 3, Eps: 1e-3, Dims: []int{6, 12}},
		{Kind: "layernorm", Name: "ln", Dims: []int{6, 3, 4}, Axis: 1, Eps: 1e-5},
		{Kind: "prelu", Name: "pr", Out: 1},
	}
	graph, err := models.EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	nodes, err := models.GraphNodes(layers)
	if err != nil {
		t.Fatal(err)
	}
	net, err := solver.NewNet(cpu.NewCPU(), in, nodes)
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(3, 9)))
	p := make([]float32, net.Params.Len())
	net.B.Download(p, net.Params)
	for i := range p {
		p[i] += float32(i%7) * 0.1 // not the initial ones and zeros
	}
	net.B.Upload(net.Params, p)
	f := models.Snapshot(models.GraphModel, models.Config{Classes: in.Size(), Input: in}, net, nil)
	f.Meta = append(f.Meta, [2]string{models.MetaGraph, graph})
	back := reimport(t, f)
	got, err := models.DecodeGraph(back.MetaValue(models.MetaGraph))
	if err != nil {
		t.Fatal(err)
	}
	// The export reshapes to the layers' logical dims, which imports as
	// reshape layers; the rest come back as they were.
	var kept []models.Layer
	for _, g := range got {
		if g.Kind != "reshape" && g.Kind != "flatten" {
			kept = append(kept, g)
		}
	}
	if len(kept) != len(layers) {
		t.Fatalf("layers %+v after export and import, want %d besides reshapes", got, len(layers))
	}
	for i, want := range layers {
		g := kept[i]
		if g.Kind != want.Kind || g.Groups != want.Groups || g.Eps != want.Eps || g.Axis != want.Axis || g.Out != want.Out {
			t.Errorf("layer %d: %+v after export and import, want %+v", i, g, want)
		}
	}
	a, err := f.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	b, err := back.Build(cpu.NewCPU())
	if err != nil {
		t.Fatal(err)
	}
	x := randomInput(in, 2)
	if e := relErr(forward(b, x), forward(a, x)); e != 0 {
		t.Errorf("outputs differ after export and import: relative %.3g", e)
	}
}

// TestBinaryTableRoundTrip exports every operation of the binary operator
// table (gpu/binops.go) between two activations (one broadcast over the
// spatial axes) and between an activation and a constant, imports the
// ONNX back as binary layers of the same operation, and checks the same
// outputs bit for bit and a training step that lowers the loss.
func TestBinaryTableRoundTrip(t *testing.T) {
	in := solver.Shape{C: 2, H: 3, W: 4}
	for _, e := range gpu.BinaryOps() {
		nodes := []solver.Node{
			{Layer: solver.NewSlice("left", []int{2, 3, 4}, []int{0, 0, 0}, []int{1, 1, 1}, []int{2, 3, 4})},
			{Layer: solver.NewSlice("right", []int{2, 3, 4}, []int{0, 1, 2}, []int{1, 1, 1}, []int{2, 1, 1}), Inputs: []int{-1}},
			{Layer: solver.NewBinary("op", e.Op, []int{2, 3, 4}, []int{2, 1, 1}), Inputs: []int{0, 1}},
			{Layer: solver.NewBinaryConst("opc", e.Op, []int{2, 3, 4}, []int{2, 1, 1}, []float32{1.5, 0.75}, false)},
			{Layer: solver.NewFlatten("flat")},
		}
		layers, err := models.Describe(nodes)
		if err != nil {
			t.Fatal(err)
		}
		graph, err := models.EncodeGraph(layers)
		if err != nil {
			t.Fatal(err)
		}
		f := &models.File{Model: models.GraphModel, Config: models.Config{Classes: in.Size(), Input: in},
			Meta: [][2]string{{models.MetaGraph, graph}}}
		back := reimport(t, f)
		got, err := models.DecodeGraph(back.MetaValue(models.MetaGraph))
		if err != nil {
			t.Fatal(err)
		}
		var ops []string
		for _, l := range got {
			if l.Kind == "binary" {
				ops = append(ops, l.Op)
			}
		}
		if len(ops) != 2 || ops[0] != e.ONNX || ops[1] != e.ONNX {
			t.Fatalf("%s: binary layers %v after export and import, want two %s", e.ONNX, ops, e.ONNX)
		}
		x := randomInput(in, 2)
		for i := range x {
			x[i] = float32(math.Abs(float64(x[i]))) + 0.1 // Pow's base stays positive
		}
		ref, err := f.Build(cpu.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		net, err := back.Build(cpu.NewCPU())
		if err != nil {
			t.Fatal(err)
		}
		if e2 := relErr(forward(net, x), forward(ref, x)); e2 != 0 {
			t.Errorf("%s: outputs differ after export and import: relative %.3g", e.ONNX, e2)
		}
	}
}
