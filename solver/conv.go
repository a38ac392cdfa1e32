package solver

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// ConvConfig configures a 2-D convolution, as PyTorch's nn.Conv2d. Zero
// strides mean 1, zero Groups means 1, and KW 0 means a square KH×KH kernel.
type ConvConfig struct {
	Out              int // output channels
	KH, KW           int // kernel height and width
	StrideH, StrideW int
	PadH, PadW       int // zero padding on each side
	Groups           int // input and output channels split into this many groups; Groups == C is depthwise
	NoBias           bool
}

// Conv2D is a 2-D convolution: y = conv(x, W) + b with W of
// Out×(C/Groups)×KH×KW and b of Out, PyTorch's nn.Conv2d layout.
type Conv2D struct {
	Base
	Cfg  ConvConfig
	Geom gpu.ConvGeom // per-sample geometry, set by Setup; N is each call's batch
	b    gpu.Backend  // for Workspace, which takes none

	// Column matrices kept from a training Forward for the filter gradient,
	// on a backend that offers them (gpu.ConvColumnKeeper); see Backward.
	cols       gpu.Buffer // this layer's own, for batches up to colsCap; nil: none
	colsCap    int        // the batch cols was asked for (ConvKeepColumns)
	colsAsked  int        // the largest batch asked for, granted or not
	colsOf     gpu.Buffer // the input whose columns cols holds; nil: none valid
	colsN      int        // the batch of that Forward
	colsUnread int        // training Forwards in a row whose kept columns no Backward read

	// biasDone: the fused activation's Backward computed the bias
	// gradient of this pass (fuse.go); the next Backward skips it.
	biasDone bool

	// fw and fb are the filters and bias with the following batch norm
	// folded in, when the frozen prefix folds it (fold.go); nil otherwise.
	fw, fb gpu.Buffer
}

// NewConv2D returns a convolution; the input channels and size come from Setup.
func NewConv2D(name string, cfg ConvConfig) *Conv2D {
	if cfg.KW == 0 {
		cfg.KW = cfg.KH
	}
	if cfg.StrideH == 0 {
		cfg.StrideH = 1
	}
	if cfg.StrideW == 0 {
		cfg.StrideW = 1
	}
	if cfg.Groups == 0 {
		cfg.Groups = 1
	}
	return &Conv2D{Base: Base{LayerName: name}, Cfg: cfg}
}

// Kind implements Layer.
func (*Conv2D) Kind() string { return "conv2d" }

// Setup implements Layer. Its errors name the offending field.
func (l *Conv2D) Setup(in []Shape) (Shape, error) {
	s, err := one("conv2d", in)
	if err != nil {
		return Shape{}, err
	}
	c := l.Cfg
	switch {
	case c.Out <= 0:
		return Shape{}, fmt.Errorf("solver: conv2d %s: %d output channels, want at least 1", l.LayerName, c.Out)
	case c.KH <= 0 || c.KW <= 0:
		return Shape{}, fmt.Errorf("solver: conv2d %s: kernel %dx%d, want positive sizes", l.LayerName, c.KH, c.KW)
	case c.StrideH < 0 || c.StrideW < 0:
		return Shape{}, fmt.Errorf("solver: conv2d %s: stride %dx%d, want positive", l.LayerName, c.StrideH, c.StrideW)
	case c.PadH < 0 || c.PadW < 0:
		return Shape{}, fmt.Errorf("solver: conv2d %s: padding %dx%d, want non-negative", l.LayerName, c.PadH, c.PadW)
	case c.Groups < 0:
		return Shape{}, fmt.Errorf("solver: conv2d %s: %d groups, want positive", l.LayerName, c.Groups)
	case s.C%max(c.Groups, 1) != 0:
		return Shape{}, fmt.Errorf("solver: conv2d %s: input channels %d not divisible by groups %d", l.LayerName, s.C, c.Groups)
	case c.Out%max(c.Groups, 1) != 0:
		return Shape{}, fmt.Errorf("solver: conv2d %s: output channels %d not divisible by groups %d", l.LayerName, c.Out, c.Groups)
	}
	l.Geom = gpu.ConvGeom{
		C: s.C, H: s.H, W: s.W, K: c.Out, R: c.KH, S: c.KW,
		StrideH: c.StrideH, StrideW: c.StrideW, PadH: c.PadH, PadW: c.PadW, Groups: c.Groups,
	}
	if err := l.Geom.Setup(); err != nil {
		return Shape{}, fmt.Errorf("solver: conv2d %s on input %v: %w", l.LayerName, s, err)
	}
	return Shape{c.Out, l.Geom.OH, l.Geom.OW}, nil
}

