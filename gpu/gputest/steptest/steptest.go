// Package steptest builds the training steps that the backends' step
// benchmarks and end-to-end tests time and compare: a model with fixed
// weights, an SGD-momentum trainer, and a batch resident on the device.
package steptest

import (
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/solver"
)

// Trainer builds model on be with fixed weights, an SGD-momentum
// trainer, and a random batch of batch samples whose labels cycle over the
// classes: the training step the step benchmarks time.
func Trainer(t testing.TB, be gpu.Backend, model string, cfg models.Config, batch int) (*solver.Trainer, []float32, []int32) {
	net, err := models.Build(be, model, cfg)
	if err != nil {
		t.Fatal(err)
	}
	net.InitParams(rand.New(rand.NewPCG(1, 2)))
	tr := solver.NewTrainer(net, solver.NewSGD(be, net.NumParams(), 0.9, 0, false), solver.Constant(0.01))
	r := rand.New(rand.NewPCG(5, 6))
	x := make([]float32, batch*net.In.Size())
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	labels := make([]int32, batch)
	for i := range labels {
		labels[i] = int32(i % net.Out.Size())
	}
	return tr, x, labels
}

// Resident uploads x once and returns a training step on it (forward,
// loss, backward, optimizer) that uploads nothing: the batch resident on
// the device, as PyTorch's benchmark keeps it.
func Resident(be gpu.Backend, tr *solver.Trainer, x []float32, labels []int32) func() {
	xb := be.Alloc(len(x))
	be.Upload(xb, x)
	return func() {
		logits := tr.Net.Forward(xb, len(labels), true)
		gpu.MarkSection(be, "loss")
		tr.Loss.Forward(be, logits, labels)
		tr.Net.Backward(tr.Loss.Backward(be))
		tr.Apply()
	}
}
