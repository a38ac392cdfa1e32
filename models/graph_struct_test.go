package models

import (
	"math"
	"reflect"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// TestGraphStructuralRoundTrip: every structural layer survives Describe,
// EncodeGraph, DecodeGraph and GraphNodes with its configuration, and the
// rebuilt network computes the same outputs.
func TestGraphStructuralRoundTrip(t *testing.T) {
	in := solver.Shape{C: 4, H: 3, W: 2}
	nodes := []solver.Node{
		{Layer: solver.NewReshape("view", []int{2, 2, 3, 2})},
		{Layer: solver.NewTranspose("shuffle", []int{2, 2, 3, 2}, []int{1, 0, 2, 3})},
		{Layer: solver.NewReshape("unview", []int{4, 3, 2})},
		{Layer: solver.NewSlice("half", []int{4, 3, 2}, []int{0, 0, 0}, []int{1, 1, 1}, []int{2, 3, 2})},
		{Layer: solver.NewSlice("other", []int{4, 3, 2}, []int{2, 0, 0}, []int{1, 2, 1}, []int{2, 2, 2}), Inputs: []int{2}},
		{Layer: solver.NewPad("pad", []int{2, 2, 2}, []int{0, 1, 0}, []int{0, 0, 0})},
		{Layer: solver.NewConcatND("join", 0, []int{2, 3, 2}), Inputs: []int{3, 5}},
		{Layer: solver.NewReduce("mean", []int{4, 3, 2}, []int{1, 2}, true)},
		{Layer: solver.NewBinary("gate", gpu.BinMul, []int{4, 3, 2}, []int{4, 1, 1}), Inputs: []int{6, 7}},
		{Layer: solver.NewBinaryConst("scale", gpu.BinDiv, []int{4, 3, 2}, []int{4, 1, 1}, []float32{1, 2, 3, 0.1}, true)},
		{Layer: solver.NewResample("up", []int{4, 3, 2}, []int{4, 7, 5}, gpu.ResampleLinear, gpu.CoordAlignCorners, "", nil)},
		{Layer: solver.NewResample("down", []int{4, 7, 5}, []int{4, 3, 2}, gpu.ResampleNearest, gpu.CoordAsymmetric, gpu.NearestFloor, []float32{0.5, 0.5})},
		{Layer: &solver.Resample{Base: solver.Base{LayerName: "cubic"}, In: []int{4, 3, 2}, Out: []int{4, 5, 3}, Mode: gpu.ResampleCubic,
			Coord: gpu.CoordHalfPixel, CubicA: -0.5, Exclude: true}},
		{Layer: solver.NewFlatten("flat")},
	}
	layers, err := Describe(nodes)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := EncodeGraph(layers)
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeGraph(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, layers) {
		t.Fatalf("decoded %+v\nwant %+v", back, layers)
	}
	rebuilt, err := GraphNodes(back)
	if err != nil {
		t.Fatal(err)
	}
	outs := make([][]float32, 2)
	for i, nd := range [][]solver.Node{nodes, rebuilt} {
		net, err := solver.NewNet(cpu.NewCPU(), in, nd)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = forward(net, 2)
	}
	// Bit for bit (the chain's divisions make infinities, which the cubic
	// resample turns into NaNs: equal bits, unequal values).
	if !slices.EqualFunc(outs[0], outs[1], func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
		t.Fatalf("rebuilt network computes %v, original %v", outs[1], outs[0])
	}
	again, err := Describe(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, layers) {
		t.Fatalf("described again %+v\nwant %+v", again, layers)
	}
	bad := append([]Layer(nil), layers...)
	bad[8].Op = "Mod" // not in the binary operator table
	if _, err := GraphNodes(bad); err == nil {
		t.Fatal("binary operation Mod accepted")
	}
}

// FuzzGraphStructural: a graph description of structural layers, however
// mangled, builds a network or gives an error; a network it builds runs a
// training step without panicking (a graph comes from files and peers).
func FuzzGraphStructural(f *testing.F) {
	nodes := []solver.Node{
		{Layer: solver.NewReshape("view", []int{2, 2, 3, 2})},
		{Layer: solver.NewTranspose("shuffle", []int{2, 2, 3, 2}, []int{1, 0, 2, 3})},
		{Layer: solver.NewSlice("half", []int{4, 3, 2}, []int{0, 0, 0}, []int{1, 1, 1}, []int{2, 3, 2})},
		{Layer: solver.NewPadMode("pad", []int{2, 3, 2}, []int{0, 1, 1}, []int{1, 0, 0}, "reflect")},
		{Layer: solver.NewConcatND("join", 0, []int{3, 4, 3}), Inputs: []int{3, 1}},
		{Layer: solver.NewReduce("mean", []int{5, 4, 3}, []int{1, 2}, true)},
		{Layer: solver.NewBinary("gate", gpu.BinMul, []int{5, 4, 3}, []int{5, 1, 1}), Inputs: []int{4, 5}},
		{Layer: solver.NewBinaryConst("scale", gpu.BinDiv, []int{5, 4, 3}, []int{1, 1, 1}, []float32{2}, true)},
	}
	if _, err := solver.NewNet(cpu.NewCPU(), solver.Shape{C: 4, H: 3, W: 2}, nodes); err != nil {
		f.Fatalf("the seed network: %v", err)
	}
	layers, err := Describe(nodes)
	if err != nil {
		f.Fatal(err)
	}
	raw, err := EncodeGraph(layers)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add(`[{"kind":"pad","name":"p","dims":[24],"before":[3],"after":[30],"mode":"edge"}]`)
	f.Add(`[{"kind":"slice","name":"s","dims":[4,3,2],"starts":[3,0,0],"steps":[2,1,1],"counts":[1,3,2]}]`)
	f.Add(`[{"kind":"resample","name":"r","dims":[4,3,2],"to":[4,6,4],"mode":"linear","coord":"half_pixel","scales":[2,2]},{"kind":"resample","name":"n","dims":[4,6,4],"to":[4,2,3],"mode":"nearest","coord":"asymmetric","nearest":"floor"},{"kind":"resample","name":"c","dims":[4,2,3],"to":[4,5,5],"mode":"cubic","coord":"align_corners","cubic_a":-0.75,"exclude":true}]`)
	// Structural layers among the others: convolution, activations,
	// pooling, a linear head and softmax.
	f.Add(`[{"kind":"conv2d","name":"c","out":4,"kh":1,"kw":1,"sh":1,"sw":1},{"kind":"reduce","name":"m","dims":[4,3,2],"axes":[1,2],"mean":true},{"kind":"sigmoid","name":"g"},{"kind":"binary","name":"x","op":"Mul","dims":[4,3,2],"dims2":[4,1,1],"in":[0,2]},{"kind":"concatnd","name":"cat","axis":0,"dims":[4,3,2],"in":[3,0]},{"kind":"globalavgpool","name":"gap"},{"kind":"flatten","name":"f"},{"kind":"linear","name":"l","out":3},{"kind":"softmax","name":"sm","dims":[3],"axes":[0]}]`)
	f.Add(`[{"kind":"binary","name":"b","op":"Add","dims":[4,3,2],"dims2":[1,1,2],"const":[1,2],"first":true},{"kind":"clip","name":"c","min":0},{"kind":"hardsigmoid","name":"h","alpha":0.2,"beta":0.5},{"kind":"flatten","name":"f"},{"kind":"linear","name":"l","out":2}]`)
	// Dilated windows: pools (ceil mode, padding) and a transposed
	// convolution with output padding.
	f.Add(`[{"kind":"maxpool2d","name":"m","kh":2,"kw":1,"sh":1,"sw":1,"ph":1,"dh":2,"ceil":true},{"kind":"avgpool2d","name":"a","kh":2,"kw":2,"sh":1,"sw":1,"ph":1,"pw":1,"dh":2,"dw":1,"incl":true,"ceil":true},{"kind":"convtranspose2d","name":"t","out":2,"kh":2,"kw":2,"sh":2,"sw":2,"groups":1,"dh":2,"dw":3,"oph":1,"opw":1}]`)
	// A transformer's and a ConvNeXt's: a linear layer over the last axis,
	// a class token, a position embedding, a layer scale.
	f.Add(`[{"kind":"reshape","name":"tok","to":[6,4]},{"kind":"linear","name":"qkv","out":5,"dims":[6,4]},{"kind":"prepend","name":"cls","dims":[6,5],"axis":0,"size":1},{"kind":"addparam","name":"pos","dims":[7,5]},{"kind":"reshape","name":"map","to":[5,7,1]},{"kind":"scaleparam","name":"g","dims":[5,7,1],"dims2":[5,1,1]}]`)
	f.Fuzz(func(t *testing.T, raw string) {
		layers, err := DecodeGraph(raw)
		if err != nil || len(layers) > 16 {
			return
		}
		nodes, err := GraphNodes(layers)
		if err != nil {
			return
		}
		b := cpu.NewCPU()
		net, err := solver.NewNet(b, solver.Shape{C: 4, H: 3, W: 2}, nodes)
		if err != nil || net.Out.Size() > 1<<16 || net.NumParams() > 1<<20 {
			return // an error, or a network too large to step quickly
		}
		x := b.Alloc(2 * net.In.Size())
		b.Fill(x, 0.5)
		out := net.Forward(x, 2, true)
		dy := b.Alloc(out.Len())
		b.Fill(dy, 0.1)
		net.Backward(dy)
	})
}
