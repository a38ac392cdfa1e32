package solver

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
)

// frozenNet is conv → batch norm → ReLU → max pool → linear → batch norm
// → dropout → linear: with FreezeAllButLast(1) everything below "head" is
// the frozen prefix, a batch norm and a dropout among it.
func frozenNet(t *testing.T, b gpu.Backend, drop float32) *Net {
	t.Helper()
	net, err := NewNet(b, Shape{C: 2, H: 6, W: 6}, []Node{
		{Layer: NewConv2D("conv", ConvConfig{Out: 4, KH: 3, KW: 3, StrideH: 1, StrideW: 1, PadH: 1, PadW: 1})},
		{Layer: NewBatchNorm("bn", 0, 0)},
		{Layer: NewReLU("relu")},
		{Layer: NewMaxPool2D("pool", PoolConfig{KH: 2, KW: 2, StrideH: 2, StrideW: 2})},
		{Layer: NewFlatten("flat")},
		{Layer: NewLinear("fc", 6)},
		{Layer: NewBatchNorm("bn1d", 0, 0)},
		{Layer: NewDropout("drop", drop)},
		{Layer: NewLinear("head", 3)},
	})
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(7, 8)))
	// Running statistics away from their defaults, so that normalising with
	// them and with the batch's differ.
	st := make([]float32, net.State.Len())
	for i := range st {
		st[i] = 0.5 + 0.1*float32(i%7)
	}
	b.Upload(net.State, st)
	net.FreezeAllButLast(1)
	return net
}

// TestFrozenPrefixRunsAsInference: with the last layer alone learning, a
// training step leaves the frozen batch norms' running statistics alone and
// the head sees what an inference Forward computes, bit for bit; dropout in
// the prefix stays on. With SetFrozenInference(false) the prefix runs in
// training mode (batch statistics, running statistics updated): the check
// that the test can tell the two apart.
func TestFrozenPrefixRunsAsInference(t *testing.T) {
	b := cpu.NewCPU()
	const batch = 5
	r := rand.New(rand.NewPCG(1, 1))
	hx := make([]float32, batch*2*6*6)
	for i := range hx {
		hx[i] = float32(r.NormFloat64())
	}
	x := b.Alloc(len(hx))
	b.Upload(x, hx)
	labels := []int32{0, 1, 2, 0, 1}

	for _, asInference := range []bool{true, false} {
		net := frozenNet(t, b, 0)
		net.SetFrozenInference(asInference)
		state0 := download(b, net.State)
		want := slices.Clone(download(b, net.Forward(x, batch, false)))
		got := download(b, net.Forward(x, batch, true))
		same := true
		for i := range want {
			same = same && math.Float32bits(got[i]) == math.Float32bits(want[i])
		}
		tr := NewTrainer(net, NewSGD(b, net.NumParams(), 0.9, 0, false), Constant(0.1))
		if _, err := tr.Step(hx, labels); err != nil {
			t.Fatal(err)
		}
		moved := !slices.Equal(state0, download(b, net.State))
		if asInference && (!same || moved) {
			t.Errorf("frozen prefix as inference: training output equals inference output %v (want true), running statistics moved %v (want false)", same, moved)
		}
		if !asInference && (same || !moved) {
			t.Errorf("frozen prefix in training mode: training output equals inference output %v (want false), running statistics moved %v (want true)", same, moved)
		}
	}

	// Dropout in the prefix still drops: the training output differs from
	// the inference output.
	net := frozenNet(t, b, 0.5)
	want := slices.Clone(download(b, net.Forward(x, batch, false)))
	if got := download(b, net.Forward(x, batch, true)); slices.Equal(got, want) {
		t.Error("dropout in the frozen prefix: training output equals inference output; want dropout on")
	}
}

// TestFrozenInferenceTrainedLayers: layers that Backward runs stay in
// training mode even when frozen. Freezing the middle batch norm alone
// leaves every node below a trainable one, so none runs as inference: the
// running statistics of both batch norms move.
func TestFrozenInferenceTrainedLayers(t *testing.T) {
	b := cpu.NewCPU()
	net := frozenNet(t, b, 0)
	net.Unfreeze()
	if err := net.Freeze("bn1d"); err != nil {
		t.Fatal(err)
	}
	for _, nd := range net.nodes {
		if nd.infer {
			t.Errorf("%s runs as inference with a trainable layer below it", nd.layer.Name())
		}
	}
	net.FreezeAllButLast(1)
	for _, nd := range net.nodes {
		if want := nd.layer.Name() != "head" && nd.layer.Name() != "drop"; nd.infer != want {
			t.Errorf("train-last 1: %s infer %v, want %v", nd.layer.Name(), nd.infer, want)
		}
	}
}
