package solver

import (
	"errors"
	"math"
	"math/rand/v2"

	"github.com/cotrain/cotrain/gpu"
)

// Input is the index that names the network's input in Node.Inputs.
const Input = -1

// Node places a layer in a network.
type Node struct {
	Layer Layer
	// Inputs are indices of earlier nodes, or Input. Nil means the previous
	// node (the network input for the first node): a plain stack needs none.
	Inputs []int
}

// Range is a contiguous part of the flat parameter buffer.
type Range struct{ Off, Len int }

// Tensor locates one named parameter or state tensor in a flat buffer.
type Tensor struct {
	Name string // "conv1.weight"
	Dims []int
	Off  int
	Spec ParamSpec
}

// ErrNoLayer is returned when a layer name does not exist.
var ErrNoLayer = errors.New("solver: no such layer")

type node struct {
	layer   Layer
	inputs  []int
	shape   Shape
	params  Range // in Net.Params/Grads
	state   Range // in Net.State
	frozen  bool
	active  bool // Backward must run: a trainable parameter at or below
	needDIn []bool
	// The plans (plan.go): whether Backward runs this node (active and its
	// gradient is written), whether that Backward reads the inputs and the
	// output, whether it writes input k's gradient in place (direct[k]) or
	// through scratch, and the shared buffers that hold, in a training step,
	// its output (oslot), its output gradient (dslot) and its scratch per
	// input (sslot, -1 for none), and its output in an inference Forward
	// (eslot).
	runs            bool
	readIn, readOut bool
	// infer: the node is in the frozen prefix (Backward does not run it)
	// and a training Forward runs it as inference (net_freeze.go); static:
	// besides, it depends on the input through such nodes only, so its
	// output is a function of the sample (prefix_cache.go).
	infer, static bool
	direct        []bool
	oslot, dslot  int
	sslot         []int
	eslot         int
	// Recomputation (recompute.go): seg is the replayed segment this node
	// belongs to (an index in Net.segs, -1 for none), rslot the shared
	// buffer of its replayed output (-1 for none) and rout its view.
	seg, rslot int
	rout       gpu.Buffer
	// Offsets (elements per sample) of the training step's tensors in
	// their buffers: 0 but in a packed plan (plan.go's packing), where
	// every tensor lies in buffer 0: the output, its gradient, the
	// replayed output, and the scratch per input.
	ooff, doff, roff int
	soff             []int
	// Fusing (fuse.go): actOf is the activation node this producer applies
	// in its own kernels, fusedTo the producer that applies this
	// activation node, or this batch norm folded into it (fold.go); bnOf
	// is the batch norm node folded into this convolution; -1 for none.
	actOf, fusedTo, bnOf int
	// fwdSec and bwdSec name the node's passes for a profile (gpu.MarkSection).
	fwdSec, bwdSec, repSec string
	// Views for the current batch size, rebuilt when it changes, so that a
	// steady-state step allocates nothing: out, dout and scratch are the
	// training step's, eout the inference Forward's.
	out, dout, eout gpu.Buffer
	ins, dins       []gpu.Buffer
	// scratch[k] is a view of a shared gradient buffer for input slot k,
	// sized for input k's gradient: used when another consumer wrote it first.
	scratch []gpu.Buffer
}

