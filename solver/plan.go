package solver

import "slices"

// Buffer sharing by liveness.
//
// A tensor that lives only during part of a pass can share memory with
// another whose life does not overlap it. Two passes use this:
//
//   - A training step (Forward then Backward): node j's output lives from
//     its Forward to its last reader, in Forward or in Backward; only what a
//     Backward reads (BackwardReader) outlives the Forward. The gradient
//     with respect to node j's output lives from the step of its first
//     writer (the consumer of j that runs first, going backward) down to
//     node j's own step, where j reads it: a chain needs two buffers for
//     them, used in turn, and they reuse the memory of outputs that
//     Backward does not read. The scratch that a later consumer of a
//     fanned-out node writes before adding it in lives during that
//     consumer's step only.
//   - Inference Forward: node j's output lives from its own step to its last
//     consumer's (to the end for the network's output).
//
// Lives are measured in steps of the pass (0, 1, 2, ... in the order the
// pass runs) and are closed intervals: a tensor that a step reads and one
// that the same step writes both contain that step, so a layer never sees
// its input and output, or its dout and a din, in the same memory.

// life is one tensor's use of a shared buffer: live at every step s with
// from <= s <= to, size elements per sample.
type life struct {
	from, to int
	size     int
}

// sharing assigns tensors to buffers: slot[t] is tensor t's buffer and
// size[k] is buffer k's size per sample (the largest of its tensors). Two
// tensors share a buffer only if their lives are disjoint.
//
// Tensors are placed in order of their first step (interval colouring, which
// uses the fewest buffers any assignment can: as many as are ever live at
// one step). Each goes to the free buffer that fits it most tightly, or, if
// none is large enough, to the largest free one, which grows; a new buffer
// is opened only when none is free. With share false every tensor gets its
// own buffer: the layout the shared one is checked against in tests.
func sharing(ts []life, share bool) (slot, size []int) {
	slot = make([]int, len(ts))
	if !share {
		size = make([]int, len(ts))
		for t, l := range ts {
			slot[t], size[t] = t, l.size
		}
		return slot, size
	}
	order := make([]int, len(ts))
	for t := range order {
		order[t] = t
	}
	// Stable, so equal starts keep tensor order: the plan is deterministic.
	slices.SortStableFunc(order, func(a, b int) int { return ts[a].from - ts[b].from })
	var busy []int // busy[k]: last step of buffer k's latest tensor
	for _, t := range order {
		l := ts[t]
		best := -1
		for k := range size {
			if busy[k] >= l.from {
				continue
			}
			switch {
			case best < 0:
				best = k
			case size[k] >= l.size && (size[best] < l.size || size[k] < size[best]):
				best = k // fits, and more tightly than best (or best does not fit)
			case size[best] < l.size && size[k] > size[best]:
				best = k // neither fits: grow the larger
			}
		}
		if best < 0 {
			best = len(size)
			size, busy = append(size, 0), append(busy, 0)
		}
		slot[t] = best
		size[best] = max(size[best], l.size)
		busy[best] = l.to
	}
	return slot, size
}

