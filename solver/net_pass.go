package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// This file is a Net's passes: the activation buffers they need, shared
// where they can be, and Forward and Backward.

// SetSharing turns buffer sharing by liveness on (the default) or off. Off,
// every layer's output gradient and every inference output gets a buffer of
// its own, as if nothing were shared: more memory, the same results bit for
// bit (the reference the shared layout is tested against).
func (n *Net) SetSharing(on bool) {
	if n.noShare == !on {
		return
	}
	n.noShare = !on
	n.planInference()
	n.planTrain()
	n.trains, n.trainCap, n.trainN = nil, 0, 0
	n.trained = false
	n.evals, n.evalCap, n.evalN = nil, 0, 0
}

// BufferUse is what the per-batch buffers of a network take, in float32
// elements, for one batch size.
type BufferUse struct {
	// Outputs: every layer's output, what a network that kept them all for
	// Backward would hold.
	Outputs int
	// Kept: the outputs that some Backward, or a replay (recompute.go),
	// reads, kept from a training Forward to Backward (for the current
	// frozen set and memory budget).
	Kept int
	// Training: the buffers of a training step, shared by liveness between
	// the layers' outputs and the gradients with respect to them (fan-out
	// scratch included). At least Kept.
	Training int
	// Inference: the buffers an inference Forward shares between outputs.
	Inference int
}

// Buffers reports what the per-batch buffers take for batches of batch
// samples (whether or not they have been allocated yet).
func (n *Net) Buffers(batch int) BufferUse {
	var u BufferUse
	L := len(n.nodes)
	for i, nd := range n.nodes {
		u.Outputs += batch * nd.shape.Size()
		// A replayed node's Backward reads its own replay's outputs; a
		// replay reads what crosses into its segment.
		kept := i == L-1 || (nd.readOut && nd.rslot < 0)
		for _, c := range n.nodes[i+1:] {
			if !slices.Contains(c.inputs, i) {
				continue
			}
			inSeg := c.rslot >= 0 && c.seg == nd.seg
			kept = kept || (!inSeg && (c.readIn || c.rslot >= 0))
		}
		if kept {
			u.Kept += batch * nd.shape.Size()
		}
	}
	for _, s := range n.trainSize {
		u.Training += batch * s
	}
	for _, s := range n.evalSize {
		u.Inference += batch * s
	}
	return u
}

// allocShared allocates one buffer per size for nb samples.
func (n *Net) allocShared(size []int, nb int) []gpu.Buffer {
	bufs := make([]gpu.Buffer, len(size))
	for k, s := range size {
		bufs[k] = n.B.Alloc(max(nb*s, 1))
	}
	return bufs
}

// reserveLayers lets the layers and the shared workspace serve nb samples.
func (n *Net) reserveLayers(nb int) {
	if nb <= n.layerCap {
		return
	}
	n.layerCap = nb
	ws := 0
	for _, nd := range n.nodes {
		nd.layer.Resize(n.B, nb)
		ws = max(ws, nd.layer.Workspace(nb))
	}
	n.ws = n.B.Alloc(max(ws, 1))
}

// reserveTrain makes the training step's shared buffers hold nb samples
// and points the out, dout and scratch views at them, as planTrain placed
// them.
func (n *Net) reserveTrain(nb int) {
	if nb > n.trainCap || n.trains == nil {
		n.trainCap, n.trainN = nb, 0
		n.trains = n.allocShared(n.trainSize, nb)
	}
	if nb == n.trainN {
		return
	}
	n.trainN = nb
	for i := range n.nodes {
		nd := &n.nodes[i]
		size := nb * nd.shape.Size()
		nd.out = n.B.View(n.trains[nd.oslot], nb*nd.ooff, size)
		nd.dout, nd.rout = nil, nil
		if nd.rslot >= 0 {
			nd.rout = n.B.View(n.trains[nd.rslot], nb*nd.roff, size)
		}
		if nd.dslot >= 0 {
			nd.dout = n.B.View(n.trains[nd.dslot], nb*nd.doff, size)
		}
		for k, j := range nd.inputs {
			nd.scratch[k] = nil
			if nd.sslot[k] >= 0 {
				nd.scratch[k] = n.B.View(n.trains[nd.sslot[k]], nb*nd.soff[k], nb*n.nodes[j].shape.Size())
			}
		}
	}
}

// reserveEval makes the shared inference buffers hold nb samples and points
// the eout views at them, as planInference placed them.
func (n *Net) reserveEval(nb int) {
	if nb > n.evalCap || n.evals == nil {
		n.evalCap, n.evalN = nb, 0
		n.evals = n.allocShared(n.evalSize, nb)
	}
	if nb == n.evalN {
		return
	}
	n.evalN = nb
	for i := range n.nodes {
		nd := &n.nodes[i]
		nd.eout = n.B.View(n.evals[nd.eslot], 0, nb*nd.shape.Size())
	}
}

// Forward runs the network on x (batch×In) and returns its output
// (batch×Out), valid until the next Forward. train selects batch statistics
// and dropout, and keeps the layer outputs that Backward reads; an inference
// Forward (train false) keeps only what later layers still read, in buffers
// shared by liveness, and cannot be followed by Backward. In a training
// Forward the frozen prefix, the layers that Backward does not reach, runs
// as inference (running statistics; dropout stays on): see SetFrozenInference.
func (n *Net) Forward(x gpu.Buffer, batch int, train bool) gpu.Buffer {
	if x.Len() != batch*n.In.Size() {
		panic(fmt.Sprintf("solver: Forward: input of %d elements for %d samples of %v", x.Len(), batch, n.In))
	}
	n.beginForward(batch, train)
	return n.runNodes(x, batch, train, runAll)
}

