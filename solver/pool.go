package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// PoolConfig configures 2-D max or average pooling, as PyTorch's nn.MaxPool2d
// and nn.AvgPool2d. KW 0 means a square KH×KH window; zero strides mean the
// window size (PyTorch's default), zero dilations 1. Note that CountIncludePad's zero value is
// false, whereas nn.AvgPool2d defaults to count_include_pad=True: set it to
// match a PyTorch model that pads.
type PoolConfig struct {
	KH, KW           int // window height and width
	StrideH, StrideW int
	PadH, PadW       int  // implicit padding on each side, at most half the window
	CeilMode         bool // round the output size up (PyTorch's ceil_mode)
	// DilH and DilW space the window's taps (nn.MaxPool2d's dilation;
	// average pooling's is ONNX AveragePool's, gpu.PoolTaps).
	DilH, DilW int
	// CountIncludePad makes average pooling divide by the window size,
	// padding included; otherwise by the input elements in the window.
	CountIncludePad bool
}

// Pool2D is a max, average or global average pooling layer. It has no
// parameters; the output keeps the input's channels.
type Pool2D struct {
	Base
	Cfg    PoolConfig
	Geom   gpu.PoolGeom // per-sample geometry, set by Setup; N is each call's batch
	max    bool         // max pooling; otherwise average
	global bool         // the window is the whole input, set by Setup

	// Window positions kept from the training forward for the backward
	// (gpu.MaxPoolIndexer), as Conv2D keeps its column matrices: idx is
	// the layer's own buffer for batches up to idxCap (asked for at the
	// first Backward of a batch larger than idxAsked); idxOf is the input
	// of the last Forward when that was a training one that wrote idx (nil
	// otherwise), for a batch of idxN; idxUnread counts training Forwards
	// in a row whose positions no Backward read.
	idx              gpu.Buffer
	idxCap, idxAsked int
	idxOf            gpu.Buffer
	idxN, idxUnread  int
}

// NewMaxPool2D returns a max pooling layer: padding acts as -inf, and the
// gradient of each window goes to its first maximum.
func NewMaxPool2D(name string, cfg PoolConfig) *Pool2D {
	return &Pool2D{Base: Base{LayerName: name}, Cfg: poolDefaults(cfg), max: true}
}

// NewAvgPool2D returns an average pooling layer.
func NewAvgPool2D(name string, cfg PoolConfig) *Pool2D {
	return &Pool2D{Base: Base{LayerName: name}, Cfg: poolDefaults(cfg)}
}

// NewGlobalAvgPool returns a layer that averages each channel over the whole
// input (C×H×W to C×1×1), as PyTorch's nn.AdaptiveAvgPool2d(1).
func NewGlobalAvgPool(name string) *Pool2D {
	return &Pool2D{Base: Base{LayerName: name}, global: true}
}

func poolDefaults(c PoolConfig) PoolConfig {
	if c.KW == 0 {
		c.KW = c.KH
	}
	if c.StrideH == 0 {
		c.StrideH = c.KH
	}
	if c.StrideW == 0 {
		c.StrideW = c.KW
	}
	if c.DilH == 0 {
		c.DilH = 1
	}
	if c.DilW == 0 {
		c.DilW = 1
	}
	return c
}

// Kind implements Layer: "maxpool2d", "avgpool2d" or "globalavgpool".
func (l *Pool2D) Kind() string {
	switch {
	case l.global:
		return "globalavgpool"
	case l.max:
		return "maxpool2d"
	}
	return "avgpool2d"
}

