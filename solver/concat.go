package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// Concat joins its inputs along the channel axis (ONNX's Concat with
// axis 1, torch.cat(dim=1)): inputs C_i×H×W give (ΣC_i)×H×W, in input order.
// It has no parameters.
//
// NCHW puts each sample's channels in one contiguous run, so the copy is one
// Copy per sample and input between backend views. Creating those views
// allocates a small header on some backends (N·inputs per call); Concat is
// the one layer that does not meet the steady-state no-allocation goal, a
// cost that is negligible beside the convolutions around it.
type Concat struct {
	Base
	chans []int // elements per sample of each input
	total int   // elements per sample of the output
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
	return out, nil
}

// Forward implements Layer. out[n] = in[0][n] ‖ in[1][n] ‖ ... per sample.
func (l *Concat) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	for n := 0; n < p.N; n++ {
		off := n * l.total
		for i, x := range in {
			sz := l.chans[i]
			p.B.Copy(p.B.View(out, off, sz), p.B.View(x, n*sz, sz))
			off += sz
		}
	}
}

// BackwardReads implements BackwardReader: nothing.
func (*Concat) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: each input's gradient is its slice of dout.
func (l *Concat) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	for n := 0; n < p.N; n++ {
		off := n * l.total
		for i, d := range din {
			sz := l.chans[i]
			if d != nil {
				p.B.Copy(p.B.View(d, n*sz, sz), p.B.View(dout, off, sz))
			}
			off += sz
		}
	}
}
