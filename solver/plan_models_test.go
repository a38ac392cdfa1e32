package solver_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/cpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// residualNodes is a small ResNet-style network with batch norm: two
// residual adds, a concatenation, and activations read by up to three
// consumers.
func residualNodes() []solver.Node {
	conv := func(name string, out int) *solver.Conv2D {
		return solver.NewConv2D(name, solver.ConvConfig{Out: out, KH: 3, PadH: 1, PadW: 1})
	}
	return []solver.Node{
		{Layer: conv("stem", 8)},                                 // 0
		{Layer: solver.NewBatchNorm("bn0", 1e-5, 0.1)},           // 1
		{Layer: solver.NewReLU("r0")},                            // 2: read by 3, 7, 9, 11
		{Layer: conv("c1", 8)},                                   // 3
		{Layer: solver.NewBatchNorm("bn1", 1e-5, 0.1)},           // 4
		{Layer: solver.NewReLU("r1")},                            // 5: read by 6, 10
		{Layer: conv("c2", 8)},                                   // 6
		{Layer: solver.NewAdd("add1"), Inputs: []int{6, 2}},      // 7
		{Layer: solver.NewReLU("r2")},                            // 8
		{Layer: conv("side", 4), Inputs: []int{2}},               // 9
		{Layer: solver.NewConcat("cat"), Inputs: []int{8, 9, 5}}, // 10
		{Layer: solver.NewAdd("add2"), Inputs: []int{8, 2, 7}},   // 11
		{Layer: solver.NewConcat("cat2"), Inputs: []int{10, 11}}, // 12
		{Layer: solver.NewMaxPool2D("pool", solver.PoolConfig{KH: 2, StrideH: 2})},
		{Layer: solver.NewFlatten("flat")},
		{Layer: solver.NewLinear("fc", 10)},
	}
}

// frozenFingerprint builds a net with build on b, freezes all but its last
// `last` layers when last > 0, and returns its stepsFingerprint.
func frozenFingerprint(t *testing.T, build func(gpu.Backend) (*solver.Net, error), b gpu.Backend, last int) [][]float32 {
	t.Helper()
	n, err := build(b)
	if err != nil {
		t.Fatal(err)
	}
	if last > 0 {
		n.FreezeAllButLast(last)
	}
	return stepsFingerprint(t, n)
}

// sameFingerprint fails t at the first element where stepsFingerprint's
// results a and b (runs called as and bs in the message, which starts with
// where) differ in bits: gradients, weights, state or logits.
func sameFingerprint(t *testing.T, where string, a, b [][]float32, as, bs string) {
	t.Helper()
	for k, what := range []string{"gradients", "weights", "state", "logits"} {
		for i := range b[k] {
			if math.Float32bits(a[k][i]) != math.Float32bits(b[k][i]) {
				t.Fatalf("%s: %s[%d] = %v %s, %v %s", where, what, i, a[k][i], as, b[k][i], bs)
			}
		}
	}
}

// stepsFingerprint trains a net for three SGD-momentum steps at batch 6 (an
// evaluation at batch 8 after each), takes one more gradient at batch 4, and
// returns the gradient, weights, state and last logits.
func stepsFingerprint(t *testing.T, net *solver.Net) [][]float32 {
	t.Helper()
	b := net.B
	r := rand.New(rand.NewPCG(1, 2))
	net.InitParams(r)
	net.SetRand(rand.New(rand.NewPCG(1, 3)))
	tr := solver.NewTrainer(net, solver.NewSGD(b, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	size := net.In.Size()
	x := make([]float32, 8*size)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := make([]int32, 6)
	for i := range labels {
		labels[i] = int32(r.IntN(net.Out.Size()))
	}
	logits := make([]float32, 8*net.Out.Size())
	for s := 0; s < 3; s++ {
		if _, err := tr.Step(x[:6*size], labels); err != nil {
			t.Fatal(err)
		}
		b.Download(logits, tr.Logits(x, 8))
	}
	tr.Gradient(x[:4*size], labels[:4])
	out := [][]float32{make([]float32, net.Grads.Len()), make([]float32, net.Params.Len()), make([]float32, net.State.Len()), logits}
	b.Download(out[0], net.Grads)
	b.Download(out[1], net.Params)
	b.Download(out[2], net.State)
	return out
}

// Sharing buffers by liveness changes no bit of the gradients, weights,
// batch-norm statistics or logits of real networks, trainable or partly
// frozen, against one buffer per tensor (every output kept and every
// gradient in its own buffer: the layout before sharing), and it takes less
// memory.
func TestSharedBuffersMatchUnsharedOnModels(t *testing.T) {
	build := map[string]func(gpu.Backend) (*solver.Net, error){
		"lenet5": func(b gpu.Backend) (*solver.Net, error) { return models.Build(b, "lenet5", models.Config{}) },
		"mobilenet-small": func(b gpu.Backend) (*solver.Net, error) {
			return models.Build(b, "mobilenet-small", models.Config{})
		},
		"residual": func(b gpu.Backend) (*solver.Net, error) {
			return solver.NewNet(b, solver.Shape{C: 3, H: 8, W: 8}, residualNodes())
		},
	}
	for _, model := range []string{"lenet5", "mobilenet-small", "residual"} {
		for _, last := range []int{-1, 2} { // -1: all layers learn
			net := func(share bool) *solver.Net {
				n, err := build[model](cpu.NewCPU())
				if err != nil {
					t.Fatal(err)
				}
				n.SetSharing(share)
				if last >= 0 {
					n.FreezeAllButLast(last)
				}
				return n
			}
			shared, alone := net(true), net(false)
			got, want := stepsFingerprint(t, shared), stepsFingerprint(t, alone)
			sameFingerprint(t, fmt.Sprintf("%s, trainable %d", model, last), got, want, "shared", "unshared")
			us, ua := shared.Buffers(6), alone.Buffers(6)
			if us.Training >= ua.Training || us.Inference >= ua.Inference {
				t.Errorf("%s, trainable %d: shared buffers %+v, unshared %+v: nothing saved", model, last, us, ua)
			}
			t.Logf("%s, trainable %d: per batch of 6, training step %d elements (unshared %d, %d outputs kept), inference %d (unshared %d)",
				model, last, us.Training, ua.Training, us.Kept, us.Inference, ua.Inference)
		}
	}
}

// BenchmarkTrainStepSharing times a training step (forward, loss, backward,
// SGD with momentum) of mobilenet-small at batch 16 with the buffers shared
// by liveness and with one buffer per tensor, side by side: sharing must not
// cost time (it touches less memory).
func BenchmarkTrainStepSharing(b *testing.B) {
	for _, share := range []bool{true, false} {
		name := map[bool]string{true: "shared", false: "unshared"}[share]
		b.Run(name, func(b *testing.B) {
			be := cpu.NewCPU()
			net, err := models.Build(be, "mobilenet-small", models.Config{})
			if err != nil {
				b.Fatal(err)
			}
			net.SetSharing(share)
			r := rand.New(rand.NewPCG(1, 2))
			net.InitParams(r)
			tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
			const batch = 16
			x := make([]float32, batch*net.In.Size())
			for i := range x {
				x[i] = float32(r.NormFloat64())
			}
			labels := make([]int32, batch)
			for i := range labels {
				labels[i] = int32(r.IntN(net.Out.Size()))
			}
			for b.Loop() {
				if _, err := tr.Step(x, labels); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(net.Buffers(batch).Training)*4/(1<<20), "MiB-buffers")
		})
	}
}
