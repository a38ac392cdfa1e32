package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// PReLU is x > 0 ? x : w·x with a learnable slope w (PyTorch's nn.PReLU,
// ONNX's PRelu): one slope for every element (Slopes 1, nn.PReLU()'s
// default) or one per channel (Slopes C, nn.PReLU(num_parameters=C)). The
// slope is the parameter "weight", initialised to 0.25 as PyTorch does.
//
// It is composed from the backend's ReLU, Axpy, Mul and broadcast
// operations, so every backend runs it without a kernel of its own:
// min(x, 0) is x − max(x, 0), exactly; the output max(x, 0) + w·min(x, 0)
// is w·x rounded once where x <= 0, PyTorch's value. The backward pass
// gives dx = dy where x > 0 and w·dy elsewhere (x = 0 included, as
// PyTorch), and dw = Σ dy·min(x, 0) over the batch and the positions (and
// the channels, for one slope).
type PReLU struct {
	Base
	Slopes int

	c, hw int
	geom  gpu.BroadcastGeom // N×C×HW times the slopes broadcast
	red   gpu.ReduceGeom    // N×C×HW summed to the slopes' 1×Slopes×1
	tmp   gpu.Buffer
	wsLen int
}

// NewPReLU returns a PReLU layer with slopes slopes (1, or the channels).
func NewPReLU(name string, slopes int) *PReLU {
	return &PReLU{Base: Base{LayerName: name}, Slopes: slopes}
}

// Kind implements Layer.
func (*PReLU) Kind() string { return "prelu" }

// Setup implements Layer: Slopes must be 1 or the input's channels.
func (l *PReLU) Setup(in []Shape) (Shape, error) {
	s, err := one(l.Kind(), in)
	if err != nil {
		return Shape{}, err
	}
	if l.Slopes != 1 && l.Slopes != s.C {
		return Shape{}, fmt.Errorf("solver: %s: %d slopes for %d channels (want 1 or %d)", l.LayerName, l.Slopes, s.C, s.C)
	}
	l.c, l.hw = s.C, s.H*s.W
	chanStride := 0
	if l.Slopes > 1 {
		chanStride = 1
	}
	l.geom = gpu.BroadcastGeom{Dims: []int{1, l.c, l.hw}, A: []int{l.c * l.hw, l.hw, 1}, B: []int{0, chanStride, 0}}
	l.red = gpu.ReduceGeom{In: []int{1, l.c, l.hw}, Out: []int{1, l.Slopes, 1}}
	return s, nil
}

// Params implements Layer.
func (l *PReLU) Params() []ParamSpec {
	return []ParamSpec{{Name: "weight", Dims: []int{l.Slopes}, Init: InitQuarter}}
}

// Workspace implements Layer: one tensor the size of the input.
func (l *PReLU) Workspace(n int) int { return n * l.c * l.hw }

// scratch returns the workspace's first n samples' worth.
func (l *PReLU) scratch(p *Pass) gpu.Buffer {
	w := l.Workspace(p.N)
	// A view made afresh would allocate on some backends: keep it while the
	// batch and the workspace stay.
	if l.tmp == nil || l.tmp.Len() != w || l.wsLen != p.WS.Len() {
		l.tmp, l.wsLen = p.B.View(p.WS, 0, w), p.WS.Len()
	}
	return l.tmp
}

// Forward implements Layer: out = max(x, 0) + w·(x − max(x, 0)).
func (l *PReLU) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	t := l.scratch(p)
	p.B.Activate(gpu.ReLU, out, in[0])
	p.B.Copy(t, in[0])
	p.B.Axpy(-1, out, t) // min(x, 0), exactly
	l.geom.Dims[0] = p.N
	p.B.Broadcast(gpu.BinMul, t, t, l.P[0], l.geom)
	p.B.Axpy(1, t, out)
}

// BackwardReads implements BackwardReader: the input.
func (*PReLU) BackwardReads(bool) (in, out bool) { return true, false }

// Backward implements Layer.
func (l *PReLU) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	t := l.scratch(p)
	l.geom.Dims[0], l.red.In[0] = p.N, p.N
	if paramGrads {
		p.B.Activate(gpu.ReLU, t, in[0])
		p.B.Scale(t, -1)
		p.B.Axpy(1, in[0], t) // min(x, 0)
		p.B.Mul(t, t, dout)
		p.B.ReduceSum(l.G[0], t, l.red, 1)
	}
	if din[0] == nil {
		return
	}
	dx := din[0]
	p.B.ActivateBackward(gpu.ReLU, dx, dout, in[0]) // dy where x > 0
	p.B.Copy(t, dout)
	p.B.Axpy(-1, dx, t) // dy where x <= 0, exactly
	p.B.Broadcast(gpu.BinMul, t, t, l.P[0], l.geom)
	p.B.Axpy(1, t, dx)
}
