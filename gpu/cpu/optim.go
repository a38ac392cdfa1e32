package cpu

import "github.com/cotrain/cotrain/gpu"

import "math"

// The optimizer kernels must give the same bits on every architecture, or
// an arm64 phone and an amd64 hub drift apart one rounding at a time. Go
// may fuse a*b+c into one FMA instruction on arm64 (not on amd64) unless an
// explicit conversion forces the product to be rounded first (the Go spec,
// "Floating-point operators"). So every product below that feeds an
// addition is wrapped in float32(...): keep it that way.
// TestStepNotFused checks the arm64 build for FMA instructions.

// SGDStep implements Backend.
func (*CPU) SGDStep(p, g, v gpu.Buffer, lr, momentum, weightDecay float32, nesterov bool) {
	ps, gs := h(p), h(g)
	sameLen("SGDStep", ps, gs)
	if momentum == 0 {
		for i, gv := range gs {
			d := gv + float32(weightDecay*ps[i])
			ps[i] -= float32(lr * d)
		}
		return
	}
	vs := h(v)
	sameLen("SGDStep", ps, vs)
	for i, gv := range gs {
		d := gv + float32(weightDecay*ps[i])
		vi := float32(momentum*vs[i]) + d
		vs[i] = vi
		if nesterov {
			d += float32(momentum * vi)
		} else {
			d = vi
		}
		ps[i] -= float32(lr * d)
	}
}

// AdamStep implements Backend.
func (*CPU) AdamStep(p, g, m, v gpu.Buffer, lr, beta1, beta2, eps, weightDecay float32, t int) {
	ps, gs, ms, vs := h(p), h(g), h(m), h(v)
	sameLen("AdamStep", ps, gs)
	sameLen("AdamStep", ps, ms)
	sameLen("AdamStep", ps, vs)
	// Bias corrections as PyTorch computes them (in float64, then rounded).
	bc1 := 1 - math.Pow(float64(beta1), float64(t))
	bc2 := 1 - math.Pow(float64(beta2), float64(t))
	stepSize := float32(float64(lr) / bc1)
	bc2Sqrt := float32(math.Sqrt(bc2))
	for i, gv := range gs {
		gv += float32(weightDecay * ps[i])
		mi := float32(beta1*ms[i]) + float32((1-beta1)*gv)
		vi := float32(beta2*vs[i]) + float32(float32((1-beta2)*gv)*gv)
		ms[i], vs[i] = mi, vi
		denom := float32(math.Sqrt(float64(vi)))/bc2Sqrt + eps
		ps[i] -= float32(stepSize * mi / denom)
	}
}
