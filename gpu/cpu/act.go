package cpu

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/internal/vec"
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

// activate sets ys = a(xs). The transcendental kinds compute in float64 and
// round once (tanh in exp.go), which is within an ulp of PyTorch's
// float32.
func activate(a gpu.Act, ys, xs []float32) {
	ys = ys[:len(xs)]
	switch a.Kind {
	case gpu.KindReLU:
		vec.ReLU(ys, xs) // max(v, 0): NaN passes through, -0 becomes +0
	case gpu.KindReLU6:
		vec.ReLU6(ys, xs) // min(max(v, 0), 6)
	case gpu.KindSigmoid:
		for i, v := range xs {
			ys[i] = float32(1 / (1 + math.Exp(-float64(v))))
		}
	case gpu.KindTanh:
		for i, v := range xs {
			ys[i] = tanh32(v) // exp.go
		}
	case gpu.KindSiLU:
		for i, v := range xs {
			ys[i] = float32(float64(v) / (1 + math.Exp(-float64(v))))
		}
	case gpu.KindHardSigmoid:
		al, be := a.Alpha, a.Beta
		for i, v := range xs {
			// The conversion rounds the product, so no platform fuses a
			// multiply-add here (Go may, on arm64): the same bits everywhere.
			ys[i] = min(max(float32(al*v)+be, 0), 1)
		}
	case gpu.KindHardSwish:
		for i, v := range xs {
			ys[i] = v * min(max(v+3, 0), 6) / 6
		}
	case gpu.KindLeakyReLU:
		// Branch-free (Go's min and max are): a branch on the sign
		// mispredicts half the time on activations, 9x slower here.
		al := a.Alpha
		for i, v := range xs {
			ys[i] = max(v, 0) + al*min(v, 0) // NaN passes through
		}
	case gpu.KindClip:
		lo, hi := a.Alpha, a.Beta
		for i, v := range xs {
			ys[i] = min(max(v, lo), hi) // NaN passes through
		}
	default:
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
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
// a.FromOutput(), y. The derivatives follow PyTorch's backward formulas:
// sigmoid dy·(1-y)·y, tanh dy·(1-y²), hardswish dy·(x/3 + 0.5) on [-3, 3].
func activateBackward(a gpu.Act, dxs, dys, ts []float32) {
	dxs, dys = dxs[:len(ts)], dys[:len(ts)]
	switch a.Kind {
	case gpu.KindReLU:
		vec.ReLUBackward(dxs, dys, ts)
	case gpu.KindReLU6:
		vec.ReLU6Backward(dxs, dys, ts) // dy where 0 < x < 6
	case gpu.KindSigmoid:
		for i, y := range ts {
			dxs[i] = dys[i] * (1 - y) * y
		}
	case gpu.KindTanh:
		for i, y := range ts {
			dxs[i] = dys[i] * (1 - float32(y*y)) // rounded product: no fused multiply-add
		}
	case gpu.KindHardSigmoid:
		// 0 < y < 1 exactly where 0 < alpha*x + beta < 1.
		al := a.Alpha
		for i, y := range ts {
			dxs[i] = keep(dys[i]*al, b2u(y > 0)&b2u(y < 1))
		}
	case gpu.KindSiLU:
		// PyTorch's silu_backward: dy·s·(1 + x·(1 - s)), s = sigmoid(x).
		for i, x := range ts {
			s := float32(1 / (1 + math.Exp(-float64(x))))
			xs := float32(x * (1 - s)) // the conversion rounds: no fused multiply-add
			dxs[i] = dys[i] * s * (1 + xs)
		}
	case gpu.KindHardSwish:
		for i, x := range ts {
			switch {
			case x < -3:
				dxs[i] = 0
			case x <= 3:
				dxs[i] = dys[i] * (x/3 + 0.5)
			default:
				dxs[i] = dys[i]
			}
		}
	case gpu.KindLeakyReLU:
		// From y when alpha >= 0 (y > 0 exactly where x > 0), else from x.
		al := a.Alpha
		for i, t := range ts {
			d := dys[i]
			pos := b2u(t > 0)
			dxs[i] = math.Float32frombits(math.Float32bits(keep(d, pos)) | math.Float32bits(keep(d*al, pos^1)))
		}
	case gpu.KindClip:
		// lo < y < hi exactly where lo < x < hi, as PyTorch's hardtanh
		// (so Clip(0, 6) differentiates as ReLU6 does).
		lo, hi := a.Alpha, a.Beta
		for i, y := range ts {
			dxs[i] = keep(dys[i], b2u(y > lo)&b2u(y < hi))
		}
	default:
		panic(fmt.Sprintf("gpu: unknown activation %v", a))
	}
}

// keep returns v where c is 1 and +0 where it is 0, without a branch: the
// conditions of the backward passes depend on the data and a branch on them
// mispredicts often on activations. Conditions are combined with & of b2u,
// not &&, which would branch.
func keep(v float32, c uint32) float32 {
	return math.Float32frombits(math.Float32bits(v) & -c)
}

// b2u is 1 for true, 0 for false; the compiler makes it a SETcc.
func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
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
				dot += float64(dys[base+k*inner]) * float64(ys[base+k*inner])
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
