package solver

import "fmt"

// This file is which of a Net's layers learn: freezing, and the
// trainable ranges the optimizers step.

// Freeze stops the named layers from learning; their weight gradients are
// then not computed at all.
func (n *Net) Freeze(names ...string) error {
	for _, name := range names {
		i := n.index(name)
		if i < 0 {
			return fmt.Errorf("%w: %q", ErrNoLayer, name)
		}
		n.nodes[i].frozen = true
	}
	n.updateActive()
	return nil
}

// FreezeAllButLast freezes every parameterised layer except the last k of them
// (k counts only layers with parameters). k <= 0 freezes all; k beyond their
// number freezes none.
func (n *Net) FreezeAllButLast(k int) {
	left := k
	for i := len(n.nodes) - 1; i >= 0; i-- {
		nd := &n.nodes[i]
		if nd.params.Len == 0 {
			continue
		}
		nd.frozen = left <= 0
		left--
	}
	n.updateActive()
}

// Unfreeze makes every layer trainable again.
func (n *Net) Unfreeze() {
	for i := range n.nodes {
		n.nodes[i].frozen = false
	}
	n.updateActive()
}

// Trainable lists the ranges of Params that learn (merged where adjacent).
func (n *Net) Trainable() []Range {
	return n.appendTrainable(nil)
}

// NumTrainable is the number of parameters that learn: the length of
// Trainable's ranges.
func (n *Net) NumTrainable() int {
	total := 0
	for _, r := range n.Trainable() {
		total += r.Len
	}
	return total
}

// appendTrainable appends the ranges of Trainable to rs, merged where
// adjacent, and returns the extended slice: into a caller's slice, so the
// trainer's steps allocate nothing.
func (n *Net) appendTrainable(rs []Range) []Range {
	start := len(rs)
	for _, nd := range n.nodes {
		if nd.frozen || nd.params.Len == 0 {
			continue
		}
		if k := len(rs) - 1; k >= start && rs[k].Off+rs[k].Len == nd.params.Off {
			rs[k].Len += nd.params.Len
			continue
		}
		rs = append(rs, nd.params)
	}
	return rs
}

func (n *Net) index(name string) int {
	for i, nd := range n.nodes {
		if nd.layer.Name() == name {
			return i
		}
	}
	return -1
}

// updateActive decides which nodes run Backward and which inputs need a
// gradient: only paths that lead down to a trainable parameter do.
func (n *Net) updateActive() {
	for i := range n.nodes {
		nd := &n.nodes[i]
		nd.active = !nd.frozen && nd.params.Len > 0
		nd.needDIn = make([]bool, len(nd.inputs))
		for k, j := range nd.inputs {
			if j >= 0 && n.nodes[j].active {
				nd.needDIn[k] = true
				nd.active = true
			}
		}
		if nd.frozen && nd.params.Len > 0 {
			n.B.Fill(n.B.View(n.Grads, nd.params.Off, nd.params.Len), 0)
		}
	}
	n.planTrain()
	n.trained = false // a Forward before the change kept what the old plan needed
}

// SetFrozenInference chooses how a training Forward runs the frozen prefix:
// the layers that Backward does not reach because no trainable parameter
// lies at or below them (below the first trained layer, with
// FreezeAllButLast). On (the default) they run as inference, as PyTorch
// runs a fine-tuned model whose frozen feature extractor is put in eval
// mode: batch norm normalises with its running statistics and leaves them
// alone, and no layer prepares anything for a Backward (max pooling keeps
// no positions, a convolution no column matrix); the liveness plan already
// keeps none of their outputs past their last reader. Dropout stays on: it
// regularises what the trained layers see, and is no statistic of the
// frozen ones. Off, the prefix runs in training mode: batch statistics,
// running statistics updated (PyTorch's model.train() with
// requires_grad=False on the frozen parameters). Layers that Backward runs
// are in training mode either way, frozen or not.
func (n *Net) SetFrozenInference(on bool) {
	if n.trainFrozen == !on {
		return
	}
	n.trainFrozen = !on
	n.planTrain()
	n.trained = false
}

// inferFrozen reports whether a training Forward runs nd as inference:
// Backward does not run it (planTrain has set runs), it is not dropout,
// and SetFrozenInference is on.
func (n *Net) inferFrozen(nd *node) bool {
	if n.trainFrozen || nd.runs {
		return false
	}
	_, drop := nd.layer.(*Dropout)
	return !drop
}

// trainScratcher is a layer that keeps scratch of a training Forward for
// its Backward (a convolution's column matrix, max pooling's window
// positions). A layer in the frozen prefix gets no Backward, so planTrain
// has it drop that scratch at once; should it learn again, its next
// Backward asks for the scratch again.
type trainScratcher interface {
	dropTrainScratch()
}

var (
	_ trainScratcher = (*Conv2D)(nil)
	_ trainScratcher = (*Pool2D)(nil)
)

// trains reports whether the node's parameters learn: Backward computes
// their gradients.
func (nd *node) trains() bool { return !nd.frozen && nd.params.Len > 0 }
