package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// SoftmaxCrossEntropy is the classification loss: the mean over the batch of
// -log softmax(logits)[label], as PyTorch's nn.CrossEntropyLoss.
type SoftmaxCrossEntropy struct {
	Classes int
	probs   gpu.Buffer
	dlogits gpu.Buffer
	capN, n int
	pv, dv  gpu.Buffer // views for the current batch size
	labels  []int32
}

// NewSoftmaxCrossEntropy returns the loss for the given number of classes.
func NewSoftmaxCrossEntropy(classes int) *SoftmaxCrossEntropy {
	return &SoftmaxCrossEntropy{Classes: classes}
}

func (l *SoftmaxCrossEntropy) reserve(b gpu.Backend, n int) {
	if n > l.capN {
		l.capN = n
		l.probs, l.dlogits = b.Alloc(n*l.Classes), b.Alloc(n*l.Classes)
		l.n = 0
	}
	if n != l.n {
		l.n = n
		l.pv, l.dv = b.View(l.probs, 0, n*l.Classes), b.View(l.dlogits, 0, n*l.Classes)
	}
}

// Forward returns the mean loss of logits (n×Classes) against labels and
// keeps the probabilities for Backward and Probs.
func (l *SoftmaxCrossEntropy) Forward(b gpu.Backend, logits gpu.Buffer, labels []int32) float64 {
	n := len(labels)
	if logits.Len() != n*l.Classes {
		panic(fmt.Sprintf("solver: loss: %d logits for %d labels of %d classes", logits.Len(), n, l.Classes))
	}
	l.reserve(b, n)
	l.labels = labels
	return b.SoftmaxCrossEntropy(l.pv, logits, labels, n, l.Classes) / float64(n)
}

// Backward returns the gradient of the mean loss with respect to the logits
// of the last Forward.
func (l *SoftmaxCrossEntropy) Backward(b gpu.Backend) gpu.Buffer {
	n := len(l.labels)
	b.SoftmaxCrossEntropyBackward(l.dv, l.pv, l.labels, n, l.Classes, 1/float32(n))
	return l.dv
}

// Probs returns the softmax probabilities of the last Forward.
func (l *SoftmaxCrossEntropy) Probs() gpu.Buffer { return l.pv }
