package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"math"

	"github.com/cotrain/cotrain/solver"
	"github.com/cotrain/cotrain/sync/state"
	"github.com/cotrain/cotrain/sync/wire"
)

// memo shares the real work of runs that train identically: the solo runs
// of different phones use the same batch, data order and initial weights,
// so iteration by iteration they hold the same weights and compute the same
// gradient; only their time differs. A gradient is a pure function of the
// weights and the batch (for a model without dropout: no random draw), so
// it is looked up by the SHA-256 of both, exactly, and an evaluation by the
// hash of the weights. A hit replaces a forward and backward pass by a copy;
// what the cores see is bit-identical either way. The runs of a group step
// in lockstep (runGroup), so the memo only keeps the last two iterations.
type memo struct {
	grads map[memoKey]memoGrad
	evals map[wire.Hash][2]float64 // accuracy and loss
	hits  int
}

type memoKey struct {
	iter    uint64
	weights wire.Hash
	batch   wire.Hash
}

type memoGrad struct {
	grad  []float32
	state []float32 // batch-norm statistics after the forward pass
	loss  float64
}

func newMemo() *memo {
	return &memo{grads: map[memoKey]memoGrad{}, evals: map[wire.Hash][2]float64{}}
}

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

// batchHash hashes a batch's inputs and labels.
func batchHash(x []float32, labels []int32) wire.Hash {
	h := sha256.New()
	var b [4]byte
	for _, l := range labels {
		binary.LittleEndian.PutUint32(b[:], uint32(l))
		h.Write(b[:])
	}
	buf := make([]byte, 0, 4*len(x))
	for _, v := range x {
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	h.Write(buf)
	var out wire.Hash
	h.Sum(out[:0])
	return out
}

// gradient runs tr.Gradient on the batch, or copies the gradient a run of
// the group computed for the same weights and batch.
func (m *memo) gradient(tr *solver.Trainer, iter uint64, x []float32, labels []int32) float64 {
	if m == nil {
		return tr.Gradient(x, labels)
	}
	k := memoKey{iter: iter, weights: state.NetHash(tr.Net), batch: batchHash(x, labels)}
	if g, ok := m.grads[k]; ok {
		m.hits++
		tr.Net.B.Upload(tr.Net.Grads, g.grad)
		tr.Net.B.Upload(tr.Net.State, g.state)
		return g.loss
	}
	loss := tr.Gradient(x, labels)
	g := make([]float32, tr.Net.Grads.Len())
	tr.Net.B.Download(g, tr.Net.Grads)
	// The forward pass also moved the batch-norm statistics, which the
	// push carries: a hit must leave them as the computation would have.
	st := make([]float32, tr.Net.State.Len())
	tr.Net.B.Download(st, tr.Net.State)
	m.grads[k] = memoGrad{grad: g, state: st, loss: loss}
	return loss
}

// evaluate returns the accuracy and the loss of tr's network on test,
// once per weights.
func (m *memo) evaluate(tr *solver.Trainer, test solver.Samples) (acc, loss float64) {
	if m == nil {
		return tr.Evaluate(test, 250)
	}
	h := state.NetHash(tr.Net)
	if e, ok := m.evals[h]; ok {
		return e[0], e[1]
	}
	acc, loss = tr.Evaluate(test, 250)
	m.evals[h] = [2]float64{acc, loss}
	return acc, loss
}

// evict forgets the gradients of iterations before k.
func (m *memo) evict(k uint64) {
	for key := range m.grads {
		if key.iter < k {
			delete(m.grads, key)
		}
	}
}
