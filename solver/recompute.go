package solver

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// Recomputing activations to fit a memory budget (checkpointed segments).
//
// A training step keeps, from Forward to Backward, every output that some
// Backward reads. Under a budget (SetMemoryBudget) some segments of the
// node order keep none of theirs: Forward runs them as usual and lets
// their outputs go after their last Forward reader; Backward, on reaching
// a segment's top node, runs the segment's Forward again (a replay) from
// the one tensor that enters it, into buffers the plan shares like any
// other (plan.go), and then the segment's Backwards read those. A segment
// starts after a cut: a node whose output is all that nodes above it read
// of the nodes up to it (every node of a chain; in a ResNet the ends of
// the residual blocks). The network's input, which the trainer holds for
// the whole step, may be read anywhere.
//
// The replay is the same code on the same input, so its outputs, and the
// gradients computed from them, are the same bits as without a budget.
// What a Forward changes besides its output is not changed twice
// (Pass.Replay): batch norm in training mode computes the same batch
// statistics and leaves the running ones alone, dropout applies the mask it
// drew. What a layer prepares for its Backward (batch norm's statistics, an
// activation's output) the replay prepares again.
//
// The planner estimates a step's memory (StepMemory): the parameters,
// their gradients and state, what the caller holds beside (its optimizer's
// state), the shared buffers of the plan, the largest workspace, the
// layers' own per-batch buffers, the uploaded batch and the loss's. It
// tries the plan without replays first; then replays the first nodes up
// to a later and later cut (fewest recomputed nodes first: in a network of
// images the early outputs are the large ones; found by bisection), the
// replayed nodes split into segments of about equal output size, from one
// segment to one per cut, and keeps the first plan that fits. Plans under
// a budget place their tensors with plan.go's packing, which wastes less
// than the buffers of the plan without one.

// segment is a run of nodes [from, to] whose outputs Backward recomputes.
type segment struct {
	from, to int
	// live: some node of the segment runs in Backward (planTrain), so the
	// replay is needed.
	live bool
}

// ErrMemoryBudget is returned when no plan fits a training step of the
// batch asked for in the budget given.
var ErrMemoryBudget = errors.New("solver: memory budget")

// StepMemory is the planner's estimate of a training step's memory, in
// bytes, for one batch size and the plan in force.
type StepMemory struct {
	Batch int
	// Weights: the parameters, their gradients and the state tensors.
	Weights int64
	// Extra: what the caller holds beside the net, as it was given (the
	// optimizer's state: OptimizerBytes).
	Extra int64
	// Buffers: the step's shared buffers (outputs kept for Backward,
	// replays, gradients), as the plan shares them by liveness.
	Buffers int64
	// Scratch: the largest layer workspace, the layers' own per-batch
	// buffers (dropout masks, normalisation statistics), the uploaded
	// batch and the loss's probabilities and gradient.
	Scratch int64
	// Total is the sum of the four.
	Total int64
	// Replayed counts the nodes whose Forward Backward runs again, in
	// Segments segments.
	Replayed, Segments int
}

// OptimizerBytes is the memory of an optimizer's state tensors (SGD's
// velocity, Adam's moments), for StepMemory's extra.
func OptimizerBytes(o Optimizer) int64 {
	if o == nil {
		return 0
	}
	st, _ := o.State()
	var n int64
	for _, b := range st {
		n += int64(b.Len())
	}
	return 4 * n
}

// batchScratcher is a layer that allocates buffers of its own for each
// batch size (Layer.Resize): scratch reports their elements for n samples,
// for StepMemory.
type batchScratcher interface {
	scratch(n int) int
}

// StepMemory estimates a training step of batch samples under the plan in
// force, with extra bytes held beside the net.
func (n *Net) StepMemory(batch int, extra int64) StepMemory {
	m := StepMemory{Batch: batch, Extra: extra}
	m.Weights = 4 * (2*int64(n.Params.Len()) + int64(n.State.Len()))
	for _, s := range n.trainSize {
		m.Buffers += 4 * int64(batch) * int64(s)
	}
	ws, own := 0, int64(0)
	for _, nd := range n.nodes {
		ws = max(ws, nd.layer.Workspace(batch))
		if s, ok := nd.layer.(batchScratcher); ok {
			own += int64(s.scratch(batch))
		}
	}
	m.Scratch = 4 * (int64(ws) + own + int64(batch)*int64(n.In.Size()+2*n.Out.Size()))
	m.Total = m.Weights + m.Extra + m.Buffers + m.Scratch
	for _, sg := range n.segs {
		if sg.live {
			m.Segments++
			m.Replayed += sg.to - sg.from + 1
		}
	}
	return m
}

// MemoryBudget reports the budget SetMemoryBudget planned for (0: none).
func (n *Net) MemoryBudget() int64 { return n.budget }

