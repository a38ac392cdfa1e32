//go:build opencl

package opencl

import (
	"fmt"
	"unsafe"

	"github.com/cotrain/cotrain/gpu"
)

// clTaps is the device copy of a resampling matrix (ResampleTable): the
// row starts and input positions as int32, the weights as float32 in
// either storage mode (a weight rounded to half would move the taps). A
// Buffer of its own type, so that passing it where values are expected
// panics in buf.
type clTaps struct {
	start, index, weight *clMem
	in, out, n           int
	owner                *OpenCL
}

// Len implements gpu.Buffer: the number of taps.
func (t *clTaps) Len() int { return t.n }

// ResampleTable implements gpu.Backend: three device buffers, written once.
func (o *OpenCL) ResampleTable(t *gpu.ResampleTaps) gpu.Buffer {
	if err := t.Check(); err != nil {
		panic(fmt.Sprintf("gpu: ResampleTable: %v", err))
	}
	ct := &clTaps{in: t.In, out: t.Out, n: len(t.Index), owner: o}
	var err error
	ct.start, err = o.ctx.allocSized(len(t.Start), 4)
	must(err)
	must(o.ctx.write(ct.start, 0, unsafe.Pointer(&t.Start[0]), 4*len(t.Start)))
	// A matrix without taps (an adjoint whose inputs are all skipped)
	// still gets one-element buffers to bind.
	n := max(ct.n, 1)
	ct.index, err = o.ctx.allocSized(n, 4)
	must(err)
	ct.weight, err = o.ctx.allocSized(n, 4)
	must(err)
	if ct.n > 0 {
		must(o.ctx.write(ct.index, 0, unsafe.Pointer(&t.Index[0]), 4*ct.n))
		must(o.ctx.write(ct.weight, 0, unsafe.Pointer(&t.Weight[0]), 4*ct.n))
	}
	return ct
}

// Resample implements gpu.Backend: one work item per output element
// (kernels/resample.cl).
func (o *OpenCL) Resample(dst, src, table gpu.Buffer, outer, inner int) {
	t, ok := table.(*clTaps)
	if !ok || t.owner != o {
		panic(fmt.Sprintf("gpu: Resample: table is a %T, not this backend's ResampleTable", table))
	}
	if outer < 0 || inner <= 0 || dst.Len() != outer*t.out*inner || src.Len() != outer*t.in*inner {
		panic(fmt.Sprintf("gpu: Resample: %d and %d elements for %d×(%d→%d)×%d", dst.Len(), src.Len(), outer, t.in, t.out, inner))
	}
	d, s := o.buf(dst), o.buf(src)
	o.run1(kResample, d.n, d.m, d.off, s.m, s.off, t.start, t.index, t.weight, t.in, t.out, inner, d.n)
}
