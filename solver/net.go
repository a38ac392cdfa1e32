package solver

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

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
	direct          []bool
	oslot, dslot    int
	sslot           []int
	eslot           int
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
	// noShare gives every tensor its own buffer (tests: the reference
	// layout the shared plans must match bit for bit).
	noShare bool

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
// (zeroed: call InitParams or load weights next).
func NewNet(b gpu.Backend, in Shape, nodes []Node) (*Net, error) {
	if in.Size() <= 0 {
		return nil, fmt.Errorf("solver: input shape %v", in)
	}
	n := &Net{B: b, In: in, rand: rand.New(rand.NewPCG(1, 2))}
	names := map[string]bool{}
	var nParams, nState int
	for i, nd := range nodes {
		l := nd.Layer
		if names[l.Name()] {
			return nil, fmt.Errorf("solver: duplicate layer name %q", l.Name())
		}
		names[l.Name()] = true
		inputs := nd.Inputs
		if inputs == nil {
			inputs = []int{i - 1}
		}
		seen := map[int]bool{}
		var inShapes []Shape
		for _, j := range inputs {
			if j < Input || j >= i {
				return nil, fmt.Errorf("solver: layer %s: input %d is not an earlier node", l.Name(), j)
			}
			if seen[j] {
				return nil, fmt.Errorf("solver: layer %s: input %d given twice", l.Name(), j)
			}
			seen[j] = true
			if j == Input {
				inShapes = append(inShapes, in)
			} else {
				inShapes = append(inShapes, n.nodes[j].shape)
			}
		}
		out, err := l.Setup(inShapes)
		if err != nil {
			return nil, fmt.Errorf("solver: layer %s (%s): %w", l.Name(), l.Kind(), err)
		}
		nn := node{layer: l, inputs: inputs, shape: out}
		nn.params.Off = nParams
		for _, p := range l.Params() {
			n.tensors = append(n.tensors, Tensor{Name: l.Name() + "." + p.Name, Dims: p.Dims, Off: nParams, Spec: p})
			nParams += p.Size()
		}
		nn.params.Len = nParams - nn.params.Off
		nn.state.Off = nState
		for _, p := range l.State() {
			n.states = append(n.states, Tensor{Name: l.Name() + "." + p.Name, Dims: p.Dims, Off: nState, Spec: p})
			nState += p.Size()
		}
		nn.state.Len = nState - nn.state.Off
		n.nodes = append(n.nodes, nn)
	}
	if len(n.nodes) == 0 {
		return nil, errors.New("solver: a network needs at least one layer")
	}
	n.Out = n.nodes[len(n.nodes)-1].shape
	n.Params, n.Grads, n.State = b.Alloc(nParams), b.Alloc(nParams), b.Alloc(nState)
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
	n.planInference()
	n.updateActive()
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
}

// InitState resets the state tensors (running mean 0, running variance 1).
func (n *Net) InitState() {
	host := make([]float32, n.State.Len())
	for _, t := range n.states {
		fill(host[t.Off:t.Off+t.Spec.Size()], t.Spec, nil)
	}
	n.B.Upload(n.State, host)
}

func fill(dst []float32, s ParamSpec, r *rand.Rand) {
	switch s.Init {
	case InitZeros:
		clear(dst)
	case InitOnes:
		for i := range dst {
			dst[i] = 1
		}
	case InitFanIn:
		bound := 1 / math.Sqrt(float64(max(s.FanIn, 1)))
		for i := range dst {
			dst[i] = float32((2*r.Float64() - 1) * bound)
		}
	}
}

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
	old := n.trainSize
	n.planTrain()
	if !slices.Equal(old, n.trainSize) {
		n.trains, n.trainCap = nil, 0 // reallocated for the new plan by the next Forward
	}
	n.trainN = 0      // rebuild the views: what is kept and where changed
	n.trained = false // a Forward before the change kept what the old plan needed
}

// trains reports whether the node's parameters learn: Backward computes
// their gradients.
func (nd *node) trains() bool { return !nd.frozen && nd.params.Len > 0 }

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
	// Kept: the outputs that some Backward reads, kept from a training
	// Forward to Backward (for the current frozen set).
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
		kept := i == L-1 || nd.readOut
		for _, c := range n.nodes[i+1:] {
			kept = kept || (c.readIn && slices.Contains(c.inputs, i))
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
		nd.out = n.B.View(n.trains[nd.oslot], 0, nb*nd.shape.Size())
		nd.dout = nil
		if nd.dslot >= 0 {
			nd.dout = n.B.View(n.trains[nd.dslot], 0, nb*nd.shape.Size())
		}
		for k, j := range nd.inputs {
			nd.scratch[k] = nil
			if nd.sslot[k] >= 0 {
				nd.scratch[k] = n.B.View(n.trains[nd.sslot[k]], 0, nb*n.nodes[j].shape.Size())
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
// and dropout, and keeps every layer's output for Backward; an inference
// Forward (train false) keeps only what later layers still read, in buffers
// shared by liveness, and cannot be followed by Backward.
func (n *Net) Forward(x gpu.Buffer, batch int, train bool) gpu.Buffer {
	if x.Len() != batch*n.In.Size() {
		panic(fmt.Sprintf("solver: Forward: input of %d elements for %d samples of %v", x.Len(), batch, n.In))
	}
	n.reserveLayers(batch)
	if train {
		n.reserveTrain(batch)
	} else {
		n.reserveEval(batch)
	}
	n.trained = train
	n.pass = Pass{B: n.B, N: batch, Train: train, Rand: n.rand, WS: n.ws}
	for i := range n.nodes {
		nd := &n.nodes[i]
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
		nd.layer.Forward(&n.pass, out, nd.ins)
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
	n.B.Copy(n.nodes[last].dout, dout)
	for i := last; i >= 0; i-- {
		nd := &n.nodes[i]
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
		if !nd.readOut {
			out = nil
		}
		if !nd.readIn {
			for k := range nd.ins {
				nd.ins[k] = nil // the next Forward sets them again
			}
		}
		nd.layer.Backward(&n.pass, nd.dins, nd.dout, nd.ins, out, nd.trains())
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
