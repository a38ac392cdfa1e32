package solver

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
)

// Structural layers: Reshape, Transpose, Slice, Pad and ConcatND move data
// without arithmetic; Binary and Reduce are elementwise arithmetic with
// broadcasting and sums over axes. They are what ONNX graphs of modern
// mobile networks need besides convolutions (channel shuffles,
// squeeze-excitation gates, the NHWC↔NCHW transposes of converted Keras
// models).
//
// A network's per-sample Shape is C×H×W and its memory is row-major per
// sample, so any logical per-sample shape of the same size (rank 1 to 5,
// e.g. g×(C/g)×H×W inside a channel shuffle) is the same memory. These
// layers therefore carry the logical dimensions they work on in their
// configuration ("Dims", per sample, without the batch axis) and check only
// the flat size against the shape the network hands them; the shape they
// return is DimsShape of their logical output. The importer (models/onnx)
// tracks every value's logical dimensions and writes them into the layers.
// All of them run on gpu's three structural kernels (gpu/tensor.go):
// CopyStrided, Broadcast and ReduceSum, deterministic on every backend.

// DimsShape is the network shape of logical per-sample dims: C×H×W for
// three, C×1×1 for one, and the flat size as C×1×1 otherwise. Layers that
// work on logical dims return it from Setup.
func DimsShape(d []int) Shape {
	switch len(d) {
	case 3:
		return Shape{d[0], d[1], d[2]}
	case 1:
		return Shape{d[0], 1, 1}
	}
	return Shape{prod(d), 1, 1}
}

func prod(d []int) int {
	n := 1
	for _, v := range d {
		n *= v
	}
	return n
}

// batched returns [n, d...]: per-sample dims with the batch axis.
func batched(n int, d []int) []int { return append([]int{n}, d...) }

// stridesOf returns the strides of [N, d...] (batch stride first); axes of
// size 1 where the output (o) is larger get stride 0, as does the batch
// axis when shared (a constant applies to every sample).
func stridesOf(d, o []int, shared bool) []int {
	s := gpu.ContiguousStrides(batched(1, d))
	if shared {
		s[0] = 0
	}
	for k := range d {
		if d[k] == 1 && o[k] != 1 {
			s[k+1] = 0
		}
	}
	return s
}

// maxSample caps a structural layer's per-sample elements (and so every
// dimension, pad and count it is configured with), so that sizes computed
// from a graph description cannot overflow an int, even a 32-bit one.
const maxSample = 1 << 30

// boundedDims checks that dims are positive and that their product stays
// under maxSample.
func boundedDims(kind, name, what string, d []int) error {
	n := int64(1)
	for _, v := range d {
		if v <= 0 || v > maxSample {
			return fmt.Errorf("solver: %s %s: %s %v must be positive and at most %d", kind, name, what, d, maxSample)
		}
		if n *= int64(v); n > maxSample {
			return fmt.Errorf("solver: %s %s: %s %v exceed %d elements per sample", kind, name, what, d, maxSample)
		}
	}
	return nil
}

// checkDims checks that logical dims are positive and of the input's size.
func checkDims(kind, name string, d []int, in Shape) error {
	if len(d) == 0 || len(d) > gpu.MaxRank-1 {
		return fmt.Errorf("solver: %s %s: %d per-sample dimensions %v (1 to %d)", kind, name, len(d), d, gpu.MaxRank-1)
	}
	if err := boundedDims(kind, name, "dimensions", d); err != nil {
		return err
	}
	if prod(d) != in.Size() {
		return fmt.Errorf("solver: %s %s: dimensions %v (%d elements) for an input of %v", kind, name, d, prod(d), in)
	}
	return nil
}

// swap returns the copy that undoes g (destination and source exchanged).
func swap(g gpu.StridedGeom) gpu.StridedGeom {
	return gpu.StridedGeom{Dims: g.Dims, Dst: g.Src, Src: g.Dst, DstOff: g.SrcOff, SrcOff: g.DstOff}
}

