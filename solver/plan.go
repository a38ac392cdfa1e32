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

// packAlign is the alignment, in elements per sample, of the tensors that
// packing places: a view at a multiple of it starts on a 64-byte boundary
// of its buffer at every batch size, as a buffer of its own does, so the
// kernels' vector loops split it as they would that.
const packAlign = 16

// packing places the tensors in one buffer at offsets (elements per
// sample): off[t] for tensor t, size[0] the buffer's size. Two tensors
// whose lives overlap never overlap in memory. Larger tensors are placed
// first, each at the lowest aligned offset free during its whole life (the
// greedy-by-size placement of TensorFlow Lite's arena planner): unlike
// sharing's buffers, whose sizes are their largest tensor's, a gap a large
// tensor leaves is filled by smaller ones, which brings the total near the
// most that is ever live at once. Memory plans under a budget use it
// (recompute.go); the plans without one keep sharing's buffers.
func packing(ts []life) (off, size []int) {
	off = make([]int, len(ts))
	order := make([]int, len(ts))
	for t := range order {
		order[t] = t
	}
	// Stable, so equal sizes keep tensor order: the plan is deterministic.
	slices.SortStableFunc(order, func(a, b int) int { return ts[b].size - ts[a].size })
	placed := make([]int, 0, len(ts)) // by offset
	total := 0
	for _, t := range order {
		l := ts[t]
		if l.size == 0 {
			continue
		}
		at := 0
		for _, p := range placed {
			q := ts[p]
			if q.to < l.from || l.to < q.from {
				continue // never live at once
			}
			if at+l.size <= off[p] {
				break // fits in the gap below p
			}
			at = max(at, (off[p]+q.size+packAlign-1)/packAlign*packAlign)
		}
		off[t] = at
		k, _ := slices.BinarySearchFunc(placed, at, func(p, v int) int { return off[p] - v })
		placed = slices.Insert(placed, k, t)
		total = max(total, at+l.size)
	}
	return off, []int{total}
}

