package onnx

import (
	"fmt"
	"slices"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// Constant folding of small tensors. torch.onnx.export leaves chains of
// operators on constants in the graph — F.pad's pads are built by
// ConstantOfShape, Concat, Reshape, a reversing Slice, Transpose and Cast,
// Tensor.repeat's repeats by Expand of a ConstantOfShape —
// which the importer evaluates here, before any layer sees them. Only nodes
// whose inputs are all constants (or shape vectors without the batch size)
// are folded.

// maxFold caps the elements of a folded tensor: these are shape-sized.
const maxFold = 1 << 16

// constTensor returns v as a constant tensor, or nil.
func constTensor(v *value) *tensor {
	switch {
	case v.konst != nil:
		return v.konst
	case v.sym != nil && !hasBatch(v.sym):
		t := &tensor{ints: v.sym}
		if !v.scalar {
			t.dims = []int{len(v.sym)}
		}
		return t
	}
	return nil
}

var foldable = map[string]bool{"ConstantOfShape": true, "Cast": true, "Reshape": true, "Transpose": true, "Slice": true,
	"Concat": true, "Squeeze": true, "Unsqueeze": true, "Expand": true}

// fold evaluates n when its operator is foldable and its inputs constant;
// done reports whether it did.
func (im *importer) fold(n *onnxpb.NodeProto, a attrs) (done bool, err error) {
	op := n.GetOpType()
	if !foldable[op] {
		return false, nil
	}
	var ins []*tensor
	for i, name := range n.GetInput() {
		if name == "" {
			ins = append(ins, nil)
			continue
		}
		v, err := im.get(n, i)
		if err != nil {
			return false, nil // get reports it when the operator runs
		}
		t := constTensor(v)
		if t == nil {
			return false, nil
		}
		ins = append(ins, t)
	}
	if len(ins) == 0 && op != "ConstantOfShape" {
		return false, nil
	}
	var out *tensor
	switch op {
	case "ConstantOfShape":
		out, err = constantOfShape(ins, a)
	case "Cast":
		out, err = cast(ins[0], a.int("to", 0))
	case "Reshape":
		out, err = foldReshape(ins)
	case "Transpose":
		out, err = foldTranspose(ins[0], a.ints("perm"))
	case "Slice":
		out, err = im.foldSlice(ins, a)
	case "Concat":
		out, err = foldConcat(ins, a.int("axis", 0))
	case "Expand":
		out, err = foldExpand(ins)
	case "Squeeze", "Unsqueeze":
		axes := a.ints("axes")
		if im.opset >= 13 && len(ins) > 1 && ins[1] != nil {
			axes = ins[1].ints
		}
		out, err = foldSqueeze(ins[0], axes, op == "Unsqueeze")
	}
	if err != nil {
		return true, err
	}
	if out.size() > maxFold {
		return true, fmt.Errorf("%w: folding a constant of %d elements", ErrUnsupported, out.size())
	}
	out.name = n.GetOutput()[0]
	if op == "Expand" && ins[0].floats != nil && paramName(ins[0]) {
		// A parameter expanded (the class token at a static batch of 1)
		// keeps its module's name for the layer it becomes.
		out.name = ins[0].name
	}
	im.vals[n.GetOutput()[0]] = &value{konst: out}
	return true, nil
}

// take returns the tensor of dims whose element i is t's element idx[i].
func (t *tensor) take(dims []int, idx []int) *tensor {
	out := &tensor{dims: dims}
	for _, i := range idx {
		if t.ints != nil {
			out.ints = append(out.ints, t.ints[i])
		} else {
			out.floats = append(out.floats, t.floats[i])
		}
	}
	if t.ints != nil && out.ints == nil {
		out.ints = []int64{}
	}
	return out
}

func constantOfShape(ins []*tensor, a attrs) (*tensor, error) {
	if len(ins) != 1 || ins[0].ints == nil {
		return nil, fmt.Errorf("%w: ConstantOfShape of a non-integer shape", ErrUnsupported)
	}
	fill := &tensor{floats: []float32{0}}
	if at, ok := a["value"]; ok && at.GetT() != nil {
		var err error
		if fill, err = decodeTensor(at.GetT(), nil); err != nil { // one value, never external
			return nil, err
		}
	}
	dims := make([]int, len(ins[0].ints))
	n := 1
	for i, d := range ins[0].ints {
		if d < 0 || d > maxFold {
			return nil, fmt.Errorf("%w: ConstantOfShape %v", ErrShape, ins[0].ints)
		}
		dims[i], n = int(d), n*int(d)
	}
	if n > maxFold {
		return nil, fmt.Errorf("%w: ConstantOfShape %v", ErrUnsupported, ins[0].ints)
	}
	return fill.take(dims, make([]int, n)), nil
}

// foldExpand broadcasts ins[0] to the shape ins[1] (numpy's rule, both
// ways: the result has the larger of each pair of dims, aligned right).
func foldExpand(ins []*tensor) (*tensor, error) {
	if len(ins) != 2 || ins[1] == nil || ins[1].ints == nil {
		return nil, fmt.Errorf("%w: Expand without an integer shape", ErrMalformed)
	}
	t, shape := ins[0], ins[1].ints
	r := max(len(t.dims), len(shape))
	dims, src := make([]int, r), make([]int, r) // src: t's dim on each output axis (1 where it has none)
	n := 1
	for k := range r {
		a, b := 1, int64(1)
		if i := k - (r - len(t.dims)); i >= 0 {
			a = t.dims[i]
		}
		if i := k - (r - len(shape)); i >= 0 {
			b = shape[i]
		}
		switch {
		case b < 0 || b > maxFold:
			return nil, fmt.Errorf("%w: Expand to %v", ErrShape, shape)
		case int64(a) == b || b == 1:
			dims[k] = a
		case a == 1:
			dims[k] = int(b)
		default:
			return nil, fmt.Errorf("%w: Expand of dims %v to %v, which do not broadcast", ErrShape, t.dims, shape)
		}
		src[k] = a
		if n *= dims[k]; n > maxFold {
			return nil, fmt.Errorf("%w: Expand to %v", ErrUnsupported, shape)
		}
	}
	idx := make([]int, n)
	for i := range idx {
		// Row-major position of output element i, read back in t with
		// the broadcast axes' positions at 0.
		rem, off, stride := i, 0, 1
		for k := r - 1; k >= 0; k-- {
			pos := rem % dims[k]
			rem /= dims[k]
			if src[k] > 1 {
				off += pos * stride
			}
			stride *= src[k]
		}
		idx[i] = off
	}
	return t.take(dims, idx), nil
}

func cast(t *tensor, to int64) (*tensor, error) {
	out := &tensor{dims: t.dims}
	switch onnxpb.TensorProto_DataType(to) {
	case onnxpb.TensorProto_INT64, onnxpb.TensorProto_INT32:
		if t.ints != nil {
			return t, nil
		}
		for _, v := range t.floats {
			out.ints = append(out.ints, int64(v))
		}
	case onnxpb.TensorProto_FLOAT:
		if t.floats != nil {
			return t, nil
		}
		for _, v := range t.ints {
			out.floats = append(out.floats, float32(v))
		}
	default:
		return nil, fmt.Errorf("%w: Cast to data type %s", ErrUnsupported, onnxpb.TensorProto_DataType(to))
	}
	return out, nil
}

func seqIdx(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func foldReshape(ins []*tensor) (*tensor, error) {
	if len(ins) < 2 || ins[1] == nil || ins[1].ints == nil {
		return nil, fmt.Errorf("%w: Reshape without an integer shape", ErrMalformed)
	}
	size := ins[0].size()
	dims := make([]int, len(ins[1].ints))
	infer, known := -1, 1
	for i, d := range ins[1].ints {
		switch {
		case d == 0 && i < len(ins[0].dims):
			dims[i] = ins[0].dims[i]
		case d == -1 && infer < 0:
			infer = i
			continue
		case d > 0:
			dims[i] = int(d)
		default:
			return nil, fmt.Errorf("%w: Reshape of a constant to %v", ErrShape, ins[1].ints)
		}
		known *= dims[i]
	}
	if infer >= 0 && known > 0 {
		dims[infer] = size / known
		known *= dims[infer]
	}
	if known != size {
		return nil, fmt.Errorf("%w: Reshape of a constant of %d elements to %v", ErrShape, size, ins[1].ints)
	}
	return ins[0].take(dims, seqIdx(size)), nil
}

// gatherIndex lists the source index of every element of out (row-major),
// element i along axis k being source position start[k] + i·step[k] there.
func gatherIndex(src, out, start, step []int) []int {
	ss := gpu.ContiguousStrides(src)
	var idx []int
	n := 1
	for _, d := range out {
		n *= d
	}
	for i := range n {
		r, off := i, 0
		for k := len(out) - 1; k >= 0; k-- {
			off += (start[k] + r%out[k]*step[k]) * ss[k]
			r /= out[k]
		}
		idx = append(idx, off)
	}
	return idx
}

func foldTranspose(t *tensor, perm []int64) (*tensor, error) {
	r := len(t.dims)
	if len(perm) == 0 {
		for k := r - 1; k >= 0; k-- {
			perm = append(perm, int64(k))
		}
	}
	if len(perm) != r {
		return nil, fmt.Errorf("%w: Transpose perm %v of a rank-%d constant", ErrShape, perm, r)
	}
	out := make([]int, r)
	ss := gpu.ContiguousStrides(t.dims)
	srcOf := make([]int, r)
	for k, p := range perm {
		if p < 0 || int(p) >= r {
			return nil, fmt.Errorf("%w: Transpose perm %v", ErrShape, perm)
		}
		out[k], srcOf[k] = t.dims[p], ss[p]
	}
	n := t.size()
	idx := make([]int, n)
	for i := range n {
		rr, off := i, 0
		for k := r - 1; k >= 0; k-- {
			off += rr % out[k] * srcOf[k]
			rr /= out[k]
		}
		idx[i] = off
	}
	return t.take(out, idx), nil
}

func (im *importer) foldSlice(ins []*tensor, a attrs) (*tensor, error) {
	t := ins[0]
	var starts, ends, axes, steps []int64
	if im.opset >= 10 {
		get := func(i int) []int64 {
			if i < len(ins) && ins[i] != nil {
				return ins[i].ints
			}
			return nil
		}
		starts, ends, axes, steps = get(1), get(2), get(3), get(4)
	} else {
		starts, ends, axes = a.ints("starts"), a.ints("ends"), a.ints("axes")
	}
	r := len(t.dims)
	start, step, out := make([]int, r), slices.Repeat([]int{1}, r), slices.Clone(t.dims)
	for i := range starts {
		ax := int64(i)
		if axes != nil {
			ax = axes[i]
		}
		if ax < 0 {
			ax += int64(r)
		}
		if ax < 0 || int(ax) >= r || i >= len(ends) {
			return nil, fmt.Errorf("%w: Slice of a rank-%d constant along %d", ErrShape, r, ax)
		}
		d := int64(t.dims[ax])
		s, e, st := starts[i], ends[i], int64(1)
		if steps != nil {
			st = steps[i]
		}
		if st == 0 {
			return nil, fmt.Errorf("%w: Slice step 0", ErrShape)
		}
		if s < 0 {
			s += d
		}
		if e < 0 {
			e += d
		}
		var cnt int64
		if st > 0 {
			s, e = min(max(s, 0), d), min(max(e, 0), d)
			cnt = max(0, (e-s+st-1)/st)
		} else {
			s, e = min(max(s, 0), d-1), min(max(e, -1), d-1)
			cnt = max(0, (s-e-st-1)/(-st))
		}
		start[ax], step[ax], out[ax] = int(s), int(st), int(cnt)
	}
	return t.take(out, gatherIndex(t.dims, out, start, step)), nil
}

func foldConcat(ins []*tensor, axis int64) (*tensor, error) {
	for _, t := range ins {
		if t == nil || (t.ints == nil) != (ins[0].ints == nil) || len(t.dims) != len(ins[0].dims) || len(t.dims) == 0 {
			return nil, fmt.Errorf("%w: Concat of constants of different types or ranks", ErrUnsupported)
		}
	}
	r := len(ins[0].dims)
	if axis < 0 {
		axis += int64(r)
	}
	if axis < 0 || int(axis) >= r {
		return nil, fmt.Errorf("%w: Concat axis %d of rank-%d constants", ErrShape, axis, r)
	}
	out := slices.Clone(ins[0].dims)
	out[axis] = 0
	for _, t := range ins {
		for k := range r {
			if k != int(axis) && t.dims[k] != out[k] {
				return nil, fmt.Errorf("%w: Concat of constants of dims %v and %v", ErrShape, ins[0].dims, t.dims)
			}
		}
		out[axis] += t.dims[axis]
	}
	outer := 1
	for _, d := range out[:axis] {
		outer *= d
	}
	res := &tensor{dims: out}
	for o := range outer {
		for _, t := range ins {
			blk := t.size() / max(outer, 1)
			if t.ints != nil {
				res.ints = append(res.ints, t.ints[o*blk:(o+1)*blk]...)
			} else {
				res.floats = append(res.floats, t.floats[o*blk:(o+1)*blk]...)
			}
		}
	}
	return res, nil
}

func foldSqueeze(t *tensor, axes []int64, unsqueeze bool) (*tensor, error) {
	var out []int
	if unsqueeze {
		r := len(t.dims) + len(axes)
		ins := map[int64]bool{}
		for _, a := range axes {
			if a < 0 {
				a += int64(r)
			}
			ins[a] = true
		}
		j := 0
		for k := range r {
			if ins[int64(k)] {
				out = append(out, 1)
			} else if j < len(t.dims) {
				out = append(out, t.dims[j])
				j++
			}
		}
	} else {
		drop := map[int64]bool{}
		for _, a := range axes {
			if a < 0 {
				a += int64(len(t.dims))
			}
			drop[a] = true
		}
		for k, d := range t.dims {
			if !drop[int64(k)] && (len(axes) > 0 || d != 1) {
				out = append(out, d)
			}
		}
	}
	return t.take(out, seqIdx(t.size())), nil
}
