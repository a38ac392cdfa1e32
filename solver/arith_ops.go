package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// Binary is an elementwise binary operation of the operator table
// (gpu/binops.go: +, −, ×, ÷, max, min, power; ONNX's Add, Sub, Mul, Div,
// Max, Min, Pow) with numpy broadcasting: between two activations (a squeeze-excitation gate,
// N×C×H×W × N×C×1×1), or between an activation and a constant (a scalar or
// per-channel tensor of the graph, which is not trained).
//
// A and B are the per-sample dims of the two operands, aligned to the
// output's rank (numpy's rule: an operand of lower rank gets leading 1s, and
// an axis of size 1 broadcasts). With Const set the layer has one input, the
// activation, and the constant (dims B, shared by every sample) is the right
// operand, or the left one when ConstFirst (c − x, c / x).
type Binary struct {
	Base
	Op         gpu.BinOp
	A, B       []int
	Const      []float32
	ConstFirst bool

	out    []int
	cbuf   gpu.Buffer // the constant on the backend
	fwd    gpu.BroadcastGeom
	sa, sb []int // strides of the operands (batch first), 0 on broadcast axes
	contig []int // the output's strides
	redA   gpu.ReduceGeom
	redB   gpu.ReduceGeom
	tmp    gpu.Buffer // Backward's view of the workspace
	wsLen  int        // the length of the workspace tmp views
}

var _ Layer = (*Binary)(nil)

// NewBinary returns a broadcast operation between two activations of
// per-sample dims a and b.
func NewBinary(name string, op gpu.BinOp, a, b []int) *Binary {
	return &Binary{Base: Base{LayerName: name}, Op: op, A: a, B: b}
}

// NewBinaryConst returns a broadcast operation between an activation of
// per-sample dims a and the constant c of dims b (c op x when constFirst).
func NewBinaryConst(name string, op gpu.BinOp, a, b []int, c []float32, constFirst bool) *Binary {
	return &Binary{Base: Base{LayerName: name}, Op: op, A: a, B: b, Const: c, ConstFirst: constFirst}
}

// Kind implements Layer.
func (*Binary) Kind() string { return "binary" }

// OutDims returns the per-sample output dims (after Setup).
func (l *Binary) OutDims() []int { return l.out }

// Setup implements Layer.
func (l *Binary) Setup(in []Shape) (Shape, error) {
	want := 2
	if l.Const != nil {
		want = 1
	}
	if len(in) != want {
		return Shape{}, fmt.Errorf("solver: binary %s takes %d inputs, got %d", l.LayerName, want, len(in))
	}
	if _, ok := l.Op.Entry(); !ok {
		return Shape{}, fmt.Errorf("solver: binary %s: unknown operation %d", l.LayerName, l.Op)
	}
	if err := checkDims("binary", l.LayerName, l.A, in[0]); err != nil {
		return Shape{}, err
	}
	if l.Const != nil {
		if err := boundedDims("binary", l.LayerName, "constant dims", l.B); err != nil {
			return Shape{}, err
		}
		if prod(l.B) != len(l.Const) {
			return Shape{}, fmt.Errorf("solver: binary %s: constant of %d values for dims %v", l.LayerName, len(l.Const), l.B)
		}
	} else if err := checkDims("binary", l.LayerName, l.B, in[1]); err != nil {
		return Shape{}, err
	}
	if len(l.A) != len(l.B) {
		return Shape{}, fmt.Errorf("solver: binary %s: operand dims %v and %v differ in rank (align them first)", l.LayerName, l.A, l.B)
	}
	l.out = make([]int, len(l.A))
	for k := range l.A {
		a, b := l.A[k], l.B[k]
		if a != b && a != 1 && b != 1 {
			return Shape{}, fmt.Errorf("solver: binary %s: dims %v and %v do not broadcast", l.LayerName, l.A, l.B)
		}
		l.out[k] = max(a, b)
	}
	if err := boundedDims("binary", l.LayerName, "output dimensions", l.out); err != nil {
		return Shape{}, err
	}
	l.sa, l.sb = stridesOf(l.A, l.out, false), stridesOf(l.B, l.out, l.Const != nil)
	l.contig = gpu.ContiguousStrides(batched(1, l.out))
	l.fwd = gpu.BroadcastGeom{Dims: batched(1, l.out), A: l.sa, B: l.sb}
	if l.ConstFirst {
		l.fwd.A, l.fwd.B = l.sb, l.sa
	}
	l.redA = gpu.ReduceGeom{In: l.fwd.Dims, Out: batched(1, l.A)}
	l.redB = gpu.ReduceGeom{In: l.fwd.Dims, Out: batched(1, l.B)}
	return DimsShape(l.out), nil
}

// Bind implements Layer: the constant goes to the backend.
func (l *Binary) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.Base.Bind(b, params, grads, state)
	if l.Const != nil {
		l.cbuf = b.Alloc(len(l.Const))
		b.Upload(l.cbuf, l.Const)
	}
}

// Workspace implements Layer: an operand's share of the gradient before
// its sum over the axes where it was broadcast.
func (l *Binary) Workspace(n int) int {
	if l.broadcast(l.redA) || (l.Const == nil && l.broadcast(l.redB)) {
		return n * prod(l.out)
	}
	return 0
}

// broadcast reports whether an operand reduced by red was broadcast: its
// gradient is a sum, not the partial itself.
func (l *Binary) broadcast(red gpu.ReduceGeom) bool { return !slices.Equal(red.Out[1:], l.out) }

// operands returns the left and right operand buffers.
func (l *Binary) operands(in []gpu.Buffer) (left, right gpu.Buffer) {
	switch {
	case l.Const == nil:
		return in[0], in[1]
	case l.ConstFirst:
		return l.cbuf, in[0]
	}
	return in[0], l.cbuf
}