// atN returns g for a batch of n (the batch is axis 0 of every geometry here;
// the slices are the layer's, so this does not allocate).
func atN(g gpu.StridedGeom, n int) gpu.StridedGeom { g.Dims[0] = n; return g }

// Reshape gives its input new logical dimensions Out (per sample); the data
// are unchanged. ONNX's Reshape and Flatten at any axis map to it.
type Reshape struct {
	Base
	Out []int
}

var _ Layer = (*Reshape)(nil)

// NewReshape returns a reshape to per-sample dims out.
func NewReshape(name string, out []int) *Reshape {
	return &Reshape{Base: Base{LayerName: name}, Out: out}
}

// Kind implements Layer.
func (*Reshape) Kind() string { return "reshape" }

// Setup implements Layer.
func (l *Reshape) Setup(in []Shape) (Shape, error) {
	s, err := one("reshape", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("reshape", l.LayerName, l.Out, s); err != nil {
		return Shape{}, err
	}
	return DimsShape(l.Out), nil
}

// Forward implements Layer: out = in (N×size).
func (l *Reshape) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) { p.B.Copy(out, in[0]) }

// BackwardReads implements BackwardReader: nothing.
func (*Reshape) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: din = dout.
func (l *Reshape) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] != nil {
		p.B.Copy(din[0], dout)
	}
}

// Transpose permutes the per-sample axes of its input (dims In): output axis
// k is input axis Perm[k] (ONNX's perm without the batch axis, which stays
// first).
type Transpose struct {
	Base
	In, Perm []int
	fwd, bwd gpu.StridedGeom
	out      []int
}

var _ Layer = (*Transpose)(nil)

// NewTranspose returns a transpose of per-sample dims in by perm.
func NewTranspose(name string, in, perm []int) *Transpose {
	return &Transpose{Base: Base{LayerName: name}, In: in, Perm: perm}
}

// Kind implements Layer.
func (*Transpose) Kind() string { return "transpose" }

// OutDims returns the per-sample output dims (after Setup).
func (l *Transpose) OutDims() []int { return l.out }

// Setup implements Layer.
func (l *Transpose) Setup(in []Shape) (Shape, error) {
	s, err := one("transpose", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("transpose", l.LayerName, l.In, s); err != nil {
		return Shape{}, err
	}
	// Sorted, a permutation of the axes is 0, 1, ..., len(In)-1.
	sorted := slices.Sorted(slices.Values(l.Perm))
	ok := len(sorted) == len(l.In)
	for k, v := range sorted {
		ok = ok && v == k
	}
	if !ok {
		return Shape{}, fmt.Errorf("solver: transpose %s: perm %v is not a permutation of %d axes", l.LayerName, l.Perm, len(l.In))
	}
	l.out = make([]int, len(l.In))
	for k, j := range l.Perm {
		l.out[k] = l.In[j]
	}
	inS, outS := gpu.ContiguousStrides(batched(1, l.In)), gpu.ContiguousStrides(batched(1, l.out))
	src, back := []int{inS[0]}, make([]int, len(l.In)+1)
	back[0] = outS[0]
	for k, j := range l.Perm {
		src = append(src, inS[j+1])
		back[j+1] = outS[k+1]
	}
	l.fwd = gpu.StridedGeom{Dims: batched(1, l.out), Dst: outS, Src: src}
	l.bwd = gpu.StridedGeom{Dims: batched(1, l.In), Dst: inS, Src: back}
	return DimsShape(l.out), nil
}

// Forward implements Layer: out[n][i_Perm] = in[n][i].
func (l *Transpose) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.CopyStrided(out, in[0], atN(l.fwd, p.N), false)
}

// BackwardReads implements BackwardReader: nothing.
func (*Transpose) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: the inverse permutation of dout.
func (l *Transpose) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] != nil {
		p.B.CopyStrided(din[0], dout, atN(l.bwd, p.N), false)
	}
}

// Slice takes, along every per-sample axis k of its input (dims In), Counts[k]
// elements starting at Starts[k], every Steps[k]-th: ONNX's Slice with
// positive steps, and each output of a Split.
type Slice struct {
	Base
	In, Starts, Steps, Counts []int
	fwd                       gpu.StridedGeom
}

