package solver

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// Folding the frozen prefix's batch norm into the convolution before it.
//
// In the frozen prefix (the nodes that a training Forward runs as
// inference: node.infer, net_freeze.go) a batch norm normalises with its
// running statistics, a fixed affine map per channel,
//
//	y = γ(x−μ)/√(σ²+ε) + β = s·x + β − s·μ,   s = γ/√(σ²+ε).
//
// When x is a convolution's output W∗u + b, y is the convolution with
//
//	W' = W·s (each output channel's filter scaled by its s)
//	b' = β + (b−μ)·s,
//
// so the pair runs as one convolution, and a ReLU or ReLU6 after the batch
// norm runs in that convolution's fused epilogue (fuse.go, gpu.ActFuser):
// one pass over the output instead of three (convolution, batch norm,
// activation), and two outputs fewer in the liveness plans. What PyTorch's
// torch.fx fuse_conv_bn_eval does to an eval-mode model, here done to the
// frozen part of a model that is being fine-tuned.
//
// W' and b' are computed on the device by the backend's BatchNormInfer: W as
// a 1×K×(C/G·R·S) tensor normalised with mean 0 and shift 0 gives W·s, and b
// (zeros without a bias) as a 1×K×1 tensor normalised with the batch norm's
// own statistics and shift gives b' above. They go into buffers the
// convolution owns (Conv2D.fw, fb): Params and State are never written, so
// export, weight files, the hub's hashes and Backward see the network as it
// is. They are computed at the first Forward after anything they depend on
// may have changed: a new plan (planTrain: a freeze, SetFrozenInference,
// SetFolding, SetFusing, SetSharing), InitParams, InitState, or
// ParamsChanged, which a caller that writes Params or State itself must
// call (or SetState, for statistics: it refolds only when those of the
// inference-mode batch norms changed).
//
// A pair is folded when the batch norm's only input is a Conv2D whose only
// consumer it is, both run as inference and neither learns (their
// parameters are frozen, so no optimizer step moves what was folded). An
// activation is fused into the folded convolution when it is a ReLU or
// ReLU6, the batch norm's only consumer, runs as inference too, and fusing
// is on; another activation runs its own pass on the folded output.
//
// Folded results are not the unfolded ones bit for bit: W·s rounds before
// the products are summed, s·(W∗u) after. TestFoldedMatchesUnfolded bounds
// the difference; SetFolding(false) is the reference.

// SetFolding turns the folding of the frozen prefix's batch norm into the
// convolution before it on (the default) or off. Off, the batch norm and
// its activation run their own passes. A change drops a memory budget's
// plan, as SetFusing's does.
func (n *Net) SetFolding(on bool) {
	if n.noFold == !on {
		return
	}
	n.noFold = !on
	n.budget, n.packed = 0, false // as SetFusing: the cuts move
	n.setSegments(nil)
	n.planTrain()
	n.trained = false
}

// ParamsChanged tells the net that Params or State were written by other
// means than its own methods and an Optimizer's steps over Trainable (a
// weight file loaded, a hub's weights or merged statistics uploaded): the
// frozen prefix's folded weights are computed again at the next Forward.
// A caller that writes them and does not call it leaves the prefix
// computing with the old values. It also empties the prefix cache
// (SetPrefixCache).
func (n *Net) ParamsChanged() { n.prefixStale() }

// SetState uploads v (State's length) into State, as B.Upload(State, v)
// then ParamsChanged would, except that the frozen prefix's folded weights
// and cached outputs are kept when the statistics they read, those of the
// batch norms that run as inference, are the bits SetState was last given:
// a worker's merged statistics every iteration (the hub's sample-weighted
// mean of the workers' equal values is that value, bit for bit) cost no
// refold. It compares against its own copy of v, which any other change
// of the prefix (ParamsChanged, a new plan) drops.
func (n *Net) SetState(v []float32) {
	if len(v) != n.State.Len() {
		panic(fmt.Sprintf("solver: SetState: %d values for a state of %d", len(v), n.State.Len()))
	}
	n.B.Upload(n.State, v)
	same := n.stateSet != nil
	for i := range n.nodes {
		nd := &n.nodes[i]
		if !same || !nd.infer || nd.state.Len == 0 {
			continue
		}
		for k := nd.state.Off; k < nd.state.Off+nd.state.Len; k++ {
			if math.Float32bits(v[k]) != math.Float32bits(n.stateSet[k]) {
				same = false
				break
			}
		}
	}
	if !same {
		n.prefixStale()
	}
	n.stateSet = append(n.stateSet[:0], v...)
}

