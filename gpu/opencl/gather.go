//go:build opencl

package opencl

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

var _ gpu.RowGatherer = (*OpenCL)(nil)

// GatherRows implements gpu.RowGatherer: one launch, an item per element.
func (o *OpenCL) GatherRows(dst, table, ids gpu.Buffer, dim int) {
	d, t, is := o.buf(dst), o.buf(table), o.buf(ids)
	if d.n != is.n*dim {
		panic(fmt.Sprintf("gpu: GatherRows: %d elements for %d rows of %d", d.n, is.n, dim))
	}
	if is.n == 0 {
		return
	}
	k := o.kernel(kGatherRows)
	wg := 1
	for wg < dim && wg < min(128, k.maxWG) {
		wg *= 2
	}
	wg = min(wg, k.maxWG)
	must(o.ctx.launch(k, []int{(dim + wg - 1) / wg * wg, is.n}, []int{wg, 1}, d.m, d.off, t.m, t.off, is.m, is.off, is.n, dim))
}

// ScatterAddRows implements gpu.RowGatherer: one launch, an item per
// column walking the rows in order (deterministic sums).
func (o *OpenCL) ScatterAddRows(table, src, ids gpu.Buffer, dim int) {
	t, s, is := o.buf(table), o.buf(src), o.buf(ids)
	if s.n != is.n*dim {
		panic(fmt.Sprintf("gpu: ScatterAddRows: %d elements for %d rows of %d", s.n, is.n, dim))
	}
	o.run1(kScatterAddRows, dim, t.m, t.off, s.m, s.off, is.m, is.off, is.n, dim)
}