var _ Layer = (*Slice)(nil)

// NewSlice returns a slice of per-sample dims in.
func NewSlice(name string, in, starts, steps, counts []int) *Slice {
	return &Slice{Base: Base{LayerName: name}, In: in, Starts: starts, Steps: steps, Counts: counts}
}

// Kind implements Layer.
func (*Slice) Kind() string { return "slice" }

// Setup implements Layer.
func (l *Slice) Setup(in []Shape) (Shape, error) {
	s, err := one("slice", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("slice", l.LayerName, l.In, s); err != nil {
		return Shape{}, err
	}
	r := len(l.In)
	if len(l.Starts) != r || len(l.Steps) != r || len(l.Counts) != r {
		return Shape{}, fmt.Errorf("solver: slice %s: starts %v, steps %v, counts %v for %d axes", l.LayerName, l.Starts, l.Steps, l.Counts, r)
	}
	inS := gpu.ContiguousStrides(batched(1, l.In))
	src, off := []int{inS[0]}, 0
	for k := range r {
		st, step, c := l.Starts[k], l.Steps[k], l.Counts[k]
		if c <= 0 || step <= 0 || st < 0 || c > l.In[k] || step > l.In[k] || int64(st)+int64(c-1)*int64(step) >= int64(l.In[k]) {
			return Shape{}, fmt.Errorf("solver: slice %s: axis %d of %d: %d elements from %d by %d", l.LayerName, k, l.In[k], c, st, step)
		}
		src = append(src, inS[k+1]*step)
		off += st * inS[k+1]
	}
	l.fwd = gpu.StridedGeom{Dims: batched(1, l.Counts), Dst: gpu.ContiguousStrides(batched(1, l.Counts)), Src: src, SrcOff: off}
	return DimsShape(l.Counts), nil
}

// Forward implements Layer.
func (l *Slice) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	p.B.CopyStrided(out, in[0], atN(l.fwd, p.N), false)
}

// BackwardReads implements BackwardReader: nothing.
func (*Slice) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: din is zero but for dout at the sliced places.
func (l *Slice) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] != nil {
		p.B.Fill(din[0], 0)
		p.B.CopyStrided(din[0], dout, swap(atN(l.fwd, p.N)), false)
	}
}

// Pad adds Before[k] and After[k] elements around per-sample axis k of its
// input (dims In): ONNX's Pad. Mode "" (or "constant") pads with Value
// (zero unless set; its gradient is nothing, so Backward is the same),
// "reflect" mirrors the input without repeating the edge (PyTorch's
// reflect; each pad must be shorter than its axis) and "edge" repeats the
// edge (PyTorch's replicate).
//
// The mirrored modes fill the output axis by axis: the interior first, then
// for each axis every border position as one strided copy of a slab of the
// output itself (the whole output extent on the other axes, so the corners
// come out as PyTorch's). The backward pass runs those copies backwards in
// a scratch copy of dout, adding each border slab into the slab it came
// from (CopyStrided's add), and takes the interior.
type Pad struct {
	Base
	In, Before, After []int
	Mode              string
	Value             float32 // mode constant: the value of the border
	fwd               gpu.StridedGeom
	slabs             []gpu.StridedGeom // the mirrored modes' border copies, in order
	tmp               gpu.Buffer        // Backward's view of the workspace
	wsLen             int
}

var _ Layer = (*Pad)(nil)

// NewPad returns a zero padding of per-sample dims in.
func NewPad(name string, in, before, after []int) *Pad {
	return &Pad{Base: Base{LayerName: name}, In: in, Before: before, After: after}
}

// NewPadMode returns a padding of per-sample dims in in mode ("constant",
// "reflect" or "edge").
func NewPadMode(name string, in, before, after []int, mode string) *Pad {
	p := NewPad(name, in, before, after)
	if mode != "constant" {
		p.Mode = mode
	}
	return p
}

// Kind implements Layer.
func (*Pad) Kind() string { return "pad" }