// FoldedSize is the number of float32 elements the folded weights and
// biases of the current plan take: a copy of each folded convolution's
// filters and a bias per output channel, held besides Params for as long
// as the prefix stays frozen.
func (n *Net) FoldedSize() int {
	size := 0
	for _, nd := range n.nodes {
		if nd.bnOf >= 0 {
			l := nd.layer.(*Conv2D)
			size += l.Geom.K * (l.fanIn() + 1)
		}
	}
	return size
}

// planFold pairs every foldable batch norm with its convolution: it sets
// the convolution's bnOf and the batch norm's fusedTo (planFusion has
// reset both). consumers[j] is the number of readers of node j's output.
// Convolutions left without a batch norm drop their folded weights.
func (n *Net) planFold(consumers []int) {
	n.prefixStale()
	for i := range n.nodes {
		nd := &n.nodes[i]
		if _, ok := nd.layer.(*BatchNorm); !ok || n.noFold || len(nd.inputs) != 1 || nd.inputs[0] < 0 {
			continue
		}
		j := nd.inputs[0]
		pr := &n.nodes[j]
		if _, ok := pr.layer.(*Conv2D); !ok || consumers[j] != 1 || !nd.infer || !pr.infer || nd.trains() || pr.trains() {
			continue
		}
		pr.bnOf, nd.fusedTo = i, j
	}
	for i := range n.nodes {
		if c, ok := n.nodes[i].layer.(*Conv2D); ok && n.nodes[i].bnOf < 0 {
			c.fw, c.fb = nil, nil
		}
	}
}

// refold computes the folded weights and biases of every folded
// convolution, unless they are those of the current Params and State.
func (n *Net) refold() {
	if n.folded {
		return
	}
	for i := range n.nodes {
		if nd := &n.nodes[i]; nd.bnOf >= 0 {
			nd.layer.(*Conv2D).fold(n.B, n.nodes[nd.bnOf].layer.(*BatchNorm))
		}
	}
	n.folded = true
}

// forwardFolded runs folded convolution node nd, with its fused activation
// if it has one.
func (n *Net) forwardFolded(p *Pass, nd *node, out gpu.Buffer) {
	l := nd.layer.(*Conv2D)
	g := l.geom(p.N)
	if nd.actOf >= 0 {
		n.fuser.ConvForwardAct(n.nodes[nd.actOf].layer.(*Activation).Act, g, out, nd.ins[0], l.fw, l.fb, p.WS, nil)
		return
	}
	p.B.ConvForward(g, out, nd.ins[0], l.fw, l.fb, p.WS)
}

// fold sets l's folded filters W·s and bias β + (b−μ)·s from its own
// weights and bn's, allocating them the first time.
func (l *Conv2D) fold(b gpu.Backend, bn *BatchNorm) {
	k := l.Geom.K
	if l.fw == nil {
		l.fw, l.fb = b.Alloc(l.P[0].Len()), b.Alloc(k)
	}
	gamma, beta, mean, variance := bn.P[0], bn.P[1], bn.S[0], bn.S[1]
	b.BatchNormInfer(gpu.BNGeom{N: 1, C: k, HW: l.P[0].Len() / k, Eps: bn.Eps}, l.fw, l.P[0], gamma, bn.zeros, bn.zeros, variance)
	bias := l.bias(l.P)
	if bias == nil {
		bias = bn.zeros
	}
	b.BatchNormInfer(gpu.BNGeom{N: 1, C: k, HW: 1, Eps: bn.Eps}, l.fb, bias, gamma, beta, mean, variance)
}