// fanIn is the number of inputs of one output element.
func (l *Conv2D) fanIn() int { return l.Geom.C / l.Geom.Groups * l.Geom.R * l.Geom.S }

// Params implements Layer: weight [Out, C/Groups, KH, KW], then bias [Out].
func (l *Conv2D) Params() []ParamSpec {
	g := l.Geom
	ps := []ParamSpec{{Name: "weight", Dims: []int{g.K, g.C / g.Groups, g.R, g.S}, Init: InitFanIn, FanIn: l.fanIn()}}
	if !l.Cfg.NoBias {
		ps = append(ps, ParamSpec{Name: "bias", Dims: []int{g.K}, Init: InitFanIn, FanIn: l.fanIn()})
	}
	return ps
}

// Bind implements Layer and keeps the backend for Workspace. Kept column
// matrices and folded weights belong to the backend that made them: a
// layer bound again drops them.
func (l *Conv2D) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.b = b
	l.cols, l.colsCap, l.colsAsked, l.colsOf, l.biasDone = nil, 0, 0, nil, false
	l.fw, l.fb = nil, nil
	l.Base.Bind(b, params, grads, state)
}

// Resize implements Layer: the convolution's only per-batch buffer, its
// kept column matrices, is asked for by Backward when it first needs it.
func (l *Conv2D) Resize(b gpu.Backend, _ int) { l.b = b }

// Workspace implements Layer: the backend's scratch for n samples.
func (l *Conv2D) Workspace(n int) int {
	if l.b == nil {
		panic("solver: conv2d " + l.LayerName + ": Workspace before Bind")
	}
	return l.b.ConvWorkspace(l.geom(n))
}

func (l *Conv2D) geom(n int) gpu.ConvGeom {
	g := l.Geom
	g.N = n
	return g
}

func (l *Conv2D) bias(bufs []gpu.Buffer) gpu.Buffer {
	if l.Cfg.NoBias {
		return nil
	}
	return bufs[1]
}

// Forward implements Layer. x: N×C×H×W, y: N×Out×OH×OW. A training
// forward on a backend that keeps column matrices leaves x's in the layer's
// own buffer, once Backward has asked for one.
func (l *Conv2D) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	l.forward(p, out, in, nil, gpu.Act{})
}

// forwardAct implements biasActLayer: Forward, then a applied in place by
// f in the same kernels.
func (l *Conv2D) forwardAct(p *Pass, out gpu.Buffer, in []gpu.Buffer, f gpu.ActFuser, a gpu.Act) {
	l.forward(p, out, in, f, a)
}

// biasOut implements biasActLayer: K channels of OH·OW positions.
func (l *Conv2D) biasOut() (gpu.Buffer, int, int) {
	return l.bias(l.G), l.Geom.K, l.Geom.OH * l.Geom.OW
}

// biasGradDone implements biasActLayer.
func (l *Conv2D) biasGradDone() { l.biasDone = true }

