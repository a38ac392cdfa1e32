package gpu

import "math"

// SGDStep implements Backend.
func (*CPU) SGDStep(p, g, v Buffer, lr, momentum, weightDecay float32, nesterov bool) {
	ps, gs := h(p), h(g)
	sameLen("SGDStep", ps, gs)
	if momentum == 0 {
		for i, gv := range gs {
			ps[i] -= lr * (gv + weightDecay*ps[i])
		}
		return
	}
	vs := h(v)
	sameLen("SGDStep", ps, vs)
	for i, gv := range gs {
		d := gv + weightDecay*ps[i]
		vi := momentum*vs[i] + d
		vs[i] = vi
		if nesterov {
			d += momentum * vi
		} else {
			d = vi
		}
		ps[i] -= lr * d
	}
}

// AdamStep implements Backend.
func (*CPU) AdamStep(p, g, m, v Buffer, lr, beta1, beta2, eps, weightDecay float32, t int) {
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
		gv += weightDecay * ps[i]
		mi := beta1*ms[i] + (1-beta1)*gv
		vi := beta2*vs[i] + (1-beta2)*gv*gv
		ms[i], vs[i] = mi, vi
		denom := float32(math.Sqrt(float64(vi)))/bc2Sqrt + eps
		ps[i] -= stepSize * mi / denom
	}
}