// planTrain decides, for the current frozen set and replayed segments
// (n.segs), which nodes run in Backward, which input gradients they write
// in place and which through scratch, what each Backward reads of the
// forward pass, and where every output and gradient of a training step
// lives. It sets every node's runs, readIn, readOut, direct, oslot, dslot,
// sslot, rslot and infer, each segment's live, and n.trainSize (dropping
// the training buffers when their sizes changed); then the fusion plan
// (planFusion, which folds the frozen prefix's batch norm by infer) and the
// inference Forward's (planInference), whose buffers it drops when their
// sizes changed. Every change of the plans comes through here, so it also
// marks the folded weights stale.
//
// A training step is one timeline: Forward runs node i at step i, then
// Backward runs the nodes last first, the gradient of the output first; a
// replayed segment's Forward runs again, its nodes in order, just before
// the Backward of its top node (recompute.go). Without replayed segments
// Backward runs node i at step 2L-1-i (L nodes). An output lives from its
// node's Forward step to its last reader: a later node's Forward, or a
// Backward that reads it (its consumer's in, its own out; nodes that do not
// run in Backward read nothing). A node in a replayed segment has a second
// output, its replay's, and the Backwards of its segment read that one:
// its first output lives only to its last Forward reader, unless it is the
// segment's top, which later segments read. The network's output lives to
// the end, for the caller's loss and whatever it reads after.
func (n *Net) planTrain() {
	L := len(n.nodes)
	last := L - 1
	// Which segments replay: those with a node that runs in Backward
	// (runs is set below; active and the frozen set decide it first).
	n.planRuns()
	for k := range n.segs {
		sg := &n.segs[k]
		sg.live = false
		for j := sg.from; j <= sg.to; j++ {
			sg.live = sg.live || n.nodes[j].runs
		}
	}
	replayed := func(i int) bool { k := n.nodes[i].seg; return k >= 0 && n.segs[k].live }
	// The timeline's steps.
	bstep, rstep := make([]int, L), make([]int, L)
	for i := range rstep {
		rstep[i] = -1
	}
	s := L
	for i := last; i >= 0; i-- {
		if k := n.nodes[i].seg; k >= 0 && n.segs[k].live && n.segs[k].to == i {
			for j := n.segs[k].from; j <= i; j++ {
				rstep[j] = s
				s++
			}
		}
		bstep[i] = s
		s++
	}
	end := s
	ts := make([]life, L, 3*L) // 0..L-1: the outputs
	add := func(from, to, size int) int {
		ts = append(ts, life{from, to, size})
		return len(ts) - 1
	}
	written := make([]bool, L)
	grad := make([]int, L) // tensor of node j's output gradient
	rep := make([]int, L)  // tensor of node j's replayed output, -1 for none
	for i := range n.nodes {
		nd := &n.nodes[i]
		ts[i] = life{i, i, nd.shape.Size()}
		for _, j := range nd.inputs {
			if j >= 0 {
				ts[j].to = i // nodes come in order: the last write is the last consumer
			}
		}
		nd.readIn, nd.readOut, nd.dslot, nd.rslot = false, false, -1, -1
		nd.direct = make([]bool, len(nd.inputs))
		nd.sslot = make([]int, len(nd.inputs))
		for k := range nd.sslot {
			nd.sslot[k] = -1
		}
	}
	ts[last].to = end
	// The replays' outputs, read by the replay of later nodes of their
	// segment; what a replay reads from below its segment (the input that
	// crosses the cut, or the network's input) lives to that step.
	for i := range n.nodes {
		rep[i] = -1
		if !replayed(i) {
			continue
		}
		rep[i] = add(rstep[i], rstep[i], n.nodes[i].shape.Size())
		for _, j := range n.nodes[i].inputs {
			switch {
			case j < 0:
			case rep[j] >= 0 && n.nodes[j].seg == n.nodes[i].seg:
				ts[rep[j]].to = rstep[i]
			default:
				ts[j].to = max(ts[j].to, rstep[i])
			}
		}
	}
	// readTensor is the tensor of node j's output that node i's Backward
	// reads: the replay's within i's replayed segment, else the first.
	readTensor := func(i, j int) int {
		if rep[j] >= 0 && rep[i] >= 0 && n.nodes[j].seg == n.nodes[i].seg {
			return rep[j]
		}
		return j
	}
	if n.nodes[last].active {
		written[last] = true
		grad[last] = add(bstep[last], bstep[last], n.nodes[last].shape.Size())
	}
	for i := last; i >= 0; i-- {
		nd := &n.nodes[i]
		if !nd.runs {
			continue
		}
		ts[grad[i]].to = bstep[i] // read here for the last time
		nd.readIn, nd.readOut = true, true
		if r, ok := nd.layer.(BackwardReader); ok {
			nd.readIn, nd.readOut = r.BackwardReads(nd.trains())
		}
		if nd.readOut {
			t := readTensor(i, i)
			ts[t].to = max(ts[t].to, bstep[i])
		}
		// The first consumer (going backward) of a node writes its gradient
		// in place; later ones write scratch that is then added in.
		for k, j := range nd.inputs {
			if j < 0 {
				continue
			}
			if nd.readIn {
				t := readTensor(i, j)
				ts[t].to = max(ts[t].to, bstep[i])
			}
			if !nd.needDIn[k] {
				continue
			}
			size := n.nodes[j].shape.Size()
			if written[j] {
				nd.sslot[k] = add(bstep[i], bstep[i], size)
				continue
			}
			nd.direct[k] = true
			written[j] = true
			grad[j] = add(bstep[i], bstep[i], size) // until j's step, set there
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
	if !n.segmentsValid() {
		// A new frozen set moved the folding, and with it the cuts, under
		// a memory budget's segments: they go (Freeze's documentation
		// says to plan the budget after freezing).
		n.setSegments(nil)
		n.planTrain()
		return
	}
	n.mergeFused(ts)
	for i, nd := range n.nodes {
		if j := nd.fusedTo; j >= 0 && rep[i] >= 0 {
			// The replays of a fused pair: one tensor too (fuse.go). A cut
			// never separates them (cuts).
			ts[rep[j]].to = max(ts[rep[j]].to, ts[rep[i]].to)
			ts[rep[i]] = life{ts[rep[i]].from, ts[rep[i]].from, 0}
		}
	}
	slot, size := sharing(ts, !n.noShare)
	off := make([]int, len(ts))
	if n.packed && !n.noShare {
		off, size = packing(ts)
		slot = make([]int, len(ts)) // all in buffer 0, at off
	}
	n.lives = ts
	for i := range n.nodes {
		nd := &n.nodes[i]
		nd.oslot, nd.ooff = slot[i], off[i]
		if nd.fusedTo >= 0 {
			nd.oslot, nd.ooff = slot[nd.fusedTo], off[nd.fusedTo] // one tensor with its producer's output (fuse.go)
		}
		nd.roff, nd.doff = 0, 0
		if rep[i] >= 0 {
			t := rep[i]
			if nd.fusedTo >= 0 {
				t = rep[nd.fusedTo]
			}
			nd.rslot, nd.roff = slot[t], off[t]
		}
		if written[i] {
			nd.dslot, nd.doff = slot[grad[i]], off[grad[i]]
		}
		nd.soff = make([]int, len(nd.sslot))
		for k, t := range nd.sslot {
			if t >= 0 {
				nd.sslot[k], nd.soff[k] = slot[t], off[t]
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

// planRuns sets every node's runs: whether Backward runs it. The last node
// runs when it is active; a node below it when it is active and a consumer
// that runs writes its gradient (needDIn).
func (n *Net) planRuns() {
	last := len(n.nodes) - 1
	written := make([]bool, len(n.nodes))
	written[last] = n.nodes[last].active
	for i := last; i >= 0; i-- {
		nd := &n.nodes[i]
		nd.runs = nd.active && written[i]
		if !nd.runs {
			continue
		}
		for k, j := range nd.inputs {
			if j >= 0 && nd.needDIn[k] {
				written[j] = true
			}
		}
	}
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
