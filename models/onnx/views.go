package onnx

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/internal/limits"
	"github.com/cotrain/cotrain/models"
	"github.com/cotrain/cotrain/models/onnx/onnxpb"
)

// Activations whose batch axis moved. nn.MultiheadAttention, as
// torch.onnx.export writes it (a ViT's encoder, any batch_first
// transformer), turns N×T×D into T×N×D, folds the heads into the batch
// (T×(N·h)×d, then (N·h)×T×d), multiplies per head, and undoes it all
// ((T·N)×D for the output projection, then N×T×D). cotrain's layers see
// every sample whole (the batch is the outermost axis of memory), so the
// importer keeps such a tensor as a view: its memory stays that of the
// samples (value.dims, the stored per-sample dims) and value.view says how
// the ONNX tensor's axes are made of the batch and the stored axes.
// Transposes and Reshapes of a view only relabel it; the operators that
// work row by row on the last axis (MatMul by a constant, Gemm, Softmax,
// Slice of the last axis, arithmetic with a scalar) and MatMul between two
// views that keep the batch first run on the stored memory; every other
// operator reads a view in the ordinary layout (canon), refused when the
// batch is not the first axis there.

// batchAxis is the batch's factor in a view's axes.
const batchAxis = -1

// maxBatchMul bounds the multiples of the batch size a shape value holds.
const maxBatchMul = 1 << 40

// batchTimes returns the shape value k·N (batchDim is 1·N).
func batchTimes(k int64) int64 { return batchDim + k - 1 }

// batchMul returns k when v is the shape value k·N.
func batchMul(v int64) (int64, bool) {
	if v >= batchDim && v < batchDim+maxBatchMul {
		return v - batchDim + 1, true
	}
	return 0, false
}

// hasBatch reports whether a shape vector holds a multiple of the batch size.
func hasBatch(vs []int64) bool {
	return slices.ContainsFunc(vs, func(v int64) bool { _, ok := batchMul(v); return ok })
}

// axes returns v's ONNX axes as lists of factors: batchAxis, or k for
// stored axis k of v.ldims() (outer factors first).
func (v *value) axes() [][]int {
	if v.view != nil {
		return v.view
	}
	ax := [][]int{{batchAxis}}
	for k := range v.ldims() {
		ax = append(ax, []int{k})
	}
	return ax
}

// isCanonical reports whether axes ax are the batch and then the r stored
// axes in order, one each.
func isCanonical(ax [][]int, r int) bool {
	if len(ax) != r+1 || !slices.Equal(ax[0], []int{batchAxis}) {
		return false
	}
	for k, a := range ax[1:] {
		if !slices.Equal(a, []int{k}) {
			return false
		}
	}
	return true
}

// withView returns v relabelled with axes ax: no view when they are
// canonical.
func withView(v *value, ax [][]int) *value {
	w := *v
	w.padded, w.view = nil, nil
	if !isCanonical(ax, len(v.ldims())) {
		w.view = ax
	}
	return &w
}

// stored returns v without its view: its memory as the layers see it.
func stored(v *value) *value {
	w := *v
	w.view = nil
	return &w
}

// logicalSizes returns the sizes of v's ONNX axes, the batch's axis as a
// multiple of the batch size (batchTimes).
func (v *value) logicalSizes() []int64 {
	d := v.ldims()
	var out []int64
	for _, a := range v.axes() {
		size, batch := int64(1), false
		for _, f := range a {
			if f == batchAxis {
				batch = true
			} else {
				size *= int64(d[f])
			}
		}
		if batch {
			size = batchTimes(size)
		}
		out = append(out, size)
	}
	return out
}

// restore copies v's memory into its logical order (a transpose layer of
// the stored axes; the batch stays outermost, every sample whole) and
// merges the stored axes each ONNX axis holds into one, so that every axis
// of the result has at most one stored factor, in order. A batch between
// two stored factors of one axis is refused.
func (im *importer) restore(v *value, name string) (*value, error) {
	ax := v.axes()
	var p []int
	for _, a := range ax {
		for _, f := range a {
			if f != batchAxis {
				p = append(p, f)
			}
		}
	}
	d := v.ldims()
	if !slices.Equal(p, identityPerm(len(p))) {
		out := make([]int, len(p))
		for k := range p {
			out[k] = d[p[k]]
		}
		t, err := im.push(models.Layer{Kind: "transpose", Name: im.unique(name), Dims: slices.Clone(d), Perm: p},
			[]*value{stored(v)}, 0, out)
		if err != nil {
			return nil, err
		}
		v, d = t, out
	}
	// The stored factors now come in order: number them afresh, merging
	// each axis's own.
	next, k := 0, 0
	var dims []int
	nax := make([][]int, len(ax))
	for i, a := range ax {
		size, parts := 1, 0
		var fs []int
		for j, f := range a {
			if f == batchAxis {
				if parts > 0 && j < len(a)-1 {
					return nil, fmt.Errorf("%w: an axis that holds the batch between two others", ErrUnsupported)
				}
				fs = append(fs, batchAxis)
				continue
			}
			size *= d[k]
			k++
			parts++
		}
		if parts > 0 {
			dims = append(dims, size)
			at := len(fs)
			if len(fs) > 0 && a[0] == batchAxis {
				at = 1
			} else {
				at = 0
			}
			fs = slices.Insert(fs, at, next)
			next++
		}
		nax[i] = fs
	}
	if len(dims) == 0 {
		dims = []int{1}
	}
	w, err := im.view(stored(v), dims, name+".merge")
	if err != nil {
		return nil, err
	}
	return withView(w, nax), nil
}

