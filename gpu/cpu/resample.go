package cpu

import (
	"fmt"

	"github.com/cotrain/cotrain/gpu"
)

// taps is the CPU backend's copy of a resampling matrix
// (gpu.Backend.ResampleTable).
type taps struct{ t gpu.ResampleTaps }

// Len implements gpu.Buffer: the number of taps.
func (t *taps) Len() int { return len(t.t.Index) }

// ResampleTable implements gpu.Backend: a private copy of t.
func (*CPU) ResampleTable(t *gpu.ResampleTaps) gpu.Buffer {
	if err := t.Check(); err != nil {
		panic(fmt.Sprintf("gpu: ResampleTable: %v", err))
	}
	return &taps{gpu.ResampleTaps{In: t.In, Out: t.Out, Start: append([]int32(nil), t.Start...),
		Index: append([]int32(nil), t.Index...), Weight: append([]float32(nil), t.Weight...)}}
}

// Resample implements gpu.Backend, on the calling goroutine (it moves
// each element a few times, no more than a copy does). Along an inner axis
// of one element (the last axis) each output is a short dot product;
// otherwise each output row is built from whole input rows, an axpy per
// tap, in the same order per element.
func (*CPU) Resample(dst, src, table gpu.Buffer, outer, inner int) {
	tb, ok := table.(*taps)
	if !ok {
		panic(fmt.Sprintf("gpu: Resample: table is a %T, not the CPU backend's ResampleTable", table))
	}
	t := &tb.t
	gpu.CheckResample("Resample", t, dst, src, outer, inner)
	d, s := h(dst), h(src)
	for o := range outer {
		so, do := o*t.In*inner, o*t.Out*inner
		if inner == 1 {
			for j := range t.Out {
				var acc float32
				for k := t.Start[j]; k < t.Start[j+1]; k++ {
					acc += float32(t.Weight[k] * s[so+int(t.Index[k])])
				}
				d[do+j] = acc
			}
			continue
		}
		for j := range t.Out {
			row := d[do+j*inner : do+(j+1)*inner]
			clear(row)
			for k := t.Start[j]; k < t.Start[j+1]; k++ {
				w, in := t.Weight[k], s[so+int(t.Index[k])*inner:][:inner]
				for i, v := range in {
					row[i] += float32(w * v)
				}
			}
		}
	}
}
