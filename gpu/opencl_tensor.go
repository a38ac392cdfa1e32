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
	o.run1("copy_strided", c.total, dimArgs([]any{d.m, d.off + g.DstOff, s.m, s.off + g.SrcOff, b2int(add), c.total},
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
	o.run1("broadcast", c.total, dimArgs([]any{int(op), d.m, d.off, as.m, as.off, bs.m, bs.off, c.total},
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

func b2int(b bool) int {
	if b {
		return 1
	}
	return 0
}