// canon returns v in the ordinary layout (batch first, every other axis
// stored), for an operator that reads it so; op names it in the error when
// the batch is not the first axis alone.
func (im *importer) canon(v *value, name, op string) (*value, error) {
	if v.view == nil {
		return v, nil
	}
	w, err := im.restore(v, name+".canon")
	if err != nil {
		return nil, err
	}
	ax := w.view
	if w.view == nil {
		return w, nil
	}
	if !slices.Equal(ax[0], []int{batchAxis}) {
		return nil, fmt.Errorf("%w: %s reads a tensor of shape %v whose first axis is not the batch alone (-2 is the batch size; "+
			"the batch axis moved, as nn.MultiheadAttention's export moves it)", ErrUnsupported, op, showShape(v.logicalSizes()))
	}
	// Every other axis holds one stored axis or none (a 1).
	var dims []int
	for _, a := range ax[1:] {
		if len(a) != 1 || a[0] == batchAxis {
			if len(a) == 0 {
				dims = append(dims, 1)
				continue
			}
			return nil, fmt.Errorf("%w: %s reads a tensor of shape %v with the batch inside another axis", ErrUnsupported, op,
				showShape(v.logicalSizes()))
		}
		dims = append(dims, w.ldims()[a[0]])
	}
	return im.view(stored(w), dims, name+".canon")
}

// rows returns v laid out for an operator that works on its last ONNX
// axis at every position of the others (the rows of memory): restored,
// with the last axis a stored one and the last stored axis.
func (im *importer) rows(v *value, name, op string) (*value, error) {
	if v.view == nil {
		return v, nil
	}
	w, err := im.restore(v, name+".rows")
	if err != nil {
		return nil, err
	}
	if w.view == nil {
		return w, nil
	}
	last := w.view[len(w.view)-1]
	if len(last) != 1 || last[0] != len(w.ldims())-1 {
		return nil, fmt.Errorf("%w: %s along the last axis of shape %v, which holds the batch", ErrUnsupported, op,
			showShape(v.logicalSizes()))
	}
	return w, nil
}

// showShape prints a shape vector, the batch size as -2 (k·N as -2·k).
func showShape(s []int64) []string {
	out := make([]string, len(s))
	for i, v := range s {
		if k, ok := batchMul(v); ok {
			out[i] = "-2"
			if k != 1 {
				out[i] = fmt.Sprintf("-2·%d", k)
			}
			continue
		}
		out[i] = fmt.Sprint(v)
	}
	return out
}

// transposeView maps a Transpose of a view, or one that moves the batch
// axis: the axes are permuted, no data moves.
func (im *importer) transposeView(n *onnxpb.NodeProto, x *value, perm []int64) error {
	ax := x.axes()
	if len(perm) != len(ax) {
		return fmt.Errorf("%w: Transpose perm %v of a rank-%d tensor", ErrShape, perm, len(ax))
	}
	out := make([][]int, len(ax))
	seen := make([]bool, len(ax))
	for k, p := range perm {
		if p < 0 || int(p) >= len(ax) || seen[p] {
			return fmt.Errorf("%w: Transpose perm %v", ErrShape, perm)
		}
		seen[p] = true
		out[k] = ax[p]
	}
	im.vals[n.GetOutput()[0]] = withView(x, out)
	return nil
}

