package solver

import (
	"fmt"
	"math"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// Resample resizes the spatial axes of its input (per-sample dims In: the
// channels, then one to three spatial axes) to Out: ONNX Resize and
// Upsample, PyTorch's nn.Upsample and F.interpolate, in mode nearest or
// linear (bilinear over H×W) or cubic (PyTorch's bicubic), with ONNX's coordinate transformation and
// nearest rounding (gpu.ResampleAxis gives the arithmetic). Scales holds
// the scale of each spatial axis as the model gave it, or is nil when the
// model gave the output sizes (the scale is then Out/In).
//
// Both modes are separable, so Forward resamples one spatial axis at a
// time, the last first, each pass one Backend.Resample with that axis's
// matrix into the next intermediate (the workspace) and the last into out;
// PyTorch's bilinear kernel rounds in the same order (the row's blend
// first, then the blend of rows). Backward runs the passes in reverse with
// the transposed matrices: each input's gradient gathers, in a fixed
// order, the output gradients that read it (no scatter, no atomics). An
// axis whose length and scale are unchanged is no pass at all; with none
// left the layer is a copy.
type Resample struct {
	Base
	In, Out []int
	Mode    string    // gpu.ResampleNearest, gpu.ResampleLinear or gpu.ResampleCubic
	Coord   string    // ONNX coordinate_transformation_mode
	Nearest string    // ONNX nearest_mode (nearest only)
	Scales  []float32 // one per spatial axis, or nil (sizes given)
	CubicA  float32   // ONNX cubic_coeff_a (cubic only)
	Exclude bool      // ONNX exclude_outside (cubic, and linear with Antialias)
	// Antialias stretches a shrinking linear axis's filter
	// (gpu.ResampleAxis.Antialias; ONNX's antialias).
	Antialias bool

	passes []resamplePass // in forward order
	tabB   gpu.Backend    // the backend the tables were made on
	views  []gpu.Buffer   // the intermediates' views of the workspace
	viewN  int            // the batch and workspace length views were made for
	wsLen  int
}

// resamplePass is one spatial axis's pass: a per-sample tensor of outer ×
// taps.In × inner elements to outer × taps.Out × inner.
type resamplePass struct {
	outer, inner int
	fwd, bwd     *gpu.ResampleTaps
	tf, tb       gpu.Buffer // the backend's tables of fwd and bwd
}

var _ Layer = (*Resample)(nil)

// NewResample returns a resampling of per-sample dims in to out.
func NewResample(name string, in, out []int, mode, coord, nearest string, scales []float32) *Resample {
	return &Resample{Base: Base{LayerName: name}, In: in, Out: out, Mode: mode, Coord: coord, Nearest: nearest, Scales: scales}
}

// Kind implements Layer.
func (*Resample) Kind() string { return "resample" }

// OutDims returns the resampled per-sample dims.
func (l *Resample) OutDims() []int { return l.Out }

// Setup implements Layer: it checks the configuration and builds each
// axis's matrices on the host.
func (l *Resample) Setup(in []Shape) (Shape, error) {
	s, err := one("resample", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("resample", l.LayerName, l.In, s); err != nil {
		return Shape{}, err
	}
	if len(l.In) < 2 || len(l.In) > 4 || len(l.Out) != len(l.In) {
		return Shape{}, fmt.Errorf("solver: resample %s: dims %v to %v (channels, then 1 to 3 spatial axes)", l.LayerName, l.In, l.Out)
	}
	if err := boundedDims("resample", l.LayerName, "output dimensions", l.Out); err != nil {
		return Shape{}, err
	}
	if l.Out[0] != l.In[0] {
		return Shape{}, fmt.Errorf("solver: resample %s: %d channels to %d (only the spatial axes resize)", l.LayerName, l.In[0], l.Out[0])
	}
	if l.Scales != nil && len(l.Scales) != len(l.In)-1 {
		return Shape{}, fmt.Errorf("solver: resample %s: %d scales for %d spatial axes", l.LayerName, len(l.Scales), len(l.In)-1)
	}
	l.passes = nil
	for k := len(l.In) - 1; k >= 1; k-- {
		a := gpu.ResampleAxis{In: l.In[k], Out: l.Out[k], Mode: l.Mode, Coord: l.Coord, Nearest: l.Nearest,
			A: float64(l.CubicA), ExcludeOutside: l.Exclude, Antialias: l.Antialias}
		if l.Scales != nil {
			sc := float64(l.Scales[k-1])
			if !(sc > 0) || math.IsInf(sc, 0) {
				return Shape{}, fmt.Errorf("solver: resample %s: scale %v", l.LayerName, l.Scales[k-1])
			}
			a.Scale = sc
		}
		t, err := a.Taps()
		if err != nil {
			return Shape{}, fmt.Errorf("solver: resample %s: axis %d: %w", l.LayerName, k, err)
		}
		if t.Identity() {
			continue
		}
		// The axes before k still have their input lengths, those after
		// it their output lengths.
		l.passes = append(l.passes, resamplePass{outer: prod(l.In[:k]), inner: prod(l.Out[k+1:]), fwd: t, bwd: t.Transpose()})
	}
	l.tabB, l.views = nil, nil
	return DimsShape(l.Out), nil
}

// Bind implements Layer: the matrices go to the backend.
func (l *Resample) Bind(b gpu.Backend, params, grads, state []gpu.Buffer) {
	l.Base.Bind(b, params, grads, state)
	for i := range l.passes {
		p := &l.passes[i]
		p.tf, p.tb = b.ResampleTable(p.fwd), b.ResampleTable(p.bwd)
	}
	l.tabB = b
}

// size is the per-sample length of the tensor after pass i.
func (p *resamplePass) size() int { return p.outer * p.fwd.Out * p.inner }

// Workspace implements Layer: the intermediates between passes.
func (l *Resample) Workspace(n int) int {
	w := 0
	for _, p := range l.passes[:max(len(l.passes)-1, 0)] {
		w += n * p.size()
	}
	return w
}

// stages returns the tensors of a batch of n: the input, the
// intermediates (views of the workspace, made once per batch size) and the
// output.
func (l *Resample) stages(p *Pass, in, out gpu.Buffer) []gpu.Buffer {
	if l.tabB != p.B {
		panic(fmt.Sprintf("solver: resample %s run on a backend it was not bound to", l.LayerName))
	}
	if l.views == nil || l.viewN != p.N || l.wsLen != p.WS.Len() {
		l.views = make([]gpu.Buffer, len(l.passes)+1)
		off := 0
		for i, ps := range l.passes[:len(l.passes)-1] {
			l.views[i+1] = p.B.View(p.WS, off, p.N*ps.size())
			off += p.N * ps.size()
		}
		l.viewN, l.wsLen = p.N, p.WS.Len()
	}
	l.views[0], l.views[len(l.passes)] = in, out
	return l.views
}

// Forward implements Layer.
func (l *Resample) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	if len(l.passes) == 0 {
		p.B.Copy(out, in[0])
		return
	}
	st := l.stages(p, in[0], out)
	for i, ps := range l.passes {
		p.B.Resample(st[i+1], st[i], ps.tf, p.N*ps.outer, ps.inner)
	}
}

// BackwardReads implements BackwardReader: nothing (the layer is linear).
func (*Resample) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: the passes in reverse, by the transposed
// matrices.
func (l *Resample) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] == nil {
		return
	}
	if len(l.passes) == 0 {
		p.B.Copy(din[0], dout)
		return
	}
	st := l.stages(p, din[0], dout)
	for i := len(l.passes) - 1; i >= 0; i-- {
		ps := l.passes[i]
		p.B.Resample(st[i], st[i+1], ps.tb, p.N*ps.outer, ps.inner)
	}
}

// ResampleOut returns the output dims of per-sample dims in scaled by
// scales (one per spatial axis): ⌊in·scale⌋, ONNX's and PyTorch's rule,
// computed in float64 from the float32 scale, or an error for a length
// below 1.
func ResampleOut(in []int, scales []float32) ([]int, error) {
	if len(scales) != len(in)-1 {
		return nil, fmt.Errorf("solver: resample of %v by %d scales", in, len(scales))
	}
	out := slices.Clone(in)
	for k, s := range scales {
		v := math.Floor(float64(in[k+1]) * float64(s))
		if !(v >= 1) || v > maxSample {
			return nil, fmt.Errorf("solver: resample of %v by %v: axis %d has %v elements", in, scales, k+1, v)
		}
		out[k+1] = int(v)
	}
	return out, nil
}
