package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// Dropout zeroes each element with probability P in training and scales the
// survivors by 1/(1-P) (inverted dropout, as PyTorch's nn.Dropout), so eval
// mode is the identity and needs no rescaling.
//
// Each training Forward draws one uint64 seed from Pass.Rand and has the
// backend make the mask from it on the device (gpu.Backend.DropoutMask: a
// counter-based generator of the seed and the element's index), so no mask
// crosses the host boundary; y = x*mask and dx = dy*mask. A seeded
// generator therefore gives the same masks on every backend. With P == 0 the
// layer is an exact copy and draws nothing from the generator.
type Dropout struct {
	Base
	P    float32
	size int // elements per sample

	// The mask on the device, allocated in Resize for up to capN samples.
	// view is the mask for the current batch size viewN, rebuilt only when
	// that size changes.
	mask   gpu.Buffer
	capN   int
	view   gpu.Buffer
	viewN  int
	masked bool // the last Forward applied a mask (training, P > 0)
}

var _ Layer = (*Dropout)(nil)

// NewDropout returns a dropout layer with drop probability p, in [0, 1)
// (checked by Setup).
func NewDropout(name string, p float32) *Dropout {
	return &Dropout{Base: Base{LayerName: name}, P: p}
}

// Kind implements Layer.
func (*Dropout) Kind() string { return "dropout" }

// Setup implements Layer. The output shape is the input shape.
func (l *Dropout) Setup(in []Shape) (Shape, error) {
	s, err := one("dropout", in)
	if err != nil {
		return Shape{}, err
	}
	if !(l.P >= 0 && l.P < 1) {
		return Shape{}, fmt.Errorf("solver: dropout %s: probability %v, want in [0, 1)", l.LayerName, l.P)
	}
	l.size = s.Size()
	return s, nil
}

// Resize implements Layer: the mask for n samples.
func (l *Dropout) Resize(b gpu.Backend, n int) {
	if n <= l.capN || l.P == 0 {
		return
	}
	l.capN = n
	l.mask = b.Alloc(n * l.size)
	l.viewN = 0
}

// Forward implements Layer. x, y: N×size.
func (l *Dropout) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	if p.Replay {
		// The mask of the Forward this one recomputes, still in the layer's
		// own buffer: the same output, and the generator left as it was.
		if !l.masked {
			p.B.Copy(out, in[0])
			return
		}
		p.B.Mul(out, in[0], l.view)
		return
	}
	l.masked = p.Train && l.P > 0
	if !l.masked {
		p.B.Copy(out, in[0])
		return
	}
	if p.N > l.capN {
		panic(fmt.Sprintf("solver: dropout %s: batch %d beyond the %d prepared by Resize", l.LayerName, p.N, l.capN))
	}
	if p.Rand == nil {
		panic(fmt.Sprintf("solver: dropout %s: training pass without Pass.Rand", l.LayerName))
	}
	if p.N != l.viewN {
		l.viewN = p.N
		l.view = p.B.View(l.mask, 0, p.N*l.size)
	}
	p.B.DropoutMask(l.view, p.Rand.Uint64(), l.P)
	p.B.Mul(out, in[0], l.view)
}

// BackwardReads implements BackwardReader: nothing (the mask is the
// layer's own).
func (*Dropout) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: dx = dy*mask of the last Forward (dy itself
// after an eval-mode or P == 0 Forward).
func (l *Dropout) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] == nil {
		return
	}
	if !l.masked {
		p.B.Copy(din[0], dout)
		return
	}
	p.B.Mul(din[0], dout, l.view)
}

// scratch implements batchScratcher: the mask of n samples (none when P is 0).
func (l *Dropout) scratch(n int) int {
	if l.P == 0 {
		return 0
	}
	return n * l.size
}