// OutDims returns the padded per-sample dims.
func (l *Pad) OutDims() []int {
	out := slices.Clone(l.In)
	for k := range out {
		out[k] += l.Before[k] + l.After[k]
	}
	return out
}

// Setup implements Layer.
func (l *Pad) Setup(in []Shape) (Shape, error) {
	s, err := one("pad", in)
	if err != nil {
		return Shape{}, err
	}
	if err := checkDims("pad", l.LayerName, l.In, s); err != nil {
		return Shape{}, err
	}
	if len(l.Before) != len(l.In) || len(l.After) != len(l.In) {
		return Shape{}, fmt.Errorf("solver: pad %s: pads %v and %v for %d axes", l.LayerName, l.Before, l.After, len(l.In))
	}
	if l.Mode != "" && l.Mode != "reflect" && l.Mode != "edge" {
		return Shape{}, fmt.Errorf("solver: pad %s: mode %q (constant, reflect or edge)", l.LayerName, l.Mode)
	}
	for k := range l.In {
		if l.Before[k] < 0 || l.After[k] < 0 {
			return Shape{}, fmt.Errorf("solver: pad %s: negative padding %v %v", l.LayerName, l.Before, l.After)
		}
		if l.Before[k] > maxSample || l.After[k] > maxSample {
			return Shape{}, fmt.Errorf("solver: pad %s: padding %v %v over %d", l.LayerName, l.Before, l.After, maxSample)
		}
		if l.Mode == "reflect" && (l.Before[k] >= l.In[k] || l.After[k] >= l.In[k]) {
			return Shape{}, fmt.Errorf("solver: pad %s: reflect padding %v %v must be shorter than the axes %v", l.LayerName, l.Before, l.After, l.In)
		}
	}
	out := l.OutDims()
	if err := boundedDims("pad", l.LayerName, "padded dimensions", out); err != nil {
		return Shape{}, err
	}
	outS := gpu.ContiguousStrides(batched(1, out))
	off := 0
	for k := range l.In {
		off += l.Before[k] * outS[k+1]
	}
	l.fwd = gpu.StridedGeom{Dims: batched(1, l.In), Dst: outS, Src: gpu.ContiguousStrides(batched(1, l.In)), DstOff: off}
	l.slabs = nil
	if l.Mode != "" {
		for k := range l.In {
			b, n := l.Before[k], l.In[k]
			slab := func(dst, src int) {
				dims := batched(1, out)
				dims[k+1] = 1
				l.slabs = append(l.slabs, gpu.StridedGeom{Dims: dims, Dst: outS, Src: outS, DstOff: dst * outS[k+1], SrcOff: src * outS[k+1]})
			}
			for j := range b {
				if l.Mode == "reflect" {
					slab(j, 2*b-j)
				} else {
					slab(j, b)
				}
			}
			for j := range l.After[k] {
				if l.Mode == "reflect" {
					slab(b+n+j, b+n-2-j)
				} else {
					slab(b+n+j, b+n-1)
				}
			}
		}
	}
	return DimsShape(out), nil
}

// Workspace implements Layer: the mirrored modes' scratch copy of dout.
func (l *Pad) Workspace(n int) int {
	if l.Mode == "" {
		return 0
	}
	return n * prod(l.OutDims())
}

// Forward implements Layer: Value everywhere (constant mode), the input in
// the interior, then the mirrored borders.
func (l *Pad) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	if l.Mode == "" {
		p.B.Fill(out, l.Value)
	}
	p.B.CopyStrided(out, in[0], atN(l.fwd, p.N), false)
	for _, g := range l.slabs {
		p.B.CopyStrided(out, out, atN(g, p.N), false)
	}
}