// reshapeView maps a Reshape of a view, or one whose target moves or
// multiplies the batch (T×(N·h)×d): the target's axes are made of the
// input's factors in order, a stored axis split where an axis ends inside
// it. The target holds the batch size exactly once (as k·N from shape
// arithmetic, or a 0 copying an axis that holds it).
func (im *importer) reshapeView(n *onnxpb.NodeProto, x *value, target []int64) error {
	in := x.logicalSizes()
	d := x.ldims()
	fail := func(why string) error {
		return fmt.Errorf("%w: Reshape of shape %v to %v (%s; -2 is the batch size)", ErrUnsupported, showShape(in), showShape(target), why)
	}
	// Each target axis: its size without the batch, and whether it holds it.
	sizes := make([]int64, len(target))
	batch := -1
	infer := -1
	known := int64(1)
	for i, t := range target {
		if t == 0 && i < len(in) {
			t = in[i]
		}
		switch k, ok := batchMul(t); {
		case ok:
			if batch >= 0 {
				return fail("the batch size twice")
			}
			if k > limits.MaxElements {
				return fail(fmt.Sprintf("the batch size times %d", k))
			}
			batch, sizes[i] = i, k
		case t == -1 && infer < 0:
			infer = i
			continue
		case t > 0 && t <= limits.MaxElements:
			sizes[i] = t
		default:
			return fail(fmt.Sprintf("dimension %d", t))
		}
		// Each factor is at most 2^31 and known stays at most the
		// input's size, so the product cannot overflow.
		if known *= sizes[i]; known > int64(limits.MaxElements) {
			return fail("more elements than a tensor may hold")
		}
	}
	total := int64(1)
	for _, v := range d {
		total *= int64(v)
	}
	if infer >= 0 {
		if known == 0 || total%known != 0 {
			return fail("the sizes do not divide")
		}
		sizes[infer] = total / known
		known = total
	}
	if batch < 0 {
		// A constant target, as an export at a static batch of 1 writes
		// it ([17 2 16] for T×(N·h)×d): the batch is the outer factor of
		// the first axis whose outer axes hold the elements the input
		// has before its batch (17 here).
		if batch = staticBatchAxis(x, d, sizes); batch < 0 {
			return fail("no axis holds the batch size")
		}
	}
	if known != total {
		return fail(fmt.Sprintf("%d elements per sample, the input has %d", known, total))
	}
	// The input's factors in order, each stored one with what is left of it.
	type factor struct {
		id   int // stored axis, or batchAxis
		left int64
	}
	var fs []factor
	for _, a := range x.axes() {
		for _, f := range a {
			if f == batchAxis {
				fs = append(fs, factor{batchAxis, 0})
			} else {
				fs = append(fs, factor{f, int64(d[f])})
			}
		}
	}
	parts := make([][]int64, len(d)) // the sizes each stored axis splits into, outer first
	type piece struct{ axis, part int }
	out := make([][]piece, len(target))
	j := 0
	for i := range target {
		need, wantBatch := sizes[i], i == batch
		for need > 1 || wantBatch {
			for j < len(fs) && fs[j].id != batchAxis && fs[j].left == 1 {
				j++ // a stored axis used up, or of size 1
			}
			if j == len(fs) {
				return fail("the sizes do not match")
			}
			f := &fs[j]
			if f.id == batchAxis {
				if !wantBatch {
					return fail(fmt.Sprintf("axis %d would hold the batch", i))
				}
				out[i] = append(out[i], piece{batchAxis, 0})
				wantBatch = false
				j++
				continue
			}
			take := f.left
			if need%take != 0 {
				if take%need != 0 {
					return fail("an axis ends inside another")
				}
				take = need
			}
			parts[f.id] = append(parts[f.id], take)
			out[i] = append(out[i], piece{f.id, len(parts[f.id]) - 1})
			f.left /= take
			need /= take
		}
	}
	for ; j < len(fs); j++ {
		if fs[j].id == batchAxis || fs[j].left != 1 {
			return fail("the sizes do not match")
		}
	}
	// Number the stored parts: stored axis by axis, outer parts first.
	ids := make([][]int, len(d))
	var dims []int
	for k := range d {
		if len(parts[k]) == 0 {
			parts[k] = []int64{1} // an axis of 1, consumed by none
		}
		for _, p := range parts[k] {
			ids[k] = append(ids[k], len(dims))
			dims = append(dims, int(p))
		}
	}
	ax := make([][]int, len(target))
	for i, ps := range out {
		ax[i] = []int{}
		for _, p := range ps {
			if p.axis == batchAxis {
				ax[i] = append(ax[i], batchAxis)
			} else {
				ax[i] = append(ax[i], ids[p.axis][p.part])
			}
		}
	}
	// Stored axes of 1 that no target axis took go to the last axis.
	used := make([]bool, len(dims))
	for _, a := range ax {
		for _, f := range a {
			if f != batchAxis {
				used[f] = true
			}
		}
	}
	for k, u := range used {
		if !u {
			ax[len(ax)-1] = append(ax[len(ax)-1], k)
		}
	}
	v := stored(x)
	if !slices.Equal(dims, d) {
		var err error
		if v, err = im.view(v, dims, im.layerName(n, "")); err != nil {
			return err
		}
	}
	im.vals[n.GetOutput()[0]] = withView(v, ax)
	return nil
}