// SetMemoryBudget plans training steps of batch samples so that StepMemory
// with extra bytes beside the net fits in limit bytes, recomputing
// activations where it must (see above), and returns the estimate of the
// plan it chose. Without a replay that fits, the plan does not change; a
// limit of 0 or less removes a budget. Under a budget layers keep no
// buffers of their own for Backward beyond those counted (Pass.NoKeep).
//
// Plan after freezing (Freeze, FreezeAllButLast): the segments stay when
// the frozen set changes, and the estimate was for the old one. A batch
// other than the one planned for runs under the same plan, in memory that
// grows with it. If no plan fits, the error (ErrMemoryBudget) says the
// smallest budget that fits batch and the largest batch that fits limit,
// and the net is left as it was.
func (n *Net) SetMemoryBudget(limit int64, batch int, extra int64) (StepMemory, error) {
	if limit <= 0 {
		n.budget, n.packed = 0, false
		n.setSegments(nil)
		n.replanTrain()
		return n.StepMemory(max(batch, 1), extra), nil
	}
	if batch < 1 {
		return StepMemory{}, fmt.Errorf("%w: batch %d, want at least 1", ErrMemoryBudget, batch)
	}
	oldSegs, oldBudget, oldPacked := n.segs, n.budget, n.packed
	n.budget = limit
	try := func(segs []segment, packed bool) StepMemory {
		n.packed = packed
		n.setSegments(segs)
		n.planTrain()
		return n.StepMemory(batch, extra)
	}
	// The plan without a budget, then the same lives packed, then replays.
	for _, packed := range []bool{false, true} {
		if m := try(nil, packed); m.Total <= limit {
			n.replanTrain()
			return m, nil
		}
	}
	least, leastSegs := n.StepMemory(batch, extra), []segment(nil) // the smallest estimate, for the error
	// The smallest prefix of minimal segments whose replay fits, by
	// bisection: replaying more saves more, if not strictly (the search
	// may then miss a smaller prefix that fits, never a fit at all, as it
	// tries every minimal segment last).
	mins := n.minimalSegments()
	// The static prefix (prefix_cache.go) is never replayed: it runs in no
	// Backward, and a Forward served from the prefix cache reads no input
	// that a replay of it could start from.
	for len(mins) > 1 && n.hasStatic(mins[0]) {
		mins = mins[1:]
	}
	best := func(p int) (StepMemory, []segment, bool) {
		var fit StepMemory
		var fitSegs []segment
		ok := false
		for _, segs := range n.groupings(mins[:p+1]) {
			m := try(segs, true)
			if m.Total < least.Total {
				least, leastSegs = m, segs
			}
			if m.Total <= limit && (!ok || m.Total < fit.Total) {
				fit, fitSegs, ok = m, segs, true
			}
		}
		return fit, fitSegs, ok
	}
	var fit StepMemory
	var fitSegs []segment
	found := false
	for lo, hi := 0, len(mins)-1; lo <= hi; {
		mid := lo + (hi-lo)/2
		if m, segs, ok := best(mid); ok {
			fit, fitSegs, found = m, segs, true
			hi = mid - 1
		} else {
			lo = mid + 1
		}
	}
	if found {
		n.setSegments(fitSegs)
		n.packed = true
		n.replanTrain()
		return fit, nil
	}
	// Nothing fits: the largest batch that the leanest plan fits.
	try(leastSegs, true)
	most := 0
	for lo, hi := 1, max(batch, 1); lo <= hi; {
		mid := lo + (hi-lo)/2
		if n.StepMemory(mid, extra).Total <= limit {
			most, lo = mid, mid+1
		} else {
			hi = mid - 1
		}
	}
	n.budget, n.packed = oldBudget, oldPacked
	n.setSegments(oldSegs)
	n.replanTrain()
	if most == 0 {
		return least, fmt.Errorf("%w: a training step of %d samples needs at least %s with every activation recomputed, more than the %s given; not even 1 sample fits",
			ErrMemoryBudget, batch, FormatBytes(least.Total), FormatBytes(limit))
	}
	return least, fmt.Errorf("%w: a training step of %d samples needs at least %s with every activation recomputed, more than the %s given; %d samples fit",
		ErrMemoryBudget, batch, FormatBytes(least.Total), FormatBytes(limit), most)
}

// replanTrain plans the training step again and drops its buffers when
// their sizes changed (as updateActive does).
func (n *Net) replanTrain() {
	old := n.trainSize
	n.planTrain()
	if !slices.Equal(old, n.trainSize) || n.trains == nil {
		n.trains, n.trainCap = nil, 0
	}
	n.trainN = 0
	n.trained = false
}

// setSegments makes segs the replayed segments and marks their nodes.
func (n *Net) setSegments(segs []segment) {
	n.segs = segs
	for i := range n.nodes {
		n.nodes[i].seg = -1
	}
	for k, sg := range segs {
		for j := sg.from; j <= sg.to; j++ {
			n.nodes[j].seg = k
		}
	}
}

