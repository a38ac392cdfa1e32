package models

import (
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/solver"
)

// actNodes is a network of every entry of gpu's operator table (with each
// parameter set the table tests), a few more parameters a description must
// carry, and softmax layers over several axis ranges.
func actNodes() []solver.Node {
	inf := float32(math.Inf(1))
	ls := []solver.Layer{solver.NewConv2D("conv", solver.ConvConfig{Out: 6, KH: 3, PadH: 1, PadW: 1})}
	acts := []gpu.Act{gpu.HardSigmoid(0.2, -0.1), gpu.Clip(-inf, inf), gpu.Clip(0, 0)}
	for _, op := range gpu.UnaryOps() {
		acts = append(acts, op.TestActs()...)
	}
	for i, a := range acts {
		ls = append(ls, solver.NewActivation(a.String()+string(rune('a'+i)), a))
	}
	ls = append(ls, solver.NewSoftmax("sm_c", nil, 0, 0), solver.NewSoftmax("sm_hw", nil, 1, 2),
		solver.NewSoftmax("sm_groups", []int{2, 3, 4, 4}, 1, 1), solver.NewLinear("fc", 5), solver.NewSoftmax("sm_out", nil, 0, 0))
	nodes := make([]solver.Node, len(ls))
	for i, l := range ls {
		nodes[i] = solver.Node{Layer: l}
	}
	return nodes
}

// TestGraphActivationsRoundTrip describes the activation and softmax layers,
// encodes, decodes and rebuilds them: the description is the same, every
// layer keeps its parameters, and the rebuilt network computes the same
// outputs bit for bit.
func TestGraphActivationsRoundTrip(t *testing.T) {
	nodes := actNodes()
	desc, err := Describe(nodes)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := EncodeGraph(desc)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"hardsigmoid","name":"hardsigmoida","alpha":0.2,"beta":-0.1`, `"min":-1,"max":2`,
		`"kind":"clip","name":"clipb"}`, `"axes":[1,2]`, `"dims":[2,3,4,4],"axes":[1]`} {
		if !strings.Contains(raw, want) {
			t.Errorf("description lacks %s:\n%s", want, raw)
		}
	}
	back, err := DecodeGraph(raw)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := GraphNodes(back)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Describe(rebuilt)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, desc) {
		t.Errorf("description after a round trip:\n%v\nwant\n%v", again, desc)
	}
	for i := range nodes {
		a, ok := nodes[i].Layer.(*solver.Activation)
		if !ok {
			continue
		}
		if b := rebuilt[i].Layer.(*solver.Activation); b.Act != a.Act {
			t.Errorf("layer %s: %+v after the round trip, want %+v", a.Name(), b.Act, a.Act)
		}
	}
	run := func(nodes []solver.Node) []float32 {
		net, err := solver.NewNet(cpu.NewCPU(), solver.Shape{C: 2, H: 4, W: 4}, nodes)
		if err != nil {
			t.Fatal(err)
		}
		net.InitParams(rand.New(rand.NewPCG(5, 6)))
		return forward(net, 3)
	}
	if a, b := run(actNodes()), run(rebuilt); !slices.EqualFunc(a, b, func(x, y float32) bool { return math.Float32bits(x) == math.Float32bits(y) }) {
		t.Errorf("outputs differ after the round trip: %v vs %v", a, b)
	}
}

// TestGraphActivationErrors checks that bad activation or softmax
// descriptions are refused with the problem named.
func TestGraphActivationErrors(t *testing.T) {
	lo, hi := float32(2), float32(1)
	for _, tc := range []struct {
		layer Layer
		want  string
	}{
		{Layer{Kind: "softmax", Name: "s"}, "softmax without axes"},
		{Layer{Kind: "softmax", Name: "s", Axes: []int{0, 2}}, "not contiguous"},
		{Layer{Kind: "softmax", Name: "s", Axes: []int{3}}, "axes 3..3"},
		{Layer{Kind: "clip", Name: "c", Min: &lo, Max: &hi}, "clip bounds [2, 1]"},
		{Layer{Kind: "leakyrelu", Name: "l", Alpha: float32(math.Inf(1))}, "leakyrelu alpha"},
	} {
		nodes, err := GraphNodes([]Layer{tc.layer})
		if err == nil {
			_, err = solver.NewNet(cpu.NewCPU(), solver.Shape{C: 3, H: 2, W: 2}, nodes)
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.layer, err, tc.want)
		}
	}
}