// Net is a network of layers whose parameters live in one flat buffer
// (Params) and whose gradients live in another of the same layout (Grads).
type Net struct {
	B      gpu.Backend
	In     Shape
	Out    Shape
	Params gpu.Buffer // trainable parameters, in PyTorch's parameters() order
	Grads  gpu.Buffer // gradients, same layout; frozen ranges stay zero
	State  gpu.Buffer // saved untrained tensors (batch-norm running statistics)

	nodes   []node
	tensors []Tensor
	states  []Tensor
	rand    *rand.Rand

	// Per-batch buffers; each group has the batch capacity it was allocated
	// for (cap*) and the batch size its views are built for (cur*), so a
	// training step and an evaluation at other batch sizes can alternate
	// without rebuilding anything.
	layerCap         int          // Layer.Resize and ws
	ws               gpu.Buffer   // shared layer workspace
	trainCap, trainN int          // trains and the out, dout and scratch views
	trains           []gpu.Buffer // outputs and gradients, shared: planTrain
	trainSize        []int        // per-sample size of each of trains
	evalCap, evalN   int          // evals and the eout views
	evals            []gpu.Buffer // shared by liveness: planInference
	evalSize         []int
	trained          bool // the last Forward was a training one
	pass             Pass
	// infer is pass in inference mode: what the frozen prefix's nodes
	// (node.infer) run in during a training Forward.
	infer Pass
	// trainFrozen runs the frozen prefix in training mode too
	// (SetFrozenInference(false)).
	trainFrozen bool
	// noShare gives every tensor its own buffer (tests: the reference
	// layout the shared plans must match bit for bit).
	noShare bool
	// Recomputation (recompute.go): the segments whose Forward Backward
	// runs again instead of keeping their outputs, in node order; the
	// training Forward's input, which a replay of the first nodes reads;
	// the passes a replay runs in (pass and infer with Replay set); and
	// the budget SetMemoryBudget planned for (0: none).
	segs                    []segment
	x                       gpu.Buffer
	replayPass, replayInfer Pass
	budget                  int64
	// lives are the training plan's tensors (tests: how near the
	// plan's buffers come to what is live at once).
	lives []life
	// packed places the training step's tensors with packing instead
	// of sharing (plan.go); SetMemoryBudget's plans do.
	packed bool
	// noFuse runs every activation in its own passes (SetFusing); fuser
	// is B's fused kernels, or its unfused calls (gpu.Fuser).
	noFuse bool
	fuser  gpu.ActFuser
	// noFold keeps the frozen prefix's batch norm out of the convolutions
	// (SetFolding); folded says the folded weights are those of the
	// current parameters and statistics (fold.go).
	noFold, folded bool
	// cache keeps the static prefix's frontier outputs per sample (nil:
	// off); frontier lists the frontier's nodes and rowLen the values of
	// one sample's row (prefix_cache.go).
	cache    *prefixCache
	frontier []int
	rowLen   int
	// stateSet is State as SetState last uploaded it; nil once anything
	// else may have changed the prefix (fold.go).
	stateSet []float32

	// OnGradsDone, when set, is called by Backward, on Backward's
	// goroutine, after each layer whose parameters learn has run, last
	// layer first, with the offset of that layer's parameters in Grads:
	// Grads[off:] is then final for this pass (the layers above have run,
	// frozen ones stay zero) and stays so until the next Backward. This is
	// what lets a worker push a layer's gradient while the layers below it
	// are still computing (layer-wise overlap). The callee may read that
	// range of Grads and State, on this goroutine (a backend is not safe
	// for concurrent use), and must not change the net; Backward waits for
	// it to return. Nil, the default, costs nothing.
	OnGradsDone func(off int)
}

