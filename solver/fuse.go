package solver

import "github.com/cotrain/cotrain/gpu"

// Fusing a ReLU or ReLU6 into the convolution or linear layer before it.
//
// A node whose only consumer is a ReLU or ReLU6 Activation (gpu.FusesAct)
// of it alone, a Conv2D or a Linear, runs the activation itself
// (gpu.ActFuser): its Forward adds the bias and clips in the kernel that
// writes its output, in place, and the Activation's Forward does nothing.
// The two outputs are one tensor: the plans give the Activation's output the
// producer's buffer, which lives as long as either did. Backward, the
// Activation computes its input's gradient and, when the producer learns,
// the producer's bias gradient in the same pass, and the producer's
// Backward skips its own bias gradient.
//
// The results are the unfused ones bit for bit, on every backend
// (gpu.ActFuser's contract; gpu.Unfused where a backend has no fused
// kernels): SetFusing(false) is the reference the tests compare against.
// Nothing outside the net can tell: no API reads a layer's output but the
// network's last, and a fused producer is never the last (it has a
// consumer).

// biasActLayer is a layer that can apply a following ReLU or ReLU6 in its
// own forward kernels and leave its bias gradient to that activation's
// Backward.
type biasActLayer interface {
	Layer
	// forwardAct is Forward followed by a applied to out in place, through f.
	forwardAct(p *Pass, out gpu.Buffer, in []gpu.Buffer, f gpu.ActFuser, a gpu.Act)
	// biasOut returns the bias gradient (nil: no bias) and the output's
	// channels and positions per sample, as BiasGrad takes them.
	biasOut() (db gpu.Buffer, c, hw int)
	// biasGradDone tells the next Backward that the bias gradient is
	// already computed.
	biasGradDone()
}

var (
	_ biasActLayer = (*Conv2D)(nil)
	_ biasActLayer = (*Linear)(nil)
)

// SetFusing turns the fusing of ReLU and ReLU6 into the layer before them
// on (the default) or off. Off, every layer runs its own passes: the same
// results bit for bit, more launches and memory. A change drops a memory
// budget's plan (SetMemoryBudget: its segments start after cuts, which
// fusing moves): plan the budget again after it.
func (n *Net) SetFusing(on bool) {
	if n.noFuse == !on {
		return
	}
	n.noFuse = !on
	n.budget, n.packed = 0, false
	n.setSegments(nil)
	n.planTrain() // with planFusion and planInference
	n.trains, n.trainCap, n.trainN = nil, 0, 0
	n.trained = false
	n.evals, n.evalCap, n.evalN = nil, 0, 0
}

// planFusion pairs every fusable producer with its activation, and folds
// the frozen prefix's batch norm into the convolution before it (fold.go):
// it sets every node's actOf, fusedTo and bnOf. It reads node.infer, so
// planTrain calls it once that is set.
func (n *Net) planFusion() {
	consumers := make([]int, len(n.nodes))
	for i := range n.nodes {
		n.nodes[i].actOf, n.nodes[i].fusedTo, n.nodes[i].bnOf = -1, -1, -1
		for _, j := range n.nodes[i].inputs {
			if j >= 0 {
				consumers[j]++
			}
		}
	}
	n.planFold(consumers)
	if n.noFuse {
		return
	}
	for i := range n.nodes {
		nd := &n.nodes[i]
		a, ok := nd.layer.(*Activation)
		if !ok || !gpu.FusesAct(a.Act) || len(nd.inputs) != 1 || nd.inputs[0] < 0 {
			continue
		}
		j := nd.inputs[0]
		if _, bn := n.nodes[j].layer.(*BatchNorm); bn && n.nodes[j].fusedTo >= 0 {
			// A folded batch norm's activation: its convolution applies
			// it, when it is the batch norm's only reader and runs as
			// inference too.
			if b := n.nodes[j].fusedTo; consumers[j] == 1 && nd.infer {
				n.nodes[b].actOf, nd.fusedTo = i, b
			}
			continue
		}
		if _, ok := n.nodes[j].layer.(biasActLayer); !ok || consumers[j] != 1 {
			continue
		}
		if lin, ok := n.nodes[j].layer.(*Linear); ok && lin.Rowwise() {
			continue // the fused kernels take one row per sample
		}
		n.nodes[j].actOf, nd.fusedTo = i, j
	}
}

// mergeFused makes each fused activation's output its producer's in a plan's
// lives (outputs first, by node): the producer's output lives as long as
// either did, and the activation's becomes an empty tensor, which the
// caller replaces by the producer's slot after sharing.
func (n *Net) mergeFused(ts []life) {
	for i, nd := range n.nodes {
		if j := nd.fusedTo; j >= 0 {
			ts[j].to = max(ts[j].to, ts[i].to)
			ts[i] = life{ts[i].from, ts[i].from, 0}
		}
	}
}

// forwardNode runs node nd's Forward in pass p, or its fused form: a
// producer applies its activation, a fused activation finds its output
// already written.
func (n *Net) forwardNode(p *Pass, nd *node, out gpu.Buffer) {
	switch {
	case nd.fusedTo >= 0:
	case nd.bnOf >= 0:
		n.forwardFolded(p, nd, out)
	case nd.actOf >= 0:
		a := n.nodes[nd.actOf].layer.(*Activation).Act
		nd.layer.(biasActLayer).forwardAct(p, out, nd.ins, n.fuser, a)
	default:
		nd.layer.Forward(p, out, nd.ins)
	}
}

// backwardFused runs a fused activation's Backward together with its
// producer's bias gradient when the producer learns and has a bias, and
// reports whether it did; otherwise the activation's own Backward runs.
func (n *Net) backwardFused(nd *node, out gpu.Buffer) bool {
	if nd.fusedTo < 0 || nd.dins[0] == nil || !nd.direct[0] {
		return false
	}
	pr := &n.nodes[nd.fusedTo]
	if !pr.trains() {
		return false
	}
	l := pr.layer.(biasActLayer)
	db, c, hw := l.biasOut()
	if db == nil {
		return false
	}
	n.fuser.ActivateBackwardBias(nd.layer.(*Activation).Act, nd.dins[0], db, nd.dout, out, n.pass.N, c, hw)
	l.biasGradDone()
	return true
}
