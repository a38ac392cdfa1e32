// Package solver runs networks forward and backward on a gpu.Backend: layers,
// the network that owns their parameters in one flat buffer, the loss, the
// optimizers and learning-rate schedules.
//
// Caller's duties:
//  1. Build the layers (NewConv2D, NewLinear, ...) and hand them, in
//     topological order, to NewNet with the per-sample input shape.
//  2. Initialise the parameters (Net.InitParams with a seeded generator) or
//     load them (Net.Params is one flat buffer; models reads and writes it).
//  3. Freeze what must not learn (Net.Freeze, Net.FreezeAllButLast) before the
//     first Backward.
//  4. Per step: Forward, a Loss on its output, Backward with the loss's
//     gradient, then an Optimizer.Step over Net.Trainable() ranges. The flat
//     gradient Net.Grads is what cooperative training pushes over the network.
//     Backward needs the training Forward just before it: an inference
//     Forward (train false, for evaluation) keeps only the outputs later
//     layers still read, in a few shared buffers, and Backward refuses it.
//
// Shapes are per sample (C×H×W; a vector is C×1×1); the batch size is passed
// at each call. Parameter order follows PyTorch's parameters(), so flat
// vectors compare directly with a PyTorch model's.
package solver

import (
	"fmt"
	"math/rand/v2"

	"github.com/cotrain/cotrain/gpu"
)

// Shape is a per-sample tensor shape: channels, height, width.
type Shape struct{ C, H, W int }

// Size is the number of elements of one sample.
func (s Shape) Size() int { return s.C * s.H * s.W }

func (s Shape) String() string { return fmt.Sprintf("%dx%dx%d", s.C, s.H, s.W) }

// Init names how a parameter starts.
type Init uint8

const (
	// InitFanIn draws from U(-1/sqrt(fanIn), 1/sqrt(fanIn)): PyTorch's default
	// for conv and linear weights and biases (kaiming_uniform with a=sqrt(5)).
	InitFanIn Init = iota
	InitZeros
	InitOnes
	// InitNormal draws from N(0, 1): PyTorch's default for nn.Embedding.
	InitNormal
	// InitQuarter sets 0.25: PyTorch's default for nn.PReLU's slopes.
	InitQuarter
)

// ParamSpec describes one parameter or state tensor of a layer.
type ParamSpec struct {
	Name  string // "weight", "bias", "running_mean", ...
	Dims  []int  // PyTorch's layout, e.g. [K, C/groups, R, S]
	Init  Init
	FanIn int // for InitFanIn
}

// Size is the number of elements.
func (p ParamSpec) Size() int {
	n := 1
	for _, d := range p.Dims {
		n *= d
	}
	return n
}

// Pass carries what one forward or backward call needs besides its tensors.
type Pass struct {
	B     gpu.Backend
	N     int        // batch size of this call
	Train bool       // training mode: batch statistics, dropout on
	Rand  *rand.Rand // for dropout; seeded by the caller
	WS    gpu.Buffer // shared scratch, at least the largest Workspace(N)
	// Replay marks a training Forward that recomputes, for Backward, what
	// the last training Forward computed on the same input (recompute.go):
	// it must give the same output bits and leave what that Forward left
	// for Backward, without changing anything else a second time. Batch
	// norm computes the same batch statistics but leaves the running ones
	// alone; dropout applies the mask it drew, drawing nothing.
	Replay bool
	// NoKeep asks layers not to ask the backend for buffers of their own
	// that a training Forward fills for Backward (a convolution's column
	// matrices, max pooling's positions): under a memory budget
	// (Net.SetMemoryBudget) the step holds only what the plan counts.
	NoKeep bool
}

// Layer is one node of a network. Forward and Backward are called with
// buffers of exactly N samples (p.N); they must not allocate per call on a
// steady batch size.
type Layer interface {
	// Name is unique within a network ("conv1"); Kind is the layer type ("conv2d").
	Name() string
	Kind() string
	// Setup checks the per-sample input shapes and returns the output shape.
	// It is called once, before Params, State and Bind.
	Setup(in []Shape) (Shape, error)
	// Params lists the trainable tensors, State the saved but untrained ones
	// (batch norm's running statistics).
	Params() []ParamSpec
	State() []ParamSpec
	// Bind hands the layer views of the network's flat buffers, one per spec.
	Bind(b gpu.Backend, params, grads, state []gpu.Buffer)
	// Resize prepares per-batch scratch for batches of up to n samples.
	Resize(b gpu.Backend, n int)
	// Workspace is the shared scratch (elements) a call with n samples needs.
	Workspace(n int) int
	// Forward sets out from in.
	Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer)
	// Backward sets din[i] (skipping nil entries) from dout, and, when
	// paramGrads is set, the layer's parameter gradients. It may use the
	// forward pass's in and out, which are unchanged since Forward.
	Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, out gpu.Buffer, paramGrads bool)
}

// BackwardReader is implemented by layers that say which of the tensors
// that Backward receives from the forward pass it reads. The network keeps
// only those from a training Forward to Backward; the others share memory
// with tensors that live later, and Backward is then given nil in their
// place (so a layer that reads what it said it would not fails loudly). A
// layer that does not implement it is given all of them.
type BackwardReader interface {
	// BackwardReads reports whether Backward, called with paramGrads as
	// given, reads its inputs (every in[k]) and its output.
	BackwardReads(paramGrads bool) (in, out bool)
}

// Base gives a layer its name and default no-op methods; layers embed it.
type Base struct {
	LayerName string
	P, G, S   []gpu.Buffer // bound views: params, grads, state
}

// Name implements Layer.
func (b *Base) Name() string { return b.LayerName }

// Params implements Layer: none.
func (*Base) Params() []ParamSpec { return nil }

// State implements Layer: none.
func (*Base) State() []ParamSpec { return nil }

// Bind implements Layer.
func (b *Base) Bind(_ gpu.Backend, params, grads, state []gpu.Buffer) {
	b.P, b.G, b.S = params, grads, state
}

// Resize implements Layer: nothing to prepare.
func (*Base) Resize(gpu.Backend, int) {}

// Workspace implements Layer: none.
func (*Base) Workspace(int) int { return 0 }

// one checks a single-input layer's inputs.
func one(kind string, in []Shape) (Shape, error) {
	if len(in) != 1 {
		return Shape{}, fmt.Errorf("solver: %s takes 1 input, got %d", kind, len(in))
	}
	return in[0], nil
}
