package models

import (
	"reflect"
	"testing"

	"github.com/cotrain/cotrain/gpu"
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
		net, err := solver.NewNet(gpu.NewCPU(), in, nd)
		if err != nil {
			t.Fatal(err)
		}
		outs[i] = forward(net, 2)
	}
	if !reflect.DeepEqual(outs[0], outs[1]) {
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
	bad[8].Op = "Pow"
	if _, err := GraphNodes(bad); err == nil {
		t.Fatal("binary operation Pow accepted")
	}
}
