package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/internal/limits"
)

// DilatedConv2D is a 2-D convolution whose kernel taps are DH rows and DW
// columns apart (PyTorch's nn.Conv2d dilation, ONNX Conv's dilations): y =
// conv(x, W) + b with W of Out×(C/Groups)×KH×KW, as Conv2D.
//
// It is composed from the backend's ordinary convolution, so that no
// backend needs a dilated kernel: the layer spreads its compact filter into
// a zero-dilated one of (KH-1)·DH+1 × (KW-1)·DW+1 taps (one strided copy
// per Forward: the weights move between steps) and runs a Conv2D with it.
// The input gradient is that convolution's; the filter gradient is the
// dilated filter's gradient with the taps between the real ones dropped
// (one strided copy back). The price is the zeros' arithmetic: a 3×3
// kernel of dilation 2 costs what a 5×5 one does.
type DilatedConv2D struct {
	Base
	Cfg    ConvConfig
	DH, DW int
	// Wide is the convolution with the dilated filter; its Geom is the
	// layer's geometry.
	Wide *Conv2D

	wideW, wideG gpu.Buffer      // the dilated filter and its gradient
	spread       gpu.StridedGeom // compact filter → the dilated filter's taps
}

var _ Layer = (*DilatedConv2D)(nil)

// NewDilatedConv2D returns a convolution of cfg with dilations dh and dw
// (each at least 1; 1 and 1 is an ordinary convolution).
func NewDilatedConv2D(name string, cfg ConvConfig, dh, dw int) *DilatedConv2D {
	c := NewConv2D(name, cfg).Cfg // the defaults filled in
	return &DilatedConv2D{Base: Base{LayerName: name}, Cfg: c, DH: dh, DW: dw}
}

// Kind implements Layer.
func (*DilatedConv2D) Kind() string { return "dilatedconv2d" }

// Setup implements Layer. Its errors name the offending field.
func (l *DilatedConv2D) Setup(in []Shape) (Shape, error) {
	if _, err := limits.Extent("dilation", int64(l.DH), true); err != nil {
		return Shape{}, fmt.Errorf("solver: dilatedconv2d %s: %w", l.LayerName, err)
	}
	if _, err := limits.Extent("dilation", int64(l.DW), true); err != nil {
		return Shape{}, fmt.Errorf("solver: dilatedconv2d %s: %w", l.LayerName, err)
	}
	c := l.Cfg
	for _, k := range [2]int{c.KH, c.KW} {
		if _, err := limits.Extent("kernel", int64(k), true); err != nil {
			return Shape{}, fmt.Errorf("solver: dilatedconv2d %s: %w", l.LayerName, err)
		}
	}
	// The dilated extent within limits before it sizes anything.
	// In 64 bits: on a 32-bit build the product of two extents overflows.
	rh, err := limits.Extent("dilated kernel height", int64(c.KH-1)*int64(l.DH)+1, true)
	if err != nil {
		return Shape{}, fmt.Errorf("solver: dilatedconv2d %s: %w", l.LayerName, err)
	}
	rw, err := limits.Extent("dilated kernel width", int64(c.KW-1)*int64(l.DW)+1, true)
	if err != nil {
		return Shape{}, fmt.Errorf("solver: dilatedconv2d %s: %w", l.LayerName, err)
	}
	wc := c
	wc.KH, wc.KW = rh, rw
	l.Wide = NewConv2D(l.LayerName, wc)
	out, err := l.Wide.Setup(in)
	if err != nil {
		return Shape{}, err
	}
	g := l.Wide.Geom
	l.spread = gpu.StridedGeom{
		Dims: []int{g.K * g.C / g.Groups, c.KH, c.KW},
		Dst:  []int{rh * rw, l.DH * rw, l.DW},
		Src:  []int{c.KH * c.KW, c.KW, 1},
	}
	return out, nil
}

// Params implements Layer: weight [Out, C/Groups, KH, KW], then bias [Out]
// (Conv2D's, with the compact kernel).
func (l *DilatedConv2D) Params() []ParamSpec {
	ps := l.Wide.Params()
	fan := l.Wide.Geom.C / l.Wide.Geom.Groups * l.Cfg.KH * l.Cfg.KW
	ps[0].Dims[2], ps[0].Dims[3] = l.Cfg.KH, l.Cfg.KW
	for i := range ps {
		ps[i].FanIn = fan
	}
	return ps
}

// Bind implements Layer: the dilated filter and its gradient are the
// layer's own buffers (zero between the taps, which no copy writes); the
// inner convolution gets them in place of the compact weight, and the bias
// as it is.
func (l *DilatedConv2D) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.Base.Bind(b, params, grads, state)
	n := l.spread.Dst[0] * l.spread.Dims[0]
	l.wideW, l.wideG = b.Alloc(n), b.Alloc(n)
	b.Fill(l.wideW, 0)
	b.Fill(l.wideG, 0)
	wp, wg := []gpu.Buffer{l.wideW}, []gpu.Buffer{l.wideG}
	if len(params) > 1 {
		wp, wg = append(wp, params[1]), append(wg, grads[1])
	}
	l.Wide.Bind(b, wp, wg, state)
}

// Resize implements Layer.
func (l *DilatedConv2D) Resize(b gpu.Backend, n int) { l.Wide.Resize(b, n) }

// Workspace implements Layer: the inner convolution's.
func (l *DilatedConv2D) Workspace(n int) int { return l.Wide.Workspace(n) }

// Forward implements Layer. x: N×C×H×W, y: N×Out×OH×OW.
func (l *DilatedConv2D) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.CopyStrided(l.wideW, l.P[0], l.spread, false)
	l.Wide.Forward(p, out, in)
}

// BackwardReads implements BackwardReader: x only for dW.
func (*DilatedConv2D) BackwardReads(paramGrads bool) (in, out bool) { return paramGrads, false }

// Backward implements Layer: dx from the dilated filter; dW is the dilated
// filter's gradient at the taps, db the inner convolution's.
func (l *DilatedConv2D) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, out gpu.Buffer, paramGrads bool) {
	l.Wide.Backward(p, din, dout, in, out, paramGrads)
	if paramGrads {
		p.B.CopyStrided(l.G[0], l.wideG, swap(l.spread), false)
	}
}