// Forward implements Layer: out = left op right, broadcast.
func (l *Binary) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	left, right := l.operands(in)
	l.fwd.Dims[0] = p.N
	p.B.Broadcast(l.Op, out, left, right, l.fwd)
}

// BackwardReads implements BackwardReader: what the operator table's
// partial derivatives read (gpu.BinaryOp.Reads: the operands, the output).
func (l *Binary) BackwardReads(bool) (in, out bool) {
	e, _ := l.Op.Entry()
	for _, r := range e.Reads {
		in = in || r.X || r.Y
		out = out || r.R
	}
	return in, out
}

// Backward implements Layer. Each activation operand's gradient is its
// share of dout, gpu.BinaryOp.Partial through the backend's
// BroadcastPartial, summed over the axes where it was broadcast.
func (l *Binary) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, out gpu.Buffer, _ bool) {
	left, right := l.operands(in)
	n := p.N
	l.fwd.Dims[0] = n
	e, _ := l.Op.Entry()
	// Which operand each input is, and the reduction to that operand's dims.
	type side struct {
		d   gpu.Buffer
		wrt int
		red gpu.ReduceGeom
	}
	first := side{din[0], 0, l.redA}
	if l.ConstFirst {
		first.wrt = 1
	}
	sides := [2]side{first, {}}
	if l.Const == nil {
		sides[1] = side{din[1], 1, l.redB}
	}
	var tmp gpu.Buffer
	if w := l.Workspace(n); w > 0 {
		// A view made afresh would allocate on some backends: keep it while
		// the batch and the workspace's size stay.
		if l.tmp == nil || l.tmp.Len() != w || l.wsLen != p.WS.Len() {
			l.tmp, l.wsLen = p.B.View(p.WS, 0, w), p.WS.Len()
		}
		tmp = l.tmp
	}
	for _, s := range sides {
		if s.d == nil {
			continue
		}
		var y gpu.Buffer
		if e.Reads[s.wrt].R {
			y = out
		}
		a, b, g := left, right, l.fwd
		if r := e.Reads[s.wrt]; !r.X && !r.Y {
			// The partial reads neither operand (±dout), and the network
			// need not have kept them: dout stands in, read in place.
			a, b, g = dout, dout, gpu.BroadcastGeom{Dims: l.fwd.Dims, A: l.contig, B: l.contig}
		}
		s.red.In[0], s.red.Out[0] = n, n
		if !l.broadcast(s.red) {
			// Not broadcast: the partial is the gradient, written in place.
			p.B.BroadcastPartial(l.Op, s.wrt, s.d, dout, a, b, y, g)
			continue
		}
		p.B.BroadcastPartial(l.Op, s.wrt, tmp, dout, a, b, y, g)
		p.B.ReduceSum(s.d, tmp, s.red, 1)
	}
}

// Reduce sums or averages its input (per-sample dims In) over the
// per-sample axes Axes: ONNX's ReduceMean and ReduceSum. The output keeps
// the reduced axes with size 1; dropping them (keepdims 0) changes only the
// logical dims, which the importer tracks.
type Reduce struct {
	Base
	In   []int
	Axes []int
	Mean bool

	out   []int
	fwd   gpu.ReduceGeom
	bwd   gpu.StridedGeom
	scale float32
}

var _ Layer = (*Reduce)(nil)

// NewReduce returns a sum (or mean) over per-sample axes of dims in.
func NewReduce(name string, in, axes []int, mean bool) *Reduce {
	return &Reduce{Base: Base{LayerName: name}, In: in, Axes: axes, Mean: mean}
}

// Kind implements Layer.
func (*Reduce) Kind() string { return "reduce" }

// OutDims returns the per-sample output dims, reduced axes kept as 1.
func (l *Reduce) OutDims() []int { return l.out }

// Setup implements Layer.
func (l *Reduce) Setup(in []Shape) (Shape, error) {
	s, err := one("reduce", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("reduce", l.LayerName, l.In, s); err != nil {
		return Shape{}, err
	}
	if len(l.Axes) == 0 {
		return Shape{}, fmt.Errorf("solver: reduce %s: no axes", l.LayerName)
	}
	l.out = slices.Clone(l.In)
	count := 1
	for _, a := range l.Axes {
		if a < 0 || a >= len(l.In) || l.out[a] == 1 && l.In[a] != 1 {
			return Shape{}, fmt.Errorf("solver: reduce %s: axes %v of %d dims", l.LayerName, l.Axes, len(l.In))
		}
		count *= l.In[a]
		l.out[a] = 1
	}
	l.scale = 1
	if l.Mean {
		l.scale = 1 / float32(count)
	}
	l.fwd = gpu.ReduceGeom{In: batched(1, l.In), Out: batched(1, l.out)}
	l.bwd = gpu.StridedGeom{Dims: batched(1, l.In), Dst: gpu.ContiguousStrides(batched(1, l.In)), Src: stridesOf(l.out, l.In, false)}
	return DimsShape(l.out), nil
}

// Forward implements Layer.
func (l *Reduce) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	l.fwd.In[0], l.fwd.Out[0] = p.N, p.N
	p.B.ReduceSum(out, in[0], l.fwd, l.scale)
}

// BackwardReads implements BackwardReader: nothing.
func (*Reduce) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: dout broadcast back over the reduced axes,
// times 1/count for a mean.
func (l *Reduce) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] == nil {
		return
	}
	p.B.CopyStrided(din[0], dout, atN(l.bwd, p.N), false)
	if l.scale != 1 {
		p.B.Scale(din[0], l.scale)
	}
}
