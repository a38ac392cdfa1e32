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

// resampleJob is one Resample call: the matrix, the operands, and the
// length of the inner axis. Its items are the output rows (outer × Out),
// each inner elements long and written by one part alone.
type resampleJob struct {
	t     *gpu.ResampleTaps
	d, s  []float32
	inner int
}

// Resample implements gpu.Backend, split over the output rows (a row is
// written by one part, so the bits do not depend on the thread count).
// Along an inner axis of one element (the last axis) each output is a
// short dot product; otherwise each output row is built from whole input
// rows, an axpy per tap, in the same order per element.
func (c *CPU) Resample(dst, src, table gpu.Buffer, outer, inner int) {
	tb, ok := table.(*taps)
	if !ok {
		panic(fmt.Sprintf("gpu: Resample: table is a %T, not the CPU backend's ResampleTable", table))
	}
	t := &tb.t
	gpu.CheckResample("Resample", t, dst, src, outer, inner)
	j := &c.job
	j.op, j.rs = opResample, resampleJob{t: t, d: h(dst), s: h(src), inner: inner}
	// The work is the taps read: about the output times the taps a row.
	c.run(j, outer*t.Out, outer*inner*max(len(t.Index), t.Out))
}

// rows computes output rows [lo, hi), row o·Out + j being output j of
// outer index o (counted along, not divided out per row).
func (r *resampleJob) rows(lo, hi int) {
	t, d, s, inner := r.t, r.d, r.s, r.inner
	o, j := lo/t.Out, lo%t.Out
	start, index, weight := t.Start, t.Index, t.Weight
	for row := lo; row < hi; row++ {
		so := o * t.In * inner
		if inner == 1 {
			var acc float32
			for k := start[j]; k < start[j+1]; k++ {
				acc += float32(weight[k] * s[so+int(index[k])])
			}
			d[row] = acc
		} else {
			out := d[row*inner : (row+1)*inner]
			clear(out)
			for k := start[j]; k < start[j+1]; k++ {
				w, in := weight[k], s[so+int(index[k])*inner:][:inner]
				for i, v := range in {
					out[i] += float32(w * v)
				}
			}
		}
		if j++; j == t.Out {
			o, j = o+1, 0
		}
	}
}