// NewNet checks the graph, sets the layers up and allocates the flat buffers
// (zeroed: call InitParams or load weights next). Nothing is allocated
// before every layer is set up and every size checked (PlanNet).
func NewNet(b gpu.Backend, in Shape, nodes []Node) (*Net, error) {
	lay, err := PlanNet(in, nodes)
	if err != nil {
		return nil, err
	}
	n := &Net{B: b, In: in, rand: rand.New(rand.NewPCG(1, 2)), fuser: gpu.Fuser(b), tensors: lay.Params, states: lay.State}
	for i, nd := range nodes {
		l := nd.Layer
		inputs := nd.Inputs
		if inputs == nil {
			inputs = []int{i - 1}
		}
		n.nodes = append(n.nodes, node{layer: l, inputs: inputs, shape: lay.shapes[i], params: lay.params[i], state: lay.state[i],
			fwdSec: l.Name() + " forward", bwdSec: l.Name() + " backward", repSec: l.Name() + " replay", seg: -1, rslot: -1})
	}
	n.Out = lay.Out
	n.Params, n.Grads, n.State = b.Alloc(lay.NumParams), b.Alloc(lay.NumParams), b.Alloc(lay.NumState)
	for i := range n.nodes {
		nd := &n.nodes[i]
		var ps, gs, ss []gpu.Buffer
		for _, t := range n.tensors {
			if t.Off >= nd.params.Off && t.Off < nd.params.Off+nd.params.Len {
				ps = append(ps, b.View(n.Params, t.Off, t.Spec.Size()))
				gs = append(gs, b.View(n.Grads, t.Off, t.Spec.Size()))
			}
		}
		for _, t := range n.states {
			if t.Off >= nd.state.Off && t.Off < nd.state.Off+nd.state.Len {
				ss = append(ss, b.View(n.State, t.Off, t.Spec.Size()))
			}
		}
		nd.layer.Bind(b, ps, gs, ss)
		nd.ins = make([]gpu.Buffer, len(nd.inputs))
		nd.dins = make([]gpu.Buffer, len(nd.inputs))
		nd.scratch = make([]gpu.Buffer, len(nd.inputs))
	}
	n.updateActive() // plans the fusion and both passes
	n.InitState()
	return n, nil
}

// Tensors lists the trainable parameter tensors and where they lie in Params.
func (n *Net) Tensors() []Tensor { return n.tensors }

// StateTensors lists the state tensors and where they lie in State.
func (n *Net) StateTensors() []Tensor { return n.states }

// NumParams is the number of trainable parameters (as PyTorch counts them).
func (n *Net) NumParams() int { return n.Params.Len() }

// LayerInfo describes one layer for listings.
type LayerInfo struct {
	Name, Kind string
	Out        Shape
	Params     int
	Frozen     bool
}

// Layers describes the layers in order.
func (n *Net) Layers() []LayerInfo {
	out := make([]LayerInfo, len(n.nodes))
	for i, nd := range n.nodes {
		out[i] = LayerInfo{nd.layer.Name(), nd.layer.Kind(), nd.shape, nd.params.Len, nd.frozen}
	}
	return out
}

// SetRand sets the generator that dropout draws from.
func (n *Net) SetRand(r *rand.Rand) { n.rand = r }

// InitParams draws every parameter as its spec says, from r.
func (n *Net) InitParams(r *rand.Rand) {
	host := make([]float32, n.Params.Len())
	for _, t := range n.tensors {
		fill(host[t.Off:t.Off+t.Spec.Size()], t.Spec, r)
	}
	n.B.Upload(n.Params, host)
	n.B.Fill(n.Grads, 0)
	n.prefixStale()
}

// InitState resets the state tensors (running mean 0, running variance 1).
func (n *Net) InitState() {
	host := make([]float32, n.State.Len())
	for _, t := range n.states {
		fill(host[t.Off:t.Off+t.Spec.Size()], t.Spec, nil)
	}
	n.B.Upload(n.State, host)
	n.prefixStale()
}

func fill(dst []float32, s ParamSpec, r *rand.Rand) {
	switch s.Init {
	case InitZeros:
		clear(dst)
	case InitOnes:
		for i := range dst {
			dst[i] = 1
		}
	case InitNormal:
		for i := range dst {
			dst[i] = float32(r.NormFloat64())
		}
	case InitQuarter:
		for i := range dst {
			dst[i] = 0.25
		}
	case InitFanIn:
		bound := 1 / math.Sqrt(float64(max(s.FanIn, 1)))
		for i := range dst {
			u := float64(r.Float64())             // rounded: its inlined product is not fused into u + u
			dst[i] = float32((u + u - 1) * bound) // no product to fuse with the sum, on any target
		}
	}
}
