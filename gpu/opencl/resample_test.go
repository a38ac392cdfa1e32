//go:build opencl

package opencl

import (
	"testing"

	"github.com/cotrain/cotrain/gpu"
)

// BenchmarkOpenCLResample times Resample's kernel on the two passes of a
// bilinear ×2 (PyTorch's align_corners=False) of a batch × 64 × 28×28 map
// (COTRAIN_BENCH_BATCH, 32 by default) and on their transposed matrices
// (the backward pass): along W (inner 1) and along H (inner 56), reporting
// the bytes read and written per second.
func BenchmarkOpenCLResample(b *testing.B) {
	o := openCLForTest(b)
	nb := benchBatch(b)
	m, err := gpu.ResampleAxis{In: 28, Out: 56, Scale: 2, Mode: gpu.ResampleLinear, Coord: gpu.CoordPytorchHalfPixel}.Taps()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name         string
		m            *gpu.ResampleTaps
		outer, inner int
	}{
		{"W", m, nb * 64 * 28, 1},
		{"H", m, nb * 64, 56},
		{"W-transposed", m.Transpose(), nb * 64 * 28, 1},
		{"H-transposed", m.Transpose(), nb * 64, 56},
	} {
		tab := o.ResampleTable(c.m)
		x, y := o.Alloc(c.outer*c.m.In*c.inner), o.Alloc(c.outer*c.m.Out*c.inner)
		bytes := int64(x.Len()+y.Len()) * int64(o.esize())
		b.Run(c.name, func(b *testing.B) {
			benchKernel(b, o, bytes, func() { o.Resample(y, x, tab, c.outer, c.inner) })
		})
	}
}
