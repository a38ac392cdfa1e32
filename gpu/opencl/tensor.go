//go:build opencl

package opencl

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// The structural kernels on OpenCL (kernels/tensor.cl). The host merges the
// index space (canon, shared with the CPU) and passes it as scalars.

// dimArgs appends the six dimensions, then each operand's six strides.
func dimArgs(args []any, dims [gpu.MaxRank]int, strides ...[gpu.MaxRank]int) []any {
	for _, d := range dims {
		args = append(args, d)
	}
	for _, s := range strides {
		for _, v := range s {
			args = append(args, v)
		}
	}
	return args
}

// CopyStrided implements Backend.
func (o *OpenCL) CopyStrided(dst, src gpu.Buffer, g gpu.StridedGeom, add bool) {
	d, s := o.buf(dst), o.buf(src)
	c := g.Canon("CopyStrided", d.n, s.n)
	if c.Total == 0 {
		return
	}
	o.runRows(kCopyStrided, c.Dims, dimArgs([]any{d.m, d.off + g.DstOff, s.m, s.off + g.SrcOff, b2int(add)},
		c.Dims, c.Strides[0], c.Strides[1])...)
}

// Broadcast implements Backend.
func (o *OpenCL) Broadcast(op gpu.BinOp, dst, a, b gpu.Buffer, g gpu.BroadcastGeom) {
	op.MustValid("Broadcast")
	d, as, bs := o.buf(dst), o.buf(a), o.buf(b)
	c := g.Canon("Broadcast", d.n, as.n, bs.n)
	if c.Total == 0 {
		return
	}
	o.runRows(kBroadcast, c.Dims, dimArgs([]any{int(op), d.m, d.off, as.m, as.off, bs.m, bs.off},
		c.Dims, c.Strides[1], c.Strides[2])...)
}

// BroadcastPartial implements Backend.
func (o *OpenCL) BroadcastPartial(op gpu.BinOp, wrt int, dst, dy, a, b, y gpu.Buffer, g gpu.BroadcastGeom) {
	op.MustValid("BroadcastPartial")
	if wrt != 0 && wrt != 1 {
		panic(fmt.Sprintf("gpu: BroadcastPartial: operand %d", wrt))
	}
	d, dys, as, bs := o.buf(dst), o.buf(dy), o.buf(a), o.buf(b)
	if dys.n != d.n {
		panic(fmt.Sprintf("gpu: BroadcastPartial: gradient of %d elements for an output of %d", dys.n, d.n))
	}
	ym, yoff := dys.m, -1 // no output: the kernel reads none
	if y != nil {
		ys := o.buf(y)
		if ys.n != d.n {
			panic(fmt.Sprintf("gpu: BroadcastPartial: output of %d elements, want %d", ys.n, d.n))
		}
		ym, yoff = ys.m, ys.off
	}
	c := g.Canon("BroadcastPartial", d.n, as.n, bs.n)
	if c.Total == 0 {
		return
	}
	o.runRows(kBroadcastPartial, c.Dims, dimArgs([]any{int(op), wrt, d.m, d.off, dys.m, dys.off, ym, yoff, as.m, as.off, bs.m, bs.off},
		c.Dims, c.Strides[1], c.Strides[2])...)
}

// ReduceSum implements Backend.
func (o *OpenCL) ReduceSum(dst, src gpu.Buffer, g gpu.ReduceGeom, alpha float32) {
	d, s := o.buf(dst), o.buf(src)
	r := g.Canon("ReduceSum", d.n, s.n)
	if r.Out == 0 {
		return
	}
	args := dimArgs([]any{d.m, d.off, s.m, s.off, alpha, r.Out, r.Inner}, r.Keep.Dims, r.Keep.Strides[0], r.Keep.Strides[1])
	o.run1(kReduceSum, r.Out, dimArgs(args, r.Red.Dims, r.Red.Strides[0])...)
}

// runRows launches a kernel over a merged index space as a 2-D range: the
// innermost axis across a work-group of up to 128 items (fewer when the axis
// is shorter), one row of the outer axes per work-group row.
func (o *OpenCL) runRows(id kernelID, dims [gpu.MaxRank]int, args ...any) {
	k := o.kernel(id)
	inner, rows := dims[gpu.MaxRank-1], 1
	for _, d := range dims[:gpu.MaxRank-1] {
		rows *= d
	}
	wg := 1
	for wg < inner && wg < min(128, k.maxWG) {
		wg *= 2
	}
	wg = min(wg, k.maxWG)
	must(o.ctx.launch(k, []int{(inner + wg - 1) / wg * wg, rows}, []int{wg, 1}, args...))
}

func b2int(b bool) int {
	if b {
		return 1
	}
	return 0
}