// beginForward readies the buffers, the folded weights and the passes of a
// Forward of batch samples.
func (n *Net) beginForward(batch int, train bool) {
	n.reserveLayers(batch)
	if train {
		n.reserveTrain(batch)
	} else {
		n.reserveEval(batch)
	}
	n.trained = train
	n.refold() // the frozen prefix's batch norm in its convolutions (fold.go)
	n.pass = Pass{B: n.B, N: batch, Train: train, Rand: n.rand, WS: n.ws, NoKeep: n.budget > 0}
	n.infer = n.pass
	n.infer.Train = false
	n.replayPass, n.replayInfer = n.pass, n.infer
	n.replayPass.Replay, n.replayInfer.Replay = true, true
}

// Modes of runNodes with the prefix cache (prefix_cache.go).
const (
	runAll      = iota // every node
	runFromRows        // the static prefix skipped, its frontier set from the staged rows
	runToRows          // every node, the frontier's outputs staged for the cache
)

// runNodes runs the nodes of a Forward on x and returns the network's
// output. With runFromRows it skips the static prefix, setting each
// frontier node's output from the cache's staged rows at that node's step
// (x is then not read); with runToRows it stages each frontier node's
// output just after its step: a node that runs before or after may share
// its buffer (plan.go), so neither can wait.
func (n *Net) runNodes(x gpu.Buffer, batch int, train bool, mode int) gpu.Buffer {
	n.x = nil
	if train && len(n.segs) > 0 {
		n.x = x // a replay of the first nodes reads it (recompute.go)
	}
	for i := range n.nodes {
		nd := &n.nodes[i]
		if mode == runFromRows && nd.static {
			n.stageFrontier(i, batch, false)
			continue
		}
		for k, j := range nd.inputs {
			switch {
			case j == Input:
				nd.ins[k] = x
			case train:
				nd.ins[k] = n.nodes[j].out
			default:
				nd.ins[k] = n.nodes[j].eout
			}
		}
		out := nd.out
		if !train {
			out = nd.eout
		}
		p := &n.pass
		if nd.infer {
			p = &n.infer // the frozen prefix (net_freeze.go)
		}
		gpu.MarkSection(n.B, nd.fwdSec)
		n.forwardNode(p, nd, out)
		if mode == runToRows && nd.static {
			n.stageFrontier(i, batch, true)
		}
	}
	if !train {
		return n.nodes[len(n.nodes)-1].eout
	}
	return n.nodes[len(n.nodes)-1].out
}

// Backward back-propagates dout (the loss gradient of the last Forward's
// output) and sets Grads for every trainable layer. It must follow a
// Forward with train set. Nodes below the lowest trainable layer do not run.
// OnGradsDone, when set, hears of each trainable layer as it finishes.
func (n *Net) Backward(dout gpu.Buffer) {
	if !n.trained {
		panic("solver: Backward needs a training Forward just before it, with no inference Forward or Freeze in between (they do not keep what Backward reads)")
	}
	last := len(n.nodes) - 1
	if want := n.trainN * n.Out.Size(); dout.Len() != want {
		panic(fmt.Sprintf("solver: Backward: gradient of %d elements for %d samples of %v", dout.Len(), n.trainN, n.Out))
	}
	if !n.nodes[last].runs {
		return // nothing trainable
	}
	for i := last; i >= 0; i-- {
		nd := &n.nodes[i]
		if k := nd.seg; k >= 0 && n.segs[k].live && n.segs[k].to == i {
			n.replay(n.segs[k]) // recompute.go
		}
		if i == last {
			// After the last node's replay, if any: the plan lets the
			// replay use this buffer until then.
			n.B.Copy(nd.dout, dout)
		}
		if !nd.runs {
			continue
		}
		// The first consumer (going backward) of a node writes its gradient
		// in place; later ones write scratch that is then added in.
		for k, j := range nd.inputs {
			switch {
			case !nd.needDIn[k]:
				nd.dins[k] = nil
			case nd.direct[k]:
				nd.dins[k] = n.nodes[j].dout
			default:
				nd.dins[k] = nd.scratch[k]
			}
		}
		// What the plan did not keep may be overwritten: the layer gets nil.
		out := nd.out
		if nd.rout != nil {
			out = nd.rout // replayed (recompute.go)
		}
		if !nd.readOut {
			out = nil
		}
		if !nd.readIn {
			for k := range nd.ins {
				nd.ins[k] = nil // the next Forward sets them again
			}
		}
		gpu.MarkSection(n.B, nd.bwdSec)
		if !n.backwardFused(nd, out) {
			nd.layer.Backward(&n.pass, nd.dins, nd.dout, nd.ins, out, nd.trains())
		}
		for k, j := range nd.inputs {
			if nd.dins[k] != nil && !nd.direct[k] {
				n.B.Axpy(1, nd.dins[k], n.nodes[j].dout)
			}
		}
		// A layer's parameter gradient depends only on its own output's
		// gradient, complete once every later node has run: it is final now.
		if n.OnGradsDone != nil && nd.trains() {
			n.OnGradsDone(nd.params.Off)
		}
	}
}
