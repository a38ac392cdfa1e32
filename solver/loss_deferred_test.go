package solver

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// deferringCPU is the CPU backend as a gpu.LossDeferrer that records the
// order of the loss's start, the backward's use of it and the read.
type deferringCPU struct {
	gpu.Backend
	sum   float64
	calls []string
}

func (d *deferringCPU) StartSoftmaxCrossEntropy(probs, logits gpu.Buffer, labels []int32, n, classes int) {
	d.calls = append(d.calls, "start")
	d.sum = d.Backend.SoftmaxCrossEntropy(probs, logits, labels, n, classes)
}

func (d *deferringCPU) ReadSoftmaxCrossEntropy() float64 {
	d.calls = append(d.calls, "read")
	return d.sum
}

func (d *deferringCPU) SoftmaxCrossEntropyBackward(dlogits, probs gpu.Buffer, labels []int32, n, classes int, scale float32) {
	d.calls = append(d.calls, "backward")
	d.Backend.SoftmaxCrossEntropyBackward(dlogits, probs, labels, n, classes, scale)
}

// TestTrainerReadsLossAfterBackward checks that Trainer.Gradient, on a
// backend that can leave the loss on the device, enqueues the backward pass
// before it reads the loss, and returns the loss a backend computing at once
// returns.
func TestTrainerReadsLossAfterBackward(t *testing.T) {
	nodes := []Node{{Layer: NewLinear("fc", 6)}, {Layer: NewActivation("relu", gpu.ReLU)}, {Layer: NewLinear("head", 3)}}
	var losses [2]float64
	for i, deferring := range []bool{false, true} {
		var b gpu.Backend = gpu.NewCPU()
		d := &deferringCPU{Backend: b}
		if deferring {
			b = d
		}
		n, err := NewNet(b, Shape{4, 1, 1}, nodes)
		if err != nil {
			t.Fatal(err)
		}
		n.InitParams(rand.New(rand.NewPCG(1, 2)))
		tr := NewTrainer(n, nil, nil)
		x := []float32{0.5, -1, 2, 0.25, 1, 1, -0.5, 0}
		losses[i] = tr.Gradient(x, []int32{2, 0})
		if deferring {
			if want := []string{"start", "backward", "read"}; len(d.calls) != 3 || d.calls[0] != want[0] || d.calls[1] != want[1] || d.calls[2] != want[2] {
				t.Errorf("calls %v, want %v", d.calls, want)
			}
		}
		nodes = []Node{{Layer: NewLinear("fc", 6)}, {Layer: NewActivation("relu", gpu.ReLU)}, {Layer: NewLinear("head", 3)}}
	}
	if math.Float64bits(losses[0]) != math.Float64bits(losses[1]) || math.IsNaN(losses[1]) {
		t.Errorf("loss %v read later, %v at once", losses[1], losses[0])
	}
}