// sliceView maps a Slice of a view along its last axis (the query, key and
// value thirds of attention's in_proj output), row by row.
func (im *importer) sliceView(n *onnxpb.NodeProto, x *value, starts, ends, axes, steps []int64) error {
	r := int64(len(x.view))
	if len(starts) != 1 || (axes != nil && axes[0] != -1 && axes[0] != r-1) || (steps != nil && steps[0] != 1) {
		return fmt.Errorf("%w: Slice of a tensor of shape %v other than one range of its last axis (the batch axis moved)",
			ErrUnsupported, showShape(x.logicalSizes()))
	}
	w, err := im.rows(x, n.GetInput()[0], "Slice")
	if err != nil {
		return err
	}
	d := w.ldims()
	k := len(d) - 1
	lo, hi := clampRange(starts[0], ends[0], d[k])
	if hi <= lo {
		return fmt.Errorf("%w: Slice [%d:%d] of an axis of %d is empty", ErrUnsupported, starts[0], ends[0], d[k])
	}
	st, sp, cn := make([]int, len(d)), slices.Repeat([]int{1}, len(d)), slices.Clone(d)
	st[k], cn[k] = lo, hi-lo
	v, err := im.push(models.Layer{Kind: "slice", Name: im.layerName(n, ""), Dims: slices.Clone(d), Starts: st, Steps: sp, Counts: cn},
		[]*value{stored(w)}, 0, cn)
	if err == nil {
		im.vals[n.GetOutput()[0]] = withView(v, w.axes())
	}
	return err
}

// matmulViews maps MatMul between views that keep the batch first
// (attention's heads folded into it: (N·h)×T×d by (N·h)×d×T): each is
// restored, so that its memory per sample is h×T×d, and multiplied there.
func (im *importer) matmulViews(n *onnxpb.NodeProto, x, y *value) error {
	ops := [2]*value{x, y}
	for i, v := range ops {
		w, err := im.restore(v, n.GetInput()[i]+".rows")
		if err != nil {
			return err
		}
		ax := w.axes()
		ok := len(ax) >= 3 && len(ax[0]) >= 1 && ax[0][0] == batchAxis && len(ax[0]) <= 2
		for _, a := range ax[1:] {
			ok = ok && len(a) == 1 && a[0] != batchAxis
		}
		if !ok {
			return fmt.Errorf("%w: MatMul of activations of shapes %v and %v (batch…×M×K by batch…×K×P, the batch first)",
				ErrUnsupported, showShape(x.logicalSizes()), showShape(y.logicalSizes()))
		}
		ops[i] = w
	}
	if ops[0].layer == ops[1].layer {
		return fmt.Errorf("%w: MatMul of a tensor with itself", ErrUnsupported)
	}
	xd, yd := ops[0].ldims(), ops[1].ldims()
	r := len(xd)
	if len(ops[0].axes()[0]) != len(ops[1].axes()[0]) || len(yd) != r || !slices.Equal(xd[:r-2], yd[:r-2]) || xd[r-1] != yd[r-2] {
		return fmt.Errorf("%w: MatMul of activations of shapes %v and %v (batch…×M×K by batch…×K×P, the same leading dims)",
			ErrUnsupported, showShape(x.logicalSizes()), showShape(y.logicalSizes()))
	}
	out := slices.Clone(xd)
	out[r-1] = yd[r-1]
	d := models.Layer{Kind: "matmul", Name: im.layerName(n, ""), Dims: slices.Clone(xd), Dims2: slices.Clone(yd)}
	v, err := im.push(d, []*value{stored(ops[0]), stored(ops[1])}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = withView(v, ops[0].axes())
	}
	return err
}

// foldBatchArith folds shape arithmetic on multiples of the batch size:
// k·N times or divided by a constant (nn.MultiheadAttention's N·heads and
// T·N). Anything else of the batch size is refused.
func (im *importer) foldBatchArith(n *onnxpb.NodeProto, op gpu.BinOp, a, b []int64, scalar bool) error {
	if len(a) != len(b) && len(a) != 1 && len(b) != 1 {
		return fmt.Errorf("%w: %s of shape vectors of %d and %d elements", ErrShape, n.GetOpType(), len(a), len(b))
	}
	out := make([]int64, max(len(a), len(b)))
	for i := range out {
		p, q := a[min(i, len(a)-1)], b[min(i, len(b)-1)]
		kp, bp := batchMul(p)
		kq, bq := batchMul(q)
		switch {
		case op == gpu.BinMul && bp && !bq && q > 0 && q < maxBatchMul/kp:
			out[i] = batchTimes(kp * q)
		case op == gpu.BinMul && bq && !bp && p > 0 && p < maxBatchMul/kq:
			out[i] = batchTimes(kq * p)
		case op == gpu.BinDiv && bp && !bq && q > 0 && kp%q == 0:
			out[i] = batchTimes(kp / q)
		default:
			return fmt.Errorf("%w: %s of the batch size and %v in shape arithmetic", ErrUnsupported, n.GetOpType(), showShape([]int64{p, q}))
		}
	}
	im.vals[n.GetOutput()[0]] = &value{sym: out, scalar: scalar}
	return nil
}