// cuts lists the nodes after which a segment may start: node c whose
// output is all that the nodes above it read of nodes 0..c, and no node
// above it fused or folded into one at or below it (fuse.go, fold.go: a
// fused activation or a folded batch norm is computed by its producer's
// Forward). The last node is never one.
func (n *Net) cuts() []int {
	var cs []int
	low := math.MaxInt // the lowest node that a node above c reads or is fused into
	for c := len(n.nodes) - 2; c >= 0; c-- {
		above := &n.nodes[c+1]
		for _, j := range above.inputs {
			if j >= 0 {
				low = min(low, j)
			}
		}
		if above.fusedTo >= 0 {
			low = min(low, above.fusedTo-1) // no cut from the producer up to it
		}
		if low >= c {
			cs = append(cs, c)
		}
	}
	slices.Reverse(cs)
	return cs
}

// segmentsValid reports whether every replayed segment starts at 0 or
// after a cut, ends at a cut or the last node, for the current fusion, and
// holds no node of the static prefix.
func (n *Net) segmentsValid() bool {
	if len(n.segs) == 0 {
		return true
	}
	cut := map[int]bool{len(n.nodes) - 1: true}
	for _, c := range n.cuts() {
		cut[c] = true
	}
	for _, sg := range n.segs {
		if (sg.from > 0 && !cut[sg.from-1]) || !cut[sg.to] || n.hasStatic(sg) {
			return false
		}
	}
	return true
}

// hasStatic reports whether a node of sg is in the static prefix.
func (n *Net) hasStatic(sg segment) bool {
	for j := sg.from; j <= sg.to; j++ {
		if n.nodes[j].static {
			return true
		}
	}
	return false
}

// minimalSegments splits the node order at every cut.
func (n *Net) minimalSegments() []segment {
	var segs []segment
	from := 0
	for _, c := range append(n.cuts(), len(n.nodes)-1) {
		segs = append(segs, segment{from: from, to: c})
		from = c + 1
	}
	return segs
}

// groupings returns the ways the planner tries to replay the nodes of
// mins (consecutive minimal segments): merged into segments whose outputs
// add up to at least a share of the whole, from one segment down to one
// per minimal segment.
func (n *Net) groupings(mins []segment) [][]segment {
	size := func(sg segment) int {
		s := 0
		for j := sg.from; j <= sg.to; j++ {
			s += n.nodes[j].shape.Size()
		}
		return s
	}
	total := 0
	for _, sg := range mins {
		total += size(sg)
	}
	var out [][]segment
	for _, parts := range []int{1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 1 << 30} {
		target := max(total/parts, 1)
		var segs []segment
		cur, acc := mins[0], 0
		for k, sg := range mins {
			if k > 0 && acc >= target {
				segs = append(segs, cur)
				cur, acc = sg, 0
			}
			cur.to = sg.to
			acc += size(sg)
		}
		segs = append(segs, cur)
		if len(out) == 0 || !slices.Equal(out[len(out)-1], segs) {
			out = append(out, segs)
		}
		if len(segs) == len(mins) {
			break
		}
	}
	return out
}

// replay runs segment sg's Forward again, into the nodes' rout buffers,
// from the output below it (or the network's input), before the Backward
// of its top node. Its nodes' ins are the replay's for their Backward.
func (n *Net) replay(sg segment) {
	for j := sg.from; j <= sg.to; j++ {
		nd := &n.nodes[j]
		for k, i := range nd.inputs {
			switch {
			case i == Input:
				nd.ins[k] = n.x
			case n.nodes[i].seg == nd.seg:
				nd.ins[k] = n.nodes[i].rout
			default:
				nd.ins[k] = n.nodes[i].out // the tensor that crosses the cut
			}
		}
		p := &n.replayPass
		if nd.infer {
			p = &n.replayInfer
		}
		gpu.MarkSection(n.B, nd.repSec)
		n.forwardNode(p, nd, nd.rout)
	}
}

// FormatBytes writes a byte count as the budget flags read it (1GiB,
// 512MiB, 1536KiB, 100B): the largest binary unit that divides it, or MiB
// with two decimals.
func FormatBytes(b int64) string {
	for _, u := range []struct {
		s string
		n int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if b >= u.n && b%u.n == 0 {
			return fmt.Sprintf("%d%s", b/u.n, u.s)
		}
	}
	if b >= 1<<20 {
		return fmt.Sprintf("%.2fMiB", float64(b)/(1<<20))
	}
	return fmt.Sprintf("%dB", b)
}

var (
	_ batchScratcher = (*Dropout)(nil)
	_ batchScratcher = (*LayerNorm)(nil)
	_ batchScratcher = (*GroupNorm)(nil)
	_ batchScratcher = (*Embedding)(nil)
	_ batchScratcher = (*Recurrent)(nil)
)
