package solver

import (
	"errors"
	"fmt"
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
	// Views for the current batch size, rebuilt when it changes, so that a
	// steady-state step allocates nothing.
	out, dout gpu.Buffer
	ins, dins []gpu.Buffer
	// scratch[k] is a view of the net's scratch for input slot k, sized
	// for input k's gradient: used when another consumer wrote it first.
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

	capN      int // batch capacity of the buffers below
	curN      int // batch size the views are built for
	acts      []gpu.Buffer
	dacts     []gpu.Buffer
	scratch   []gpu.Buffer // per input slot, for nodes whose output fans out
	ws        gpu.Buffer
	input     gpu.Buffer
	written   []bool
	pass      Pass
	consumers []int
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
	n.consumers = make([]int, len(n.nodes))
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
		for _, j := range nd.inputs {
			if j >= 0 {
				n.consumers[j]++
			}
		}
	}
	n.written = make([]bool, len(n.nodes))
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
	var rs []Range
	for _, nd := range n.nodes {
		if nd.frozen || nd.params.Len == 0 {
			continue
		}
		if k := len(rs) - 1; k >= 0 && rs[k].Off+rs[k].Len == nd.params.Off {
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
	n.curN = 0 // rebuild the views: which din are nil may have changed
}

// reserve makes the per-batch buffers hold batches of nb samples.
func (n *Net) reserve(nb int) {
	if nb > n.capN {
		n.capN = nb
		n.acts = make([]gpu.Buffer, len(n.nodes))
		n.dacts = make([]gpu.Buffer, len(n.nodes))
		maxIn, ws := 0, 0
		for i, nd := range n.nodes {
			n.acts[i] = n.B.Alloc(nb * nd.shape.Size())
			n.dacts[i] = n.B.Alloc(nb * nd.shape.Size())
			nd.layer.Resize(n.B, nb)
			ws = max(ws, nd.layer.Workspace(nb))
			maxIn = max(maxIn, len(nd.inputs))
		}
		n.input = nil
		n.ws = n.B.Alloc(max(ws, 1))
		n.scratch = make([]gpu.Buffer, maxIn)
		for k := range n.scratch {
			size := 0
			for _, nd := range n.nodes {
				if k < len(nd.inputs) && nd.inputs[k] >= 0 {
					size = max(size, n.nodes[nd.inputs[k]].shape.Size())
				}
			}
			n.scratch[k] = n.B.Alloc(max(nb*size, 1))
		}
		n.curN = 0
	}
	if nb == n.curN {
		return
	}
	n.curN = nb
	for i := range n.nodes {
		nd := &n.nodes[i]
		sz := nb * nd.shape.Size()
		nd.out = n.B.View(n.acts[i], 0, sz)
		nd.dout = n.B.View(n.dacts[i], 0, sz)
		nd.ins = make([]gpu.Buffer, len(nd.inputs))
		nd.dins = make([]gpu.Buffer, len(nd.inputs))
		nd.scratch = make([]gpu.Buffer, len(nd.inputs))
		for k, j := range nd.inputs {
			if j >= 0 && n.consumers[j] > 1 {
				nd.scratch[k] = n.B.View(n.scratch[k], 0, nb*n.nodes[j].shape.Size())
			}
		}
	}
	n.pass = Pass{B: n.B, N: nb, WS: n.ws}
}

// Forward runs the network on x (batch×In) and returns its output
// (batch×Out), valid until the next Forward. train selects batch statistics
// and dropout.
func (n *Net) Forward(x gpu.Buffer, batch int, train bool) gpu.Buffer {
	if x.Len() != batch*n.In.Size() {
		panic(fmt.Sprintf("solver: Forward: input of %d elements for %d samples of %v", x.Len(), batch, n.In))
	}
	n.reserve(batch)
	n.pass.Train, n.pass.Rand = train, n.rand
	for i := range n.nodes {
		nd := &n.nodes[i]
		for k, j := range nd.inputs {
			if j == Input {
				nd.ins[k] = x
			} else {
				nd.ins[k] = n.nodes[j].out
			}
		}
		nd.layer.Forward(&n.pass, nd.out, nd.ins)
	}
	return n.nodes[len(n.nodes)-1].out
}

// Backward back-propagates dout (the loss gradient of the last Forward's
// output) and sets Grads for every trainable layer. It must follow a
// Forward with train set.
func (n *Net) Backward(dout gpu.Buffer) {
	last := len(n.nodes) - 1
	n.B.Copy(n.nodes[last].dout, dout)
	clear(n.written)
	n.written[last] = true
	for i := last; i >= 0; i-- {
		nd := &n.nodes[i]
		if !nd.active || !n.written[i] {
			continue
		}
		// The first consumer (in reverse order) of a node writes its gradient
		// in place; later ones write scratch that is then added in.
		for k, j := range nd.inputs {
			nd.dins[k] = nil
			if !nd.needDIn[k] {
				continue
			}
			if n.written[j] {
				nd.dins[k] = nd.scratch[k]
			} else {
				nd.dins[k] = n.nodes[j].dout
			}
		}
		nd.layer.Backward(&n.pass, nd.dins, nd.dout, nd.ins, nd.out, !nd.frozen && nd.params.Len > 0)
		for k, j := range nd.inputs {
			if nd.dins[k] == nil {
				continue
			}
			if n.written[j] {
				n.B.Axpy(1, nd.dins[k], n.nodes[j].dout)
			}
			n.written[j] = true
		}
	}
}
