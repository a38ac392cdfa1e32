package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/internal/limits"
)

// ConvTranspose2D is a transposed 2-D convolution (PyTorch's
// nn.ConvTranspose2d, ONNX's ConvTranspose): the adjoint of the
// convolution of the same weights, W of In×(Out/Groups)×KH×KW, plus a bias
// of Out. Its output is (H-1)·S − 2·P + (K-1)·D + 1 + OutPad high (and so
// wide), D the dilation (1 when DH, DW are 0 or 1).
//
// It needs no kernel of its own: with the convolution g that maps an
// Out×OH×OW input to an In×H×W output through W (the layer's Adj),
//   - Forward is g's backward-data (dx of g from dy = x), then the bias;
//   - the input gradient is g's forward (with no bias) of dy;
//   - the filter gradient is g's backward-filter with the roles swapped:
//     g's "input" is this layer's dy and g's "output gradient" its x;
//   - the bias gradient is dy's sum over the batch and the positions.
//
// A dilated one (PyTorch's dilation, ONNX's dilations) is composed as
// DilatedConv2D is: each Forward spreads the compact weights into a
// zero-dilated kernel of (KH-1)·DH+1 × (KW-1)·DW+1 taps, which the adjoint
// convolution uses, and the filter gradient is that kernel's at the taps.
type ConvTranspose2D struct {
	Base
	Cfg              ConvConfig // Out: output channels; PadH, PadW: the padding removed
	OutPadH, OutPadW int        // extra rows and columns at the end (output_padding)
	// DH and DW are the dilations (0 or 1: none), set before Setup.
	DH, DW int
	// Adj is the adjoint convolution's geometry (N set per call): C, H, W
	// are this layer's output, K, OH, OW its input; R, S are the dilated
	// kernel's extent.
	Adj gpu.ConvGeom
	b   gpu.Backend

	wideW, wideG gpu.Buffer      // a dilated layer's spread kernel and its gradient
	spread       gpu.StridedGeom // compact kernel → the spread one's taps
}

var _ Layer = (*ConvTranspose2D)(nil)

// NewConvTranspose2D returns a transposed convolution; zero strides and
// groups mean 1 and KW 0 a square kernel, as for NewConv2D.
func NewConvTranspose2D(name string, cfg ConvConfig, outPadH, outPadW int) *ConvTranspose2D {
	return &ConvTranspose2D{Base: Base{LayerName: name}, Cfg: NewConv2D(name, cfg).Cfg, OutPadH: outPadH, OutPadW: outPadW}
}

// Kind implements Layer.
func (*ConvTranspose2D) Kind() string { return "convtranspose2d" }

// Setup implements Layer. Its errors name the offending field.
func (l *ConvTranspose2D) Setup(in []Shape) (Shape, error) {
	s, err := one("convtranspose2d", in)
	if err != nil {
		return Shape{}, err
	}
	c := l.Cfg
	bad := func(err error) (Shape, error) {
		return Shape{}, fmt.Errorf("solver: convtranspose2d %s: %w", l.LayerName, err)
	}
	for _, f := range []struct {
		what     string
		v        int
		positive bool
	}{{"kernel height", c.KH, true}, {"kernel width", c.KW, true}, {"stride height", c.StrideH, true},
		{"stride width", c.StrideW, true}, {"pad height", c.PadH, false}, {"pad width", c.PadW, false},
		{"output padding height", l.OutPadH, false}, {"output padding width", l.OutPadW, false},
		{"dilation height", l.DH, false}, {"dilation width", l.DW, false}} {
		if _, err := limits.Extent(f.what, int64(f.v), f.positive); err != nil {
			return bad(err)
		}
	}
	switch {
	case c.Out <= 0 || c.Groups <= 0:
		return bad(fmt.Errorf("%d output channels in %d groups, want positive", c.Out, c.Groups))
	case s.C%c.Groups != 0 || c.Out%c.Groups != 0:
		return bad(fmt.Errorf("channels %d in and %d out not divisible by groups %d", s.C, c.Out, c.Groups))
	case l.OutPadH >= c.StrideH || l.OutPadW >= c.StrideW:
		// PyTorch also allows output padding below the dilation; such rows
		// lie past every tap of the adjoint convolution, which this layer
		// runs on.
		return bad(fmt.Errorf("output padding %dx%d not below the stride %dx%d", l.OutPadH, l.OutPadW, c.StrideH, c.StrideW))
	}
	dh, dw := max(l.DH, 1), max(l.DW, 1)
	// The dilated extent within limits before it sizes anything.
	// In 64 bits: on a 32-bit build the product of two extents overflows.
	rh, err := limits.Extent("dilated kernel height", int64(c.KH-1)*int64(dh)+1, true)
	if err != nil {
		return bad(err)
	}
	rw, err := limits.Extent("dilated kernel width", int64(c.KW-1)*int64(dw)+1, true)
	if err != nil {
		return bad(err)
	}
	oh := (s.H-1)*c.StrideH - 2*c.PadH + rh + l.OutPadH
	ow := (s.W-1)*c.StrideW - 2*c.PadW + rw + l.OutPadW
	if oh <= 0 || ow <= 0 {
		return bad(fmt.Errorf("output %dx%d from input %v", oh, ow, s))
	}
	l.spread = gpu.StridedGeom{}
	if dh > 1 || dw > 1 {
		l.spread = gpu.StridedGeom{
			Dims: []int{s.C * c.Out / c.Groups, c.KH, c.KW},
			Dst:  []int{rh * rw, dh * rw, dw},
			Src:  []int{c.KH * c.KW, c.KW, 1},
		}
	}
	l.Adj = gpu.ConvGeom{C: c.Out, H: oh, W: ow, K: s.C, R: rh, S: rw,
		StrideH: c.StrideH, StrideW: c.StrideW, PadH: c.PadH, PadW: c.PadW, Groups: c.Groups}
	if err := l.Adj.Setup(); err != nil {
		return bad(err)
	}
	if l.Adj.OH != s.H || l.Adj.OW != s.W {
		// Cannot happen for the sizes above; a bug if it does.
		return bad(fmt.Errorf("the adjoint convolution maps %dx%d to %dx%d, not the input's %dx%d", oh, ow, l.Adj.OH, l.Adj.OW, s.H, s.W))
	}
	return Shape{c.Out, oh, ow}, nil
}

