package gpu

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// Activate implements Backend, split over ranges of elements.
func (c *CPU) Activate(a Act, y, x Buffer) {
	ys, xs := h(y), h(x)
	sameLen("Activate", ys, xs)
	if a != ReLU && a != ReLU6 {
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
	j := &c.job
	j.op, j.act, j.y, j.x = opActivate, a, ys, xs
	c.run(j, len(xs), len(xs))
}

// activate sets ys = a(xs).
func activate(a Act, ys, xs []float32) {
	ys = ys[:len(xs)]
	switch a {
	case ReLU:
		vec.ReLU(ys, xs) // max(v, 0): NaN passes through, -0 becomes +0
	case ReLU6:
		vec.ReLU6(ys, xs) // min(max(v, 0), 6)
	default:
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
}

// ActivateBackward implements Backend. The derivative at the kinks is 0, as
// in PyTorch (relu: x > 0; relu6: 0 < x < 6).
func (c *CPU) ActivateBackward(a Act, dx, dy, x Buffer) {
	dxs, dys, xs := h(dx), h(dy), h(x)
	sameLen("ActivateBackward", dxs, dys)
	sameLen("ActivateBackward", dxs, xs)
	if a != ReLU && a != ReLU6 {
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
	j := &c.job
	j.op, j.act, j.dx, j.dy, j.x = opActivateBackward, a, dxs, dys, xs
	c.run(j, len(xs), 2*len(xs))
}

// activateBackward sets dxs = dys·a'(xs).
func activateBackward(a Act, dxs, dys, xs []float32) {
	dxs, dys = dxs[:len(xs)], dys[:len(xs)]
	switch a {
	case ReLU:
		vec.ReLUBackward(dxs, dys, xs)
	case ReLU6:
		vec.ReLU6Backward(dxs, dys, xs) // dy where 0 < x < 6
	default:
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
}

// SoftmaxCrossEntropy implements Backend. It subtracts each row's maximum
// before exponentiating and accumulates in float64, so large logits neither
// overflow nor lose the loss's precision.
func (*CPU) SoftmaxCrossEntropy(probs, logits Buffer, labels []int32, n, classes int) float64 {
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
func (*CPU) SoftmaxCrossEntropyBackward(dlogits, probs Buffer, labels []int32, n, classes int, scale float32) {
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
