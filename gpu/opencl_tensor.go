//go:build opencl

package gpu

// The structural kernels on OpenCL (kernels/tensor.cl). The host merges the
// index space (canon, shared with the CPU) and passes it as scalars.

// dimArgs appends the six dimensions, then each operand's six strides.
func dimArgs(args []any, dims [MaxRank]int, strides ...[MaxRank]int) []any {
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
func (o *OpenCL) CopyStrided(dst, src Buffer, g StridedGeom, add bool) {
	d, s := o.buf(dst), o.buf(src)
	c := canonStrided("CopyStrided", g, d.n, s.n)
	if c.total == 0 {
		return
	}
	o.runRows("copy_strided", c.dims, dimArgs([]any{d.m, d.off + g.DstOff, s.m, s.off + g.SrcOff, b2int(add)},
		c.dims, c.strides[0], c.strides[1])...)
}

// Broadcast implements Backend.
func (o *OpenCL) Broadcast(op BinOp, dst, a, b Buffer, g BroadcastGeom) {
	if op < BinAdd || op > BinDiv {
		panic("gpu: Broadcast: unknown operation " + op.String())
	}
	d, as, bs := o.buf(dst), o.buf(a), o.buf(b)
	c := canonBroadcast("Broadcast", g, d.n, as.n, bs.n)
	if c.total == 0 {
		return
	}
	o.runRows("broadcast", c.dims, dimArgs([]any{int(op), d.m, d.off, as.m, as.off, bs.m, bs.off},
		c.dims, c.strides[1], c.strides[2])...)
}

// ReduceSum implements Backend.
func (o *OpenCL) ReduceSum(dst, src Buffer, g ReduceGeom, alpha float32) {
	d, s := o.buf(dst), o.buf(src)
	r := canonReduce("ReduceSum", g, d.n, s.n)
	if r.out == 0 {
		return
	}
	args := dimArgs([]any{d.m, d.off, s.m, s.off, alpha, r.out, r.inner}, r.keep.dims, r.keep.strides[0], r.keep.strides[1])
	o.run1("reduce_sum", r.out, dimArgs(args, r.red.dims, r.red.strides[0])...)
}

// runRows launches a kernel over a merged index space as a 2-D range: the
// innermost axis across a work-group of up to 128 items (fewer when the axis
// is shorter), one row of the outer axes per work-group row.
func (o *OpenCL) runRows(name string, dims [MaxRank]int, args ...any) {
	k := o.k[name]
	if k == nil {
		panic(errClosed) // Close emptied the table
	}
	inner, rows := dims[MaxRank-1], 1
	for _, d := range dims[:MaxRank-1] {
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