// Params implements Layer: weight [In, Out/Groups, KH, KW], then bias [Out]
// (PyTorch's layout; its fan-in is Out/Groups·KH·KW, as PyTorch's init).
func (l *ConvTranspose2D) Params() []ParamSpec {
	g := l.Adj
	fan := g.C / g.Groups * l.Cfg.KH * l.Cfg.KW
	ps := []ParamSpec{{Name: "weight", Dims: []int{g.K, g.C / g.Groups, l.Cfg.KH, l.Cfg.KW}, Init: InitFanIn, FanIn: fan}}
	if !l.Cfg.NoBias {
		ps = append(ps, ParamSpec{Name: "bias", Dims: []int{g.C}, Init: InitFanIn, FanIn: fan})
	}
	return ps
}

// Bind implements Layer and keeps the backend for Workspace; a dilated
// layer gets its spread kernel and gradient (zero between the taps, which
// no copy writes).
func (l *ConvTranspose2D) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.b = b
	l.Base.Bind(b, params, grads, state)
	l.wideW, l.wideG = nil, nil
	if l.dilated() {
		n := l.spread.Dst[0] * l.spread.Dims[0]
		l.wideW, l.wideG = b.Alloc(n), b.Alloc(n)
		b.Fill(l.wideW, 0)
		b.Fill(l.wideG, 0)
	}
}

// dilated reports whether the kernel is spread (Setup set the copy up).
func (l *ConvTranspose2D) dilated() bool { return len(l.spread.Dims) > 0 }

// kernel returns the weights the adjoint convolution uses and where its
// filter gradient goes: the layer's own, or the spread ones.
func (l *ConvTranspose2D) kernel() (w, dw gpu.Buffer) {
	if l.dilated() {
		return l.wideW, l.wideG
	}
	return l.P[0], l.G[0]
}

// Resize implements Layer.
func (l *ConvTranspose2D) Resize(b gpu.Backend, _ int) { l.b = b }

// Workspace implements Layer: the adjoint convolution's scratch.
func (l *ConvTranspose2D) Workspace(n int) int {
	if l.b == nil {
		panic("solver: convtranspose2d " + l.LayerName + ": Workspace before Bind")
	}
	return l.b.ConvWorkspace(l.adj(n))
}

func (l *ConvTranspose2D) adj(n int) gpu.ConvGeom {
	g := l.Adj
	g.N = n
	return g
}

// Forward implements Layer. x: N×In×H×W, y: N×Out×OH×OW.
func (l *ConvTranspose2D) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	g := l.adj(p.N)
	w, _ := l.kernel()
	if l.dilated() {
		p.B.CopyStrided(w, l.P[0], l.spread, false)
	}
	p.B.ConvBackwardData(g, out, in[0], w, p.WS)
	if !l.Cfg.NoBias {
		p.B.AddBias(out, l.P[1], p.N, g.C, g.H*g.W)
	}
}

// BackwardReads implements BackwardReader: x only for dW.
func (*ConvTranspose2D) BackwardReads(paramGrads bool) (in, out bool) { return paramGrads, false }

// Backward implements Layer.
func (l *ConvTranspose2D) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	g := l.adj(p.N)
	w, dw := l.kernel()
	if din[0] != nil {
		p.B.ConvForward(g, din[0], dout, w, nil, p.WS)
	}
	if !paramGrads {
		return
	}
	p.B.ConvBackwardFilter(g, dw, nil, in[0], dout, p.WS)
	if l.dilated() {
		p.B.CopyStrided(l.G[0], dw, swap(l.spread), false)
	}
	if !l.Cfg.NoBias {
		p.B.BiasGrad(l.G[1], dout, p.N, g.C, g.H*g.W)
	}
}