// intVector returns v as an integer vector: a shape vector (perhaps with
// the batch size) or an integer constant.
func intVector(v *value) ([]int64, bool) {
	switch {
	case v.sym != nil:
		return v.sym, true
	case v.konst != nil && v.konst.ints != nil:
		return v.konst.ints, true
	}
	return nil, false
}

// equalWhere folds Equal and Where of shape vectors, as torch writes
// x.expand(n, -1, -1)'s shape: Equal(shape, -1) marks the -1 entries and
// Where keeps the others. The batch size is never -1 (nor 0); comparing it
// with another number is refused.
func (im *importer) equalWhere(n *onnxpb.NodeProto) error {
	var ins [][]int64
	for i := range n.GetInput() {
		v, err := im.get(n, i)
		if err != nil {
			return err
		}
		vec, ok := intVector(v)
		if !ok {
			return fmt.Errorf("%w: %s of tensors other than integer shape vectors", ErrUnsupported, n.GetOpType())
		}
		ins = append(ins, vec)
	}
	size := 0
	for _, v := range ins {
		size = max(size, len(v))
	}
	for _, v := range ins {
		if len(v) != size && len(v) != 1 {
			return fmt.Errorf("%w: %s of vectors of %d and %d elements", ErrShape, n.GetOpType(), len(v), size)
		}
	}
	at := func(v []int64, i int) int64 { return v[min(i, len(v)-1)] }
	out := make([]int64, size)
	switch n.GetOpType() {
	case "Equal":
		if len(ins) != 2 {
			return fmt.Errorf("%w: Equal of %d inputs", ErrMalformed, len(ins))
		}
		for i := range out {
			p, q := at(ins[0], i), at(ins[1], i)
			_, bp := batchMul(p)
			_, bq := batchMul(q)
			switch {
			case bp && bq:
				return fmt.Errorf("%w: Equal of two batch sizes", ErrUnsupported)
			case bp && q > 0 || bq && p > 0:
				return fmt.Errorf("%w: Equal of the batch size and %d, which it may be", ErrUnsupported, max(p, q))
			case p == q:
				out[i] = 1
			}
		}
	case "Where":
		if len(ins) != 3 {
			return fmt.Errorf("%w: Where of %d inputs", ErrMalformed, len(ins))
		}
		for i := range out {
			if c := at(ins[0], i); hasBatch([]int64{c}) {
				return fmt.Errorf("%w: Where whose condition is the batch size", ErrUnsupported)
			} else if c != 0 {
				out[i] = at(ins[1], i)
			} else {
				out[i] = at(ins[2], i)
			}
		}
	}
	if hasBatch(out) {
		im.vals[n.GetOutput()[0]] = &value{sym: out}
	} else {
		im.vals[n.GetOutput()[0]] = &value{konst: &tensor{name: n.GetOutput()[0], ints: out, dims: []int{size}}}
	}
	return nil
}

// expandConst maps Expand of a constant to a shape that starts with the
// batch size (the class token, token.expand(N, -1, -1)): the constant for
// every sample, which only a Concat with activations may read (prepend).
func (im *importer) expandConst(n *onnxpb.NodeProto, c *tensor, shape []int64) error {
	if len(shape) == 0 || shape[0] != batchDim || hasBatch(shape[1:]) || c.floats == nil {
		return fmt.Errorf("%w: Expand of the constant %q to %v", ErrUnsupported, c.name, showShape(shape))
	}
	// The constant keeps its own dims after the batch's 1: numpy's rule
	// with every other target entry 1 or -1 (torch's expand keeps those).
	dims := slices.Clone(c.dims)
	for len(dims) < len(shape) {
		dims = append([]int{1}, dims...)
	}
	if len(dims) > len(shape) || dims[0] != 1 {
		return fmt.Errorf("%w: Expand of the constant %q of dims %v to %v", ErrUnsupported, c.name, c.dims, showShape(shape))
	}
	for k, s := range shape[1:] {
		if s != 1 && s != -1 && s != int64(dims[k+1]) {
			return fmt.Errorf("%w: Expand of the constant %q of dims %v to %v (along the batch only)", ErrUnsupported, c.name, c.dims, showShape(shape))
		}
	}
	t := *c
	t.dims = dims[1:]
	im.vals[n.GetOutput()[0]] = &value{konst: &t, bconst: true}
	return nil
}

