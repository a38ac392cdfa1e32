package cpu

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
)

// Activate implements Backend, split over ranges of elements.
func (c *CPU) Activate(a gpu.Act, y, x gpu.Buffer) {
	ys, xs := h(y), h(x)
	sameLen("Activate", ys, xs)
	a.MustValid()
	j := &c.job
	j.op, j.act, j.y, j.x = opActivate, a, ys, xs
	c.run(j, len(xs), len(xs))
}

// activate sets ys = a(xs): the Go forward of a's entry in the operator
// table (gpu/ops.go).
func activate(a gpu.Act, ys, xs []float32) {
	op, ok := a.Op()
	if !ok {
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
	op.Forward(a, ys[:len(xs)], xs)
}

// ActivateBackward implements Backend. The derivative at the kinks is 0, as
// in PyTorch (relu: x > 0; relu6: 0 < x < 6).
func (c *CPU) ActivateBackward(a gpu.Act, dx, dy, t gpu.Buffer) {
	dxs, dys, ts := h(dx), h(dy), h(t)
	sameLen("ActivateBackward", dxs, dys)
	sameLen("ActivateBackward", dxs, ts)
	a.MustValid()
	j := &c.job
	j.op, j.act, j.dx, j.dy, j.x = opActivateBackward, a, dxs, dys, ts
	c.run(j, len(ts), 2*len(ts))
}

// activateBackward sets dxs = dys·a'(x) from ts, which is x or, when
// a.FromOutput(), y: the Go backward of a's entry in the operator table.
func activateBackward(a gpu.Act, dxs, dys, ts []float32) {
	op, ok := a.Op()
	if !ok {
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
	op.Backward(a, dxs[:len(ts)], dys[:len(ts)], ts)
}

// Softmax implements Backend, split over the outer index.
func (c *CPU) Softmax(y, x gpu.Buffer, outer, ch, inner int) {
	ys, xs := h(y), h(x)
	if outer < 0 || ch <= 0 || inner <= 0 || len(xs) != outer*ch*inner || len(ys) != len(xs) {
		panic(fmt.Sprintf("gpu: Softmax: %d and %d elements for %d×%d×%d", len(ys), len(xs), outer, ch, inner))
	}
	j := &c.job
	j.op, j.y, j.x, j.batch, j.hw = opSoftmax, ys, xs, ch, inner
	c.run(j, outer, 3*len(xs))
}

// softmax computes outer rows [lo, hi) of Softmax: the maximum is
// subtracted first, exponentials and their sum are in float64.
func softmax(ys, xs []float32, ch, inner, lo, hi int) {
	for o := lo; o < hi; o++ {
		for in := range inner {
			base := o*ch*inner + in
			m := xs[base]
			for k := 1; k < ch; k++ {
				m = max(m, xs[base+k*inner])
			}
			var sum float64
			for k := range ch {
				sum += math.Exp(float64(xs[base+k*inner] - m))
			}
			inv := 1 / sum
			for k := range ch {
				ys[base+k*inner] = float32(math.Exp(float64(xs[base+k*inner]-m)) * inv)
			}
		}
	}
}

// SoftmaxBackward implements Backend, split over the outer index.
func (c *CPU) SoftmaxBackward(dx, dy, y gpu.Buffer, outer, ch, inner int) {
	dxs, dys, ys := h(dx), h(dy), h(y)
	if outer < 0 || ch <= 0 || inner <= 0 || len(ys) != outer*ch*inner || len(dxs) != len(ys) || len(dys) != len(ys) {
		panic(fmt.Sprintf("gpu: SoftmaxBackward: %d, %d and %d elements for %d×%d×%d", len(dxs), len(dys), len(ys), outer, ch, inner))
	}
	j := &c.job
	j.op, j.dx, j.dy, j.y, j.batch, j.hw = opSoftmaxBackward, dxs, dys, ys, ch, inner
	c.run(j, outer, 3*len(ys))
}

// softmaxBackward computes outer rows [lo, hi) of SoftmaxBackward, the dot
// product in float64.
func softmaxBackward(dxs, dys, ys []float32, ch, inner, lo, hi int) {
	for o := lo; o < hi; o++ {
		for in := range inner {
			base := o*ch*inner + in
			var dot float64
			for k := range ch {
				dot += float64(float64(dys[base+k*inner]) * float64(ys[base+k*inner]))
			}
			d := float32(dot)
			for k := range ch {
				i := base + k*inner
				dxs[i] = ys[i] * (dys[i] - d)
			}
		}
	}
}

// SoftmaxCrossEntropy implements Backend. It subtracts each row's maximum
// before exponentiating and accumulates in float64, so large logits neither
// overflow nor lose the loss's precision.
func (*CPU) SoftmaxCrossEntropy(probs, logits gpu.Buffer, labels []int32, n, classes int) float64 {
	ps, ls := h(probs), h(logits)
	if len(ps) != n*classes || len(ls) != n*classes || len(labels) != n {
		panic("gpu: SoftmaxCrossEntropy: shape mismatch")
	}
	var loss float64
	for i := 0; i < n; i++ {
		row, prow := ls[i*classes:(i+1)*classes], ps[i*classes:(i+1)*classes]
		m := row[0]
		for _, v := range row[1:] {
			m = max(m, v)
		}
		var sum float64
		for j, v := range row {
			e := math.Exp(float64(v - m))
			prow[j] = float32(e)
			sum += e
		}
		inv := 1 / sum
		for j := range prow {
			prow[j] = float32(float64(prow[j]) * inv)
		}
		loss += math.Log(sum) - float64(row[labels[i]]-m)
	}
	return loss
}

// SoftmaxCrossEntropyBackward implements Backend.
func (*CPU) SoftmaxCrossEntropyBackward(dlogits, probs gpu.Buffer, labels []int32, n, classes int, scale float32) {
	ds, ps := h(dlogits), h(probs)
	if len(ps) != n*classes || len(ds) != n*classes || len(labels) != n {
		panic("gpu: SoftmaxCrossEntropyBackward: shape mismatch")
	}
	for i, p := range ps {
		ds[i] = scale * p
	}
	for i, l := range labels {
		ds[i*classes+int(l)] -= scale
	}
}
