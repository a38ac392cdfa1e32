package sim

import (
	"bytes"
	"slices"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/solver"
)

// memo shares the real work of runs that train identically: the solo runs
// of different phones use the same batch, data order and initial weights,
// so iteration by iteration they hold the same weights and compute the same
// gradient; only their time differs. A gradient is a pure function of the
// weights, the batch-norm state and the batch (for a model without
// dropout: no random draw), so an entry keeps copies of them and is used
// only when they are equal, bit for bit, to the asker's; an evaluation
// likewise by the weights and state. Comparing
// memory costs a fraction of hashing it. A hit replaces a forward and
// backward pass by a copy; what the cores see is bit-identical either way.
// The runs of a group step in lockstep (runGroup), so the memo only keeps
// the last two iterations' gradients and the last two evaluations.
type memo struct {
	grads []memoGrad
	evals []memoEval
	hits  int
}

// memoGrad is a gradient, with the weights and batch it was computed on.
type memoGrad struct {
	iter    uint64
	weights []float32
	x       []float32
	labels  []int32
	grad    []float32
	state   []float32 // batch-norm statistics after the forward pass
	loss    float64
}

// memoEval is an evaluation, with the weights it was made on.
type memoEval struct {
	weights   []float32
	acc, loss float64
}

func newMemo() *memo { return &memo{} }

// memoizable reports whether net's gradient depends only on its weights
// and its batch.
func memoizable(net *solver.Net) bool {
	for _, l := range net.Layers() {
		if l.Kind == "dropout" {
			return false
		}
	}
	return true
}

// weightsOf returns net's weights followed by its state (the batch-norm
// statistics, which a forward pass reads too): a copy.
func weightsOf(net *solver.Net) []float32 {
	w := make([]float32, net.Params.Len()+net.State.Len())
	if h, ok := net.Params.(gpu.Host); ok {
		copy(w, h)
	} else {
		net.B.Download(w[:net.Params.Len()], net.Params)
	}
	if net.State.Len() > 0 {
		net.B.Download(w[net.Params.Len():], net.State)
	}
	return w
}

// gradient runs tr.Gradient on the batch, or copies the gradient a run of
// the group computed for the same weights and batch.
func (m *memo) gradient(tr *solver.Trainer, iter uint64, x []float32, labels []int32) float64 {
	if m == nil {
		return tr.Gradient(x, labels)
	}
	w := weightsOf(tr.Net)
	for _, g := range m.grads {
		if g.iter == iter && slices.Equal(g.labels, labels) &&
			bytes.Equal(floatBytes(g.x), floatBytes(x)) && bytes.Equal(floatBytes(g.weights), floatBytes(w)) {
			m.hits++
			tr.Net.B.Upload(tr.Net.Grads, g.grad)
			tr.Net.SetState(g.state)
			return g.loss
		}
	}
	g := memoGrad{iter: iter, weights: w, x: slices.Clone(x), labels: slices.Clone(labels)}
	g.loss = tr.Gradient(x, labels)
	g.grad = make([]float32, tr.Net.Grads.Len())
	tr.Net.B.Download(g.grad, tr.Net.Grads)
	// The forward pass also moved the batch-norm statistics, which the
	// push carries: a hit must leave them as the computation would have.
	g.state = make([]float32, tr.Net.State.Len())
	tr.Net.B.Download(g.state, tr.Net.State)
	m.grads = append(m.grads, g)
	return g.loss
}

// evaluate returns the accuracy and the loss of tr's network on test,
// once per weights.
func (m *memo) evaluate(tr *solver.Trainer, test solver.Samples) (acc, loss float64) {
	if m == nil {
		return tr.Evaluate(test, 250)
	}
	w := weightsOf(tr.Net)
	for _, e := range m.evals {
		if bytes.Equal(floatBytes(e.weights), floatBytes(w)) {
			return e.acc, e.loss
		}
	}
	acc, loss = tr.Evaluate(test, 250)
	if len(m.evals) == 2 {
		m.evals = m.evals[1:]
	}
	m.evals = append(m.evals, memoEval{weights: w, acc: acc, loss: loss})
	return acc, loss
}

// evict forgets the gradients of iterations before k.
func (m *memo) evict(k uint64) {
	m.grads = slices.DeleteFunc(m.grads, func(g memoGrad) bool { return g.iter < k })
}