// prependConst maps Concat of a constant expanded over the batch (first)
// and an activation along a per-sample axis to a prepend layer whose
// learned slices start as the constant: ViT's class token.
func (im *importer) prependConst(n *onnxpb.NodeProto, a attrs, c, x *value) error {
	xd := x.ldims()
	ax, err := sampleAxis(a.int("axis", 0), len(xd)+1, "Concat")
	if err != nil {
		return err
	}
	cd := c.konst.dims
	if len(cd) != len(xd) {
		return fmt.Errorf("%w: Concat of a constant of dims %v and an activation of dims %v", ErrShape, cd, xd)
	}
	for k := range xd {
		if k != ax && cd[k] != xd[k] {
			return fmt.Errorf("%w: Concat of a constant of dims %v and an activation of dims %v along axis %d", ErrShape, cd, xd, ax+1)
		}
	}
	// Named after the constant ("class_token"; "x.weight" as cotrain
	// exports it gives "x" back).
	d := models.Layer{Kind: "prepend", Name: im.unique(strings.TrimSuffix(c.konst.name, ".weight")), Dims: slices.Clone(xd), Axis: ax, Size: cd[ax]}
	im.params[d.Name+".weight"] = c.konst
	out := slices.Clone(xd)
	out[ax] += cd[ax]
	v, err := im.push(d, []*value{x}, 0, out)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// isParam reports whether the constant c added to the activation a is a
// learned tensor of the sample's shape: a PyTorch parameter (an
// initializer named by its module, not "onnx::…" nor a Constant node's
// "/…" output) with a's per-sample dims after leading 1s, of two or more
// axes (x + pos_embedding of 1×T×D).
func (im *importer) isParam(a *value, c *tensor) bool {
	if c.floats == nil || !paramName(c) {
		return false
	}
	d := c.dims
	for len(d) > 0 && d[0] == 1 && len(d) > len(a.ldims()) {
		d = d[1:]
	}
	return len(d) >= 2 && slices.Equal(d, a.ldims())
}

// addParam maps Add of a learned tensor (isParam) to an addparam layer
// whose weight starts as the constant.
func (im *importer) addParam(n *onnxpb.NodeProto, a *value, c *tensor) error {
	d := models.Layer{Kind: "addparam", Name: im.unique(strings.TrimSuffix(c.name, ".weight")), Dims: slices.Clone(a.ldims())}
	im.params[d.Name+".weight"] = c
	v, err := im.push(d, []*value{a}, 0, d.Dims)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// foldFloats computes the binary table's op on two float constants, one of
// them a scalar or both of one size (the attention scale torch computes
// from the shape: 1 / √d).
func (im *importer) foldFloats(n *onnxpb.NodeProto, op gpu.BinOp, x, y *tensor) error {
	e, ok := op.Entry()
	if !ok {
		return fmt.Errorf("%w: %s of constants", ErrUnsupported, n.GetOpType())
	}
	p, q := x.floats, y.floats
	if len(p) != len(q) && len(p) != 1 && len(q) != 1 || max(len(p), len(q)) > maxFold {
		return fmt.Errorf("%w: %s of constants of dims %v and %v (one a scalar, or both of one size)", ErrUnsupported, n.GetOpType(), x.dims, y.dims)
	}
	dims := x.dims
	if len(q) > len(p) {
		dims = y.dims
	}
	out := &tensor{name: n.GetOutput()[0], dims: dims, floats: make([]float32, max(len(p), len(q)))}
	for i := range out.floats {
		out.floats[i] = e.Forward(p[min(i, len(p)-1)], q[min(i, len(q)-1)])
	}
	im.vals[out.name] = &value{konst: out}
	return nil
}

// paramName reports whether a constant's name is a PyTorch parameter's
// (its module path), not "onnx::…" nor a Constant node's "/…" output.
func paramName(c *tensor) bool {
	return c.name != "" && !strings.HasPrefix(c.name, "onnx::") && !strings.HasPrefix(c.name, "/")
}

// isScale reports whether the constant c multiplying the activation a is
// a learned scale: a parameter (paramName) of a's rank, each axis a's or 1,
// more than one value (ConvNeXt's layer scale of C×1×1).
func (im *importer) isScale(a *value, c *tensor) bool {
	ad := a.ldims()
	if c.floats == nil || !paramName(c) || len(c.dims) != len(ad) || c.size() < 2 {
		return false
	}
	for k, d := range c.dims {
		if d != 1 && d != ad[k] {
			return false
		}
	}
	return true
}

// scaleParam maps Mul by a learned scale (isScale) to a scaleparam layer
// whose weight starts as the constant.
func (im *importer) scaleParam(n *onnxpb.NodeProto, a *value, c *tensor) error {
	d := models.Layer{Kind: "scaleparam", Name: im.unique(strings.TrimSuffix(c.name, ".weight")), Dims: slices.Clone(a.ldims()),
		Dims2: slices.Clone(c.dims)}
	im.params[d.Name+".weight"] = c
	v, err := im.push(d, []*value{a}, 0, d.Dims)
	if err == nil {
		im.vals[n.GetOutput()[0]] = v
	}
	return err
}

// staticBatchAxis returns the axis of a Reshape target of sizes (none of
// them the batch size) that holds the batch of view x when the export's
// batch was 1: the first whose outer axes hold as many elements as x has
// before its batch factor; -1 when none does. When that axis is the last
// one, the batch is the inner factor of the axis before it instead (the
// rows of T×D from T×N×h×d are T·N: the last axis is the features, read row
// by row, never the batch).
func staticBatchAxis(x *value, d []int, sizes []int64) int {
	before := int64(1)
outer:
	for _, a := range x.axes() {
		for _, f := range a {
			if f == batchAxis {
				break outer
			}
			before *= int64(d[f])
		}
	}
	p := int64(1)
	for i, s := range sizes {
		if p == before {
			if i > 0 && i == len(sizes)-1 {
				return i - 1
			}
			return i
		}
		if p *= s; p > before {
			break
		}
	}
	return -1
}

// mod folds Mod of integer constants (shape arithmetic: the legacy
// exporter writes nn.MultiheadAttention's unflatten with a Mod of two
// constants): fmod 0 takes the divisor's sign, as Python's %, fmod 1 the
// dividend's, as C's fmod. The batch size cannot take part, and Mod of
// activations or float tensors is refused.
func (im *importer) mod(n *onnxpb.NodeProto, a attrs) error {
	if len(n.GetInput()) != 2 {
		return fmt.Errorf("%w: Mod of %d inputs", ErrMalformed, len(n.GetInput()))
	}
	var ins [2][]int64
	scalar := true
	for i := range ins {
		v, err := im.get(n, i)
		if err != nil {
			return err
		}
		t := constTensor(v)
		if t == nil || t.ints == nil {
			return fmt.Errorf("%w: Mod of tensors other than integer constants (shape arithmetic without the batch size)", ErrUnsupported)
		}
		ins[i] = t.ints
		scalar = scalar && len(t.dims) == 0
	}
	p, q := ins[0], ins[1]
	if len(p) != len(q) && len(p) != 1 && len(q) != 1 || len(p) == 0 || len(q) == 0 {
		return fmt.Errorf("%w: Mod of vectors of %d and %d elements", ErrShape, len(p), len(q))
	}
	fmod := a.int("fmod", 0) != 0
	out := make([]int64, max(len(p), len(q)))
	for i := range out {
		x, y := p[min(i, len(p)-1)], q[min(i, len(q)-1)]
		if y == 0 {
			return fmt.Errorf("%w: integer Mod by zero", ErrShape)
		}
		r := x % y // Go's %: the dividend's sign
		if !fmod && r != 0 && (r < 0) != (y < 0) {
			r += y
		}
		out[i] = r
	}
	dims := []int{len(out)}
	if scalar {
		dims = nil
	}
	im.vals[n.GetOutput()[0]] = &value{konst: &tensor{name: n.GetOutput()[0], ints: out, dims: dims}}
	return nil
}

// squeezeView maps Squeeze and Unsqueeze of a view (nn.MultiheadAttention's
// unflatten of the packed projections, as PyTorch 2 writes it:
// Unsqueeze(0), Transpose, Squeeze): an axis of 1 with no factor is added or
// removed, no data moves. Squeeze of an axis that holds a factor (the
// batch, or a stored axis of 1) returns errSqueezeCanon: the caller reads
// the view restored instead (canon). Squeeze without axes is refused.
// errSqueezeCanon says squeezeView left the Squeeze to the ordinary layout.
var errSqueezeCanon = errors.New("onnx: squeeze of a stored axis")

func (im *importer) squeezeView(n *onnxpb.NodeProto, x *value, axes []int64) error {
	ax := x.axes()
	op := n.GetOpType()
	rank := len(ax)
	if op == "Unsqueeze" {
		rank += len(axes)
	}
	if len(axes) == 0 {
		return fmt.Errorf("%w: %s without axes of a tensor of shape %v (the batch axis moved)", ErrUnsupported, op, showShape(x.logicalSizes()))
	}
	mark := make([]bool, rank)
	for _, a := range axes {
		if a < 0 {
			a += int64(rank)
		}
		if a < 0 || a >= int64(rank) || mark[a] {
			return fmt.Errorf("%w: %s axes %v of a rank-%d tensor", ErrShape, op, axes, len(ax))
		}
		mark[a] = true
	}
	var out [][]int
	j := 0
	for k := range rank {
		switch {
		case op == "Unsqueeze" && mark[k]:
			out = append(out, []int{})
		case op == "Unsqueeze":
			out = append(out, ax[j])
			j++
		case mark[k] && len(ax[k]) != 0:
			return errSqueezeCanon
		case !mark[k]:
			out = append(out, ax[k])
		}
	}
	if len(out) == 0 {
		return fmt.Errorf("%w: %s to a tensor of no axes", ErrUnsupported, op)
	}
	im.vals[n.GetOutput()[0]] = withView(x, out)
	return nil
}

// gatherView maps Gather of one index along an axis of a view that holds
// one stored axis and not the batch (the query, key or value of
// nn.MultiheadAttention's packed projection, select(0) of 3×T×N×D): a
// slice layer of that stored axis, which then goes from the memory.
func (im *importer) gatherView(n *onnxpb.NodeProto, x *value, axis, idx int64) error {
	ax := x.axes()
	if axis < 0 {
		axis += int64(len(ax))
	}
	if axis < 0 || axis >= int64(len(ax)) {
		return fmt.Errorf("%w: Gather axis %d of a rank-%d tensor", ErrShape, axis, len(ax))
	}
	if len(ax[axis]) != 1 || ax[axis][0] == batchAxis {
		return fmt.Errorf("%w: Gather along axis %d of shape %v, which holds the batch or several stored axes (the batch axis moved)",
			ErrUnsupported, axis, showShape(x.logicalSizes()))
	}
	d := x.ldims()
	k := ax[axis][0]
	if idx < 0 {
		idx += int64(d[k])
	}
	if idx < 0 || idx >= int64(d[k]) {
		return fmt.Errorf("%w: Gather index %d of an axis of %d", ErrShape, idx, d[k])
	}
	st, sp, cn := make([]int, len(d)), slices.Repeat([]int{1}, len(d)), slices.Clone(d)
	st[k], cn[k] = int(idx), 1
	name := im.layerName(n, "")
	v, err := im.push(models.Layer{Kind: "slice", Name: name, Dims: slices.Clone(d), Starts: st, Steps: sp, Counts: cn},
		[]*value{stored(x)}, 0, cn)
	if err != nil {
		return err
	}
	nd := slices.Delete(slices.Clone(cn), k, k+1)
	if len(nd) == 0 {
		nd = []int{1}
	}
	if v, err = im.view(v, nd, name+".drop"); err != nil {
		return err
	}
	var out [][]int
	for i, a := range ax {
		if i == int(axis) {
			continue
		}
		var fs []int
		for _, f := range a {
			if f != batchAxis && f > k {
				f--
			}
			fs = append(fs, f)
		}
		if fs == nil {
			fs = []int{}
		}
		out = append(out, fs)
	}
	im.vals[n.GetOutput()[0]] = withView(v, out)
	return nil
}

// isRange reports whether vs is 0, 1, …, len(vs)-1.
func isRange(vs []int64) bool {
	for i, v := range vs {
		if v != int64(i) {
			return false
		}
	}
	return len(vs) > 0
}

// gatherRange maps Gather of every index of an axis in order, shaped as
// idx: a Reshape of that axis into idx's dims. The dynamo exporter writes
// an as_strided of contiguous strides so (ConvNeXt's classifier reads the
// pooled N×C×1×1 through a flatten to one axis and back); at the static
// batch of 1 it was exported at, an axis that holds the batch counts
// its size without it.
func (im *importer) gatherRange(n *onnxpb.NodeProto, x *value, axis int64, idx *tensor) error {
	in := x.logicalSizes()
	if axis < 0 {
		axis += int64(len(in))
	}
	if axis < 0 || axis >= int64(len(in)) {
		return fmt.Errorf("%w: Gather axis %d of a rank-%d tensor", ErrShape, axis, len(in))
	}
	size := in[axis]
	if k, ok := batchMul(size); ok {
		size = k
	}
	if int64(len(idx.ints)) != size {
		return fmt.Errorf("%w: Gather of the %d first indices of an axis of %v (all of them in order are read, as a reshape)",
			ErrUnsupported, len(idx.ints), showShape(in[axis:axis+1]))
	}
	target := slices.Clone(in[:axis])
	for _, d := range idx.dims {
		target = append(target, int64(d))
	}
	target = append(target, in[axis+1:]...)
	return im.reshapeView(n, x, target)
}
