//go:build opencl

package opencl

import "github.com/cotrain/cotrain/gpu"

// LRN implements gpu.Backend: one work item per (sample, pixel)
// (kernels/lrn.cl).
func (o *OpenCL) LRN(g gpu.LRNGeom, y, x gpu.Buffer) {
	g.Check("LRN", y, x)
	ys, xs := o.buf(y), o.buf(x)
	o.run1(kLrnForward, g.N*g.HW, ys.m, ys.off, xs.m, xs.off, g.N, g.C, g.HW, g.Before(), g.After(),
		g.Bias, g.Alpha/float32(g.Size), g.Beta)
}

// LRNBackward implements gpu.Backend.
func (o *OpenCL) LRNBackward(g gpu.LRNGeom, dx, dy, x, y gpu.Buffer) {
	g.Check("LRNBackward", dx, dy, x, y)
	dxs, dys, xs, ys := o.buf(dx), o.buf(dy), o.buf(x), o.buf(y)
	o.run1(kLrnBackward, g.N*g.HW, dxs.m, dxs.off, dys.m, dys.off, xs.m, xs.off, ys.m, ys.off, g.N, g.C, g.HW,
		g.Before(), g.After(), g.Bias, g.Alpha/float32(g.Size), g.Beta)
}