// forward is Forward, with the activation a applied by f when f is not nil.
func (l *Conv2D) forward(p *Pass, out gpu.Buffer, in []gpu.Buffer, f gpu.ActFuser, a gpu.Act) {
	if l.colsOf != nil {
		// The last training Forward's columns went unread: no Backward
		// with filter gradients followed. Twice in a row means the layer
		// is frozen (frozen layers below every trainable one get no
		// Backward at all): the buffer goes, and the layer asks again if
		// it learns again.
		if l.colsUnread++; l.colsUnread >= 2 {
			l.cols, l.colsCap, l.colsAsked, l.colsUnread = nil, 0, 0, 0
		}
	}
	l.colsOf = nil
	if p.NoKeep && l.cols != nil {
		l.dropTrainScratch() // under a memory budget (Pass.NoKeep)
	}
	if k, ok := p.B.(gpu.ConvColumnKeeper); ok && p.Train && l.cols != nil && p.N <= l.colsCap {
		if f != nil {
			f.ConvForwardAct(a, l.geom(p.N), out, in[0], l.P[0], l.bias(l.P), p.WS, l.cols)
		} else {
			k.ConvForwardKeep(l.geom(p.N), out, in[0], l.P[0], l.bias(l.P), p.WS, l.cols)
		}
		l.colsOf, l.colsN = in[0], p.N
		return
	}
	if f != nil {
		f.ConvForwardAct(a, l.geom(p.N), out, in[0], l.P[0], l.bias(l.P), p.WS, nil)
		return
	}
	p.B.ConvForward(l.geom(p.N), out, in[0], l.P[0], l.bias(l.P), p.WS)
}

// dropTrainScratch implements trainScratcher: the kept columns go.
func (l *Conv2D) dropTrainScratch() {
	l.cols, l.colsCap, l.colsAsked, l.colsOf, l.colsUnread = nil, 0, 0, nil, 0
}

// BackwardReads implements BackwardReader: x only for dW.
func (*Conv2D) BackwardReads(paramGrads bool) (in, out bool) { return paramGrads, false }

// Backward implements Layer: dx from dy and W; dW and db from dy and x.
//
// The filter gradient reads x's column matrix kept by Forward when the
// last Forward was a training one, of this batch size and on this very
// input buffer: the Layer contract keeps in unchanged from Forward to
// Backward, the matrix depends on x alone (not on the weights, which may
// have moved), and the buffer is this layer's own (the shared workspace is
// overwritten by every later layer). Otherwise it expands x again, and the
// first such Backward with a batch larger than any asked for before asks
// the backend for a buffer (within its memory budget; nil: no room, or a
// forward that builds no column matrix, such as OpenCL's Winograd, and the
// buffer for smaller batches, if any, stays).
// Frozen layers (paramGrads false) never ask, and drop a buffer they had;
// so does a layer whose kept columns two training Forwards in a row left
// unread (see Forward). A bias gradient that a fused activation computed
// (fuse.go) is not computed again.
func (l *Conv2D) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, in []gpu.Buffer, _ gpu.Buffer, paramGrads bool) {
	g := l.geom(p.N)
	db := l.bias(l.G)
	if l.biasDone {
		db, l.biasDone = nil, false
	}
	if din[0] != nil {
		p.B.ConvBackwardData(g, din[0], dout, l.P[0], p.WS)
	}
	if !paramGrads {
		// Frozen: no filter gradient reads the columns, so the buffer goes
		// (and Forward stops writing it); unfrozen later, the layer asks
		// again.
		l.cols, l.colsCap, l.colsAsked, l.colsOf, l.colsUnread = nil, 0, 0, nil, 0
		return
	}
	k, keeps := p.B.(gpu.ConvColumnKeeper)
	// sameBuffer, not ==: a keeper's Buffers may be of a type == panics on
	// (host slices), and the interface does not rule that out.
	if keeps && l.colsOf != nil && sameBuffer(l.colsOf, in[0]) && l.colsN == p.N {
		k.ConvBackwardFilterCols(g, l.G[0], db, dout, p.WS, l.cols)
		l.colsOf, l.colsUnread = nil, 0 // one Backward per Forward; drop the reference to x
		return
	}
	p.B.ConvBackwardFilter(g, l.G[0], db, dout, in[0], p.WS)
	if keeps && !p.NoKeep && p.N > l.colsAsked {
		// Asked once per larger batch: a refusal may have cost the backend a
		// collection. Refused, the buffer for smaller batches stays.
		l.colsAsked = p.N
		if c := k.ConvKeepColumns(g); c != nil {
			l.cols, l.colsCap = c, p.N
		}
	}
}