// planTrain decides, for the current frozen set, which nodes run in
// Backward, which input gradients they write in place and which through
// scratch, what each Backward reads of the forward pass, and where every
// output and gradient of a training step lives. It sets every node's runs,
// readIn, readOut, direct, oslot, dslot, sslot and infer, and n.trainSize
// (dropping the training buffers when their sizes changed);
// then the fusion plan (planFusion, which folds the frozen prefix's batch
// norm by infer) and the inference Forward's (planInference), whose
// buffers it drops when their sizes changed. Every change of the plans
// comes through here, so it also marks the folded weights stale.
//
// A training step is one timeline: Forward runs node i at step i, Backward
// runs it at step 2L-1-i (L nodes), the gradient of the output first. An
// output lives from its node's Forward step to its last reader: a later
// node's Forward, or a Backward that reads it (its consumer's in, its own
// out; nodes that do not run in Backward read nothing). The network's output
// lives to the end, for the caller's loss and whatever it reads after.
func (n *Net) planTrain() {
	L := len(n.nodes)
	last := L - 1
	fwd := func(i int) int { return i }
	bwd := func(i int) int { return 2*L - 1 - i }
	ts := make([]life, L, 3*L) // 0..L-1: the outputs
	add := func(from, to, size int) int {
		ts = append(ts, life{from, to, size})
		return len(ts) - 1
	}
	written := make([]bool, L)
	grad := make([]int, L) // tensor of node j's output gradient
	for i := range n.nodes {
		nd := &n.nodes[i]
		ts[i] = life{fwd(i), fwd(i), nd.shape.Size()}
		for _, j := range nd.inputs {
			if j >= 0 {
				ts[j].to = fwd(i) // nodes come in order: the last write is the last consumer
			}
		}
		nd.runs, nd.readIn, nd.readOut, nd.dslot = false, false, false, -1
		nd.direct = make([]bool, len(nd.inputs))
		nd.sslot = make([]int, len(nd.inputs))
		for k := range nd.sslot {
			nd.sslot[k] = -1
		}
	}
	ts[last].to = bwd(0) + 1
	if n.nodes[last].active {
		written[last] = true
		grad[last] = add(bwd(last), bwd(last), n.nodes[last].shape.Size())
	}
	for i := last; i >= 0; i-- {
		nd := &n.nodes[i]
		if !nd.active || !written[i] {
			continue
		}
		nd.runs = true
		ts[grad[i]].to = bwd(i) // read here for the last time
		nd.readIn, nd.readOut = true, true
		if r, ok := nd.layer.(BackwardReader); ok {
			nd.readIn, nd.readOut = r.BackwardReads(nd.trains())
		}
		if nd.readOut {
			ts[i].to = max(ts[i].to, bwd(i))
		}
		// The first consumer (going backward) of a node writes its gradient
		// in place; later ones write scratch that is then added in.
		for k, j := range nd.inputs {
			if j < 0 {
				continue
			}
			if nd.readIn {
				ts[j].to = max(ts[j].to, bwd(i))
			}
			if !nd.needDIn[k] {
				continue
			}
			size := n.nodes[j].shape.Size()
			if written[j] {
				nd.sslot[k] = add(bwd(i), bwd(i), size)
				continue
			}
			nd.direct[k] = true
			written[j] = true
			grad[j] = add(bwd(i), bwd(i), size) // until j's step, set there
		}
	}
	for i := range n.nodes {
		nd := &n.nodes[i]
		nd.infer = n.inferFrozen(nd)
		if d, ok := nd.layer.(trainScratcher); ok && nd.infer {
			d.dropTrainScratch()
		}
	}
	n.planFusion() // folds only what runs as inference (fold.go)
	n.planStatic() // what the prefix cache keeps (prefix_cache.go)
	n.mergeFused(ts)
	slot, size := sharing(ts, !n.noShare)
	for i := range n.nodes {
		nd := &n.nodes[i]
		nd.oslot = slot[i]
		if nd.fusedTo >= 0 {
			nd.oslot = slot[nd.fusedTo] // one tensor with its producer's output (fuse.go)
		}
		if written[i] {
			nd.dslot = slot[grad[i]]
		}
		for k, t := range nd.sslot {
			if t >= 0 {
				nd.sslot[k] = slot[t]
			}
		}
	}
	if !slices.Equal(n.trainSize, size) {
		n.trains, n.trainCap = nil, 0 // reallocated for the new plan by the next Forward
	}
	n.trainSize = size
	n.trainN = 0 // rebuild the views: what is kept and where changed
	// The fusion plan is the inference Forward's too, and folding made it
	// depend on the frozen set: the inference buffers follow.
	oldEval := n.evalSize
	n.planInference()
	if !slices.Equal(oldEval, n.evalSize) {
		n.evals, n.evalCap = nil, 0 // reallocated for the new plan by the next Forward
	}
	n.evalN = 0 // rebuild the views: slots may have moved
}

// planInference places the outputs of an inference Forward: each lives from
// its node's step to its last consumer's, the network's output to the end.
// It sets every node's eslot and n.evalSize.
func (n *Net) planInference() {
	last := len(n.nodes) - 1
	ts := make([]life, len(n.nodes))
	for i, nd := range n.nodes {
		ts[i] = life{i, i, nd.shape.Size()}
		for _, j := range nd.inputs {
			if j >= 0 {
				ts[j].to = i // nodes come in order: the last write is the last consumer
			}
		}
	}
	ts[last].to = last + 1 // returned to the caller
	n.mergeFused(ts)
	slot, size := sharing(ts, !n.noShare)
	for i := range n.nodes {
		n.nodes[i].eslot = slot[i]
		if j := n.nodes[i].fusedTo; j >= 0 {
			n.nodes[i].eslot = slot[j] // one tensor with its producer's output (fuse.go)
		}
	}
	n.evalSize = size
}