// BackwardReads implements BackwardReader: nothing.
func (*Pad) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: din is dout's interior, after the mirrored
// modes add each border back where it was copied from.
func (l *Pad) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	if din[0] == nil {
		return
	}
	g := dout
	if len(l.slabs) > 0 {
		w := l.Workspace(p.N)
		if l.tmp == nil || l.tmp.Len() != w || l.wsLen != p.WS.Len() {
			l.tmp, l.wsLen = p.B.View(p.WS, 0, w), p.WS.Len()
		}
		g = l.tmp
		p.B.Copy(g, dout)
		for i := len(l.slabs) - 1; i >= 0; i-- {
			p.B.CopyStrided(g, g, swap(atN(l.slabs[i], p.N)), true)
		}
	}
	p.B.CopyStrided(din[0], g, swap(atN(l.fwd, p.N)), false)
}

// ConcatND joins its inputs along per-sample axis Axis. Dims are input 0's
// per-sample dims; every other input has the same dims but along Axis,
// whose length follows from its size. (Concat is the channel join of 4-D
// tensors; this is ONNX's Concat on any non-batch axis and any rank.)
type ConcatND struct {
	Base
	Axis  int
	Dims  []int
	geoms []gpu.StridedGeom
	out   []int
}

var _ Layer = (*ConcatND)(nil)

// NewConcatND returns a concatenation along per-sample axis axis of inputs
// whose first has per-sample dims dims.
func NewConcatND(name string, axis int, dims []int) *ConcatND {
	return &ConcatND{Base: Base{LayerName: name}, Axis: axis, Dims: dims}
}

// Kind implements Layer.
func (*ConcatND) Kind() string { return "concatnd" }

// OutDims returns the per-sample output dims (after Setup).
func (l *ConcatND) OutDims() []int { return l.out }

// Setup implements Layer.
func (l *ConcatND) Setup(in []Shape) (Shape, error) {
	if len(in) == 0 {
		return Shape{}, fmt.Errorf("solver: concatnd %s without inputs", l.LayerName)
	}
	if err := checkDims("concatnd", l.LayerName, l.Dims, in[0]); err != nil {
		return Shape{}, err
	}
	if l.Axis < 0 || l.Axis >= len(l.Dims) {
		return Shape{}, fmt.Errorf("solver: concatnd %s: axis %d of %d", l.LayerName, l.Axis, len(l.Dims))
	}
	outer, inner := prod(l.Dims[:l.Axis]), prod(l.Dims[l.Axis+1:])
	lens, total := make([]int, len(in)), 0
	for i, s := range in {
		if s.Size()%(outer*inner) != 0 || s.Size() == 0 {
			return Shape{}, fmt.Errorf("solver: concatnd %s: input %d of %d elements does not fit %v along axis %d", l.LayerName, i, s.Size(), l.Dims, l.Axis)
		}
		lens[i] = s.Size() / (outer * inner)
		total += lens[i]
	}
	l.out = slices.Clone(l.Dims)
	l.out[l.Axis] = total
	if err := boundedDims("concatnd", l.LayerName, "output dimensions", l.out); err != nil {
		return Shape{}, err
	}
	l.geoms = make([]gpu.StridedGeom, len(in))
	off := 0
	for i, d := range lens {
		l.geoms[i] = gpu.StridedGeom{Dims: []int{1, outer, d * inner}, Dst: []int{outer * total * inner, total * inner, 1},
			Src: []int{outer * d * inner, d * inner, 1}, DstOff: off * inner}
		off += d
	}
	return DimsShape(l.out), nil
}

// Forward implements Layer.
func (l *ConcatND) Forward(p *Pass, out gpu.Buffer, in []gpu.Buffer) {
	for i, x := range in {
		p.B.CopyStrided(out, x, atN(l.geoms[i], p.N), false)
	}
}

// BackwardReads implements BackwardReader: nothing.
func (*ConcatND) BackwardReads(bool) (in, out bool) { return false, false }

// Backward implements Layer: each input's gradient is its part of dout.
func (l *ConcatND) Backward(p *Pass, din []gpu.Buffer, dout gpu.Buffer, _ []gpu.Buffer, _ gpu.Buffer, _ bool) {
	for i, d := range din {
		if d != nil {
			p.B.CopyStrided(d, dout, swap(atN(l.geoms[i], p.N)), false)
		}
	}
}