// Setup implements Layer. Its errors name the offending field.
func (l *Pool2D) Setup(in []Shape) (Shape, error) {
	s, err := one(l.Kind(), in)
	if err != nil {
		return Shape{}, err
	}
	if s.Size() <= 0 {
		return Shape{}, fmt.Errorf("solver: %s %s: input %v", l.Kind(), l.LayerName, s)
	}
	c := l.Cfg
	if l.global {
		c = PoolConfig{KH: s.H, KW: s.W, StrideH: s.H, StrideW: s.W, DilH: 1, DilW: 1}
		l.Cfg = c
	}
	switch {
	case c.KH <= 0 || c.KW <= 0:
		return Shape{}, fmt.Errorf("solver: %s %s: window %dx%d, want positive sizes", l.Kind(), l.LayerName, c.KH, c.KW)
	case c.StrideH <= 0 || c.StrideW <= 0:
		return Shape{}, fmt.Errorf("solver: %s %s: stride %dx%d, want positive", l.Kind(), l.LayerName, c.StrideH, c.StrideW)
	case c.DilH <= 0 || c.DilW <= 0:
		return Shape{}, fmt.Errorf("solver: %s %s: dilation %dx%d, want positive", l.Kind(), l.LayerName, c.DilH, c.DilW)
	case c.PadH < 0 || c.PadW < 0 || 2*c.PadH > c.KH || 2*c.PadW > c.KW:
		return Shape{}, fmt.Errorf("solver: %s %s: padding %dx%d, want between 0 and half the window %dx%d",
			l.Kind(), l.LayerName, c.PadH, c.PadW, c.KH, c.KW)
	case c.DilH == 1 && c.DilW == 1 && (c.KH > s.H+2*c.PadH || c.KW > s.W+2*c.PadW):
		return Shape{}, fmt.Errorf("solver: %s %s: window %dx%d larger than padded input %dx%d",
			l.Kind(), l.LayerName, c.KH, c.KW, s.H+2*c.PadH, s.W+2*c.PadW)
	}
	// A dilated window's span is checked by gpu.PoolGeom.Setup, which
	// bounds (K-1)·Dil before it adds it.
	l.Geom = gpu.PoolGeom{
		C: s.C, H: s.H, W: s.W, KH: c.KH, KW: c.KW, StrideH: c.StrideH, StrideW: c.StrideW,
		PadH: c.PadH, PadW: c.PadW, DilH: c.DilH, DilW: c.DilW, CeilMode: c.CeilMode, CountIncludePad: c.CountIncludePad,
	}
	if err := l.Geom.Setup(); err != nil {
		return Shape{}, fmt.Errorf("solver: %s %s on input %v: %w", l.Kind(), l.LayerName, s, err)
	}
	return Shape{s.C, l.Geom.OH, l.Geom.OW}, nil
}

func (l *Pool2D) geom(n int) gpu.PoolGeom {
	g := l.Geom
	g.N = n
	return g
}

// Forward implements Layer. x: N×C×H×W, y: N×C×OH×OW. A training
// forward of max pooling on a backend that records window positions
// (gpu.MaxPoolIndexer) leaves them in the layer's own buffer, once
// Backward has asked for one.
func (l *Pool2D) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	if l.max {
		if l.idxOf != nil {
			// The last training Forward's positions went unread: no
			// Backward with an input gradient followed. Twice in a row
			// means none will (the layer is below every trainable one):
			// the buffer goes, and a later Backward asks again.
			if l.idxUnread++; l.idxUnread >= 2 {
				l.idx, l.idxCap, l.idxAsked, l.idxUnread = nil, 0, 0, 0
			}
		}
		l.idxOf = nil
		if p.NoKeep && l.idx != nil {
			l.dropTrainScratch() // under a memory budget (Pass.NoKeep)
		}
		if ix, ok := p.B.(gpu.MaxPoolIndexer); ok && p.Train && l.idx != nil && p.N <= l.idxCap {
			ix.MaxPoolForwardIdx(l.geom(p.N), out, l.idx, in[0])
			l.idxOf, l.idxN = in[0], p.N
			return
		}
		p.B.MaxPoolForward(l.geom(p.N), out, in[0])
	} else {
		p.B.AvgPoolForward(l.geom(p.N), out, in[0])
	}
}

// dropTrainScratch implements trainScratcher: the kept positions go.
func (l *Pool2D) dropTrainScratch() {
	l.idx, l.idxCap, l.idxAsked, l.idxOf, l.idxUnread = nil, 0, 0, nil, 0
}

// BackwardReads implements BackwardReader: max pooling reads x, average
// pooling nothing.
func (l *Pool2D) BackwardReads(bool) (in, out bool) { return l.max, false }

// Backward implements Layer. Max pooling finds each window's maximum again
// from the forward input, or reads the positions the training Forward kept
// when that Forward was the last one, of this batch size and on this very
// input buffer (the positions depend on x alone, which the Layer contract
// keeps unchanged from Forward to Backward, and the buffer is this layer's
// own). The first Backward with a batch larger than any asked for before
// asks the backend for a buffer (nil: no room; the buffer for smaller
// batches, if any, stays).
func (l *Pool2D) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] == nil {
		return
	}
	if l.max {
		g := l.geom(p.N)
		ix, ok := p.B.(gpu.MaxPoolIndexer)
		if ok && l.idxOf != nil && sameBuffer(l.idxOf, in[0]) && l.idxN == p.N {
			ix.MaxPoolBackwardIdx(g, din[0], dout, l.idx)
			l.idxOf, l.idxUnread = nil, 0 // one Backward per Forward; drop the reference to x
			return
		}
		p.B.MaxPoolBackward(g, din[0], dout, in[0])
		if ok && !p.NoKeep && p.N > l.idxAsked {
			l.idxAsked = p.N
			if b := ix.MaxPoolIndices(g); b != nil {
				l.idx, l.idxCap = b, p.N
			}
		}
	} else {
		p.B.AvgPoolBackward(l.geom(p.N), din[0], dout)
	}
}
