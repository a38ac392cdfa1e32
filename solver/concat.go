package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// Concat joins its inputs along the channel axis (ONNX's Concat with
// axis 1, torch.cat(dim=1)): inputs C_i×H×W give (ΣC_i)×H×W, in input order.
// It has no parameters.
//
// NCHW puts each sample's channels in one contiguous run, so input i of
// sample n is one run of the output: each input is one strided copy over
// all samples (gpu.CopyStrided: N runs of C_i·H·W elements, one launch on
// a device, no views made per call).
type Concat struct {
	Base
	chans []int             // elements per sample of each input
	total int               // elements per sample of the output
	geoms []gpu.StridedGeom // input i into its runs of the output
}

var _ Layer = (*Concat)(nil)

// NewConcat returns a channel concatenation layer; the inputs come from the
// node's Inputs (at least 2).
func NewConcat(name string) *Concat { return &Concat{Base: Base{LayerName: name}} }

// Kind implements Layer.
func (*Concat) Kind() string { return "concat" }

// Setup implements Layer: the inputs must agree in height and width.
func (l *Concat) Setup(in []Shape) (Shape, error) {
	if len(in) < 2 {
		return Shape{}, fmt.Errorf("solver: concat %s takes at least 2 inputs, got %d", l.LayerName, len(in))
	}
	out := Shape{0, in[0].H, in[0].W}
	l.chans, l.total = make([]int, len(in)), 0
	for i, s := range in {
		if s.H != out.H || s.W != out.W || s.C <= 0 || s.H <= 0 || s.W <= 0 {
			return Shape{}, fmt.Errorf("solver: concat %s: input %d is %v, input 0 is %v (only channels may differ)", l.LayerName, i, s, in[0])
		}
		out.C += s.C
		l.chans[i] = s.Size()
		l.total += s.Size()
	}
	l.geoms = make([]gpu.StridedGeom, len(in))
	off := 0
	for i, sz := range l.chans {
		l.geoms[i] = gpu.StridedGeom{Dims: []int{1, sz}, Dst: []int{l.total, 1}, Src: []int{sz, 1}, DstOff: off}
		off += sz
	}
	return out, nil
}

// Forward implements Layer. out[n] = in[0][n] ‖ in[1][n] ‖ ... per sample.
func (l *Concat) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	for i, x := range in {
		p.B.CopyStrided(out, x, atN(l.geoms[i], p.N), false)
	}
}

// BackwardReads implements BackwardReader: nothing.
func (*Concat) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: each input's gradient is its slice of dout.
func (l *Concat) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	for i, d := range din {
		if d != nil {
			p.B.CopyStrided(d, dout, swap(atN(l.geoms[i], p.N)), false)
		}
	}
}
