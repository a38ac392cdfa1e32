package cpu

import (
	"fmt"
	"math"

	"github.com/cotrain/cotrain/gpu"
	"github.com/cotrain/cotrain/gpu/internal/vec"
)

// Batch normalisation on the CPU.
//
// Every per-channel sum is accumulated in float64, so that a channel of a
// large batch (N*HW in the hundreds of thousands) keeps float32 precision in
// its mean and variance. The variance is computed in two passes (mean first,
// then squared deviations), which does not cancel catastrophically when the
// mean is large compared with the spread, as E[x²]-E[x]² would.
//
// Edge case M = N*HW == 1: PyTorch refuses to train batch norm with a single
// value per channel. These kernels do not refuse (that is the caller's
// contract, see solver.BatchNorm) but stay finite: the batch variance is 0,
// the unbiased correction M/(M-1) is taken as 1, y = beta and dx = 0.

// bnCheck panics when a buffer's length does not match g: our own bug.
func bnCheck(op string, g gpu.BNGeom, x []float32, perChannel ...[]float32) {
	if g.N <= 0 || g.C <= 0 || g.HW <= 0 || len(x) != g.N*g.C*g.HW {
		panic(fmt.Sprintf("gpu: %s: %d elements for N=%d C=%d HW=%d", op, len(x), g.N, g.C, g.HW))
	}
	for _, p := range perChannel {
		if p != nil && len(p) != g.C {
			panic(fmt.Sprintf("gpu: %s: per-channel buffer of %d for C=%d", op, len(p), g.C))
		}
	}
}

// sum64 returns the float64 sum of s, with four accumulators so the loop is
// not bound by the latency of one add chain.
func sum64(s []float32) float64 {
	var a0, a1, a2, a3 float64
	i := 0
	for ; i+4 <= len(s); i += 4 {
		a0 += float64(s[i])
		a1 += float64(s[i+1])
		a2 += float64(s[i+2])
		a3 += float64(s[i+3])
	}
	for ; i < len(s); i++ {
		a0 += float64(s[i])
	}
	return (a0 + a1) + (a2 + a3)
}

// sqDev64 returns the float64 sum of (s[i]-mean)².
func sqDev64(s []float32, mean float64) float64 {
	var a0, a1, a2, a3 float64
	i := 0
	for ; i+4 <= len(s); i += 4 {
		d0, d1 := float64(s[i])-mean, float64(s[i+1])-mean
		d2, d3 := float64(s[i+2])-mean, float64(s[i+3])-mean
		a0 += float64(d0 * d0)
		a1 += float64(d1 * d1)
		a2 += float64(d2 * d2)
		a3 += float64(d3 * d3)
	}
	for ; i < len(s); i++ {
		d := float64(s[i]) - mean
		a0 += float64(d * d)
	}
	return (a0 + a1) + (a2 + a3)
}

// vecMin is the plane size (HW) from which the vector loops of package vec
// pay: below it (batch norm after a linear layer, HW 1) the call per plane
// costs more than the loop, and the Go loops here run instead. The sums of
// the two paths are added in different orders, each fixed for a geometry.
const vecMin = 16

// bnApply sets y = (x - mean)*scale + shift for every element of channel c.
func bnApply(g gpu.BNGeom, ys, xs []float32, c int, mean, scale, shift float32) {
	for n := 0; n < g.N; n++ {
		off := (n*g.C + c) * g.HW
		yr, xr := ys[off:off+g.HW], xs[off:off+g.HW]
		if g.HW < vecMin {
			for i, v := range xr {
				yr[i] = float32((v-mean)*scale) + shift
			}
			continue
		}
		vec.BNApply(yr, xr, mean, scale, shift)
	}
}

// BatchNormTrain implements Backend. saveMean and saveInvStd receive the batch
// mean and 1/sqrt(biased variance + eps) of each channel.
func (c *CPU) BatchNormTrain(g gpu.BNGeom, y, x, gamma, beta, runMean, runVar, saveMean, saveInvStd gpu.Buffer) {
	ys, xs := h(y), h(x)
	gs, bs, rm, rv, sm, si := h(gamma), h(beta), h(runMean), h(runVar), h(saveMean), h(saveInvStd)
	bnCheck("BatchNormTrain", g, xs, gs, bs, rm, rv, sm, si)
	sameLen("BatchNormTrain", ys, xs)
	if gs == nil || bs == nil || rm == nil || rv == nil || sm == nil || si == nil {
		panic("gpu: BatchNormTrain: nil buffer")
	}
	j := &c.job
	j.op, j.bn, j.y, j.x, j.per = opBNTrain, g, ys, xs, [6][]float32{gs, bs, rm, rv, sm, si}
	c.run(j, g.C, 3*len(xs))
}

// bnTrain is BatchNormTrain for channels [lo, hi); per holds gamma, beta,
// the running mean and variance, the saved mean and 1/std.
func bnTrain(g *gpu.BNGeom, ys, xs []float32, per *[6][]float32, lo, hi int) {
	gs, bs, rm, rv, sm, si := per[0], per[1], per[2], per[3], per[4], per[5]
	m := g.N * g.HW
	corr := 1.0 // unbiased correction; 1 when M == 1 (see the file comment)
	if m > 1 {
		corr = float64(m) / float64(m-1)
	}
	mom := float64(g.Momentum)
	for c := lo; c < hi; c++ {
		var s float64
		for n := 0; n < g.N; n++ {
			off := (n*g.C + c) * g.HW
			if g.HW < vecMin {
				s += sum64(xs[off : off+g.HW])
			} else {
				s += vec.Sum64(xs[off : off+g.HW])
			}
		}
		mean := s / float64(m)
		var ss float64
		for n := 0; n < g.N; n++ {
			off := (n*g.C + c) * g.HW
			if g.HW < vecMin {
				ss += sqDev64(xs[off:off+g.HW], mean)
			} else {
				ss += vec.SqDev64(xs[off:off+g.HW], mean)
			}
		}
		variance := ss / float64(m)
		invStd := 1 / math.Sqrt(variance+float64(g.Eps))
		sm[c], si[c] = float32(mean), float32(invStd)
		rm[c] = float32(float64((1-mom)*float64(rm[c])) + float64(mom*mean))
		rv[c] = float32(float64((1-mom)*float64(rv[c])) + float64(mom*variance*corr))
		// The mean rounded to float32 is off by up to half an ulp, which is a
		// large error in x-mean when the mean dwarfs the spread; the shift
		// puts the rounding back (x-mean32 is exact where x is near the mean).
		scale := float64(gs[c]) * invStd
		mean32 := float32(mean)
		shift := float64(bs[c]) - float64((mean-float64(mean32))*scale)
		bnApply(*g, ys, xs, c, mean32, float32(scale), float32(shift))
	}
}

// BatchNormInfer implements Backend: y = gamma*(x-runMean)/sqrt(runVar+eps) + beta.
func (*CPU) BatchNormInfer(g gpu.BNGeom, y, x, gamma, beta, runMean, runVar gpu.Buffer) {
	ys, xs := h(y), h(x)
	gs, bs, rm, rv := h(gamma), h(beta), h(runMean), h(runVar)
	bnCheck("BatchNormInfer", g, xs, gs, bs, rm, rv)
	sameLen("BatchNormInfer", ys, xs)
	if gs == nil || bs == nil || rm == nil || rv == nil {
		panic("gpu: BatchNormInfer: nil buffer")
	}
	for c := 0; c < g.C; c++ {
		invStd := 1 / math.Sqrt(float64(rv[c])+float64(g.Eps))
		bnApply(g, ys, xs, c, rm[c], float32(float64(gs[c])*invStd), bs[c])
	}
}

// BatchNormBackward implements Backend with the closed form, per channel,
// M = N*HW, xhat = (x-mean)*invStd:
//
//	dbeta  = Σ dy
//	dgamma = Σ dy*xhat
//	dx     = gamma*invStd/M * (M*dy - dbeta - xhat*dgamma)
//
// dx, dgamma and dbeta may each be nil; they are then not written.
func (c *CPU) BatchNormBackward(g gpu.BNGeom, dx, dgamma, dbeta, dy, x, gamma, saveMean, saveInvStd gpu.Buffer) {
	dxs, dgs, dbs, dys, xs := h(dx), h(dgamma), h(dbeta), h(dy), h(x)
	gs, sm, si := h(gamma), h(saveMean), h(saveInvStd)
	bnCheck("BatchNormBackward", g, xs, dgs, dbs, gs, sm, si)
	sameLen("BatchNormBackward", dys, xs)
	if dxs != nil {
		sameLen("BatchNormBackward", dxs, xs)
	}
	if gs == nil || sm == nil || si == nil {
		panic("gpu: BatchNormBackward: nil buffer")
	}
	j := &c.job
	j.op, j.bn, j.dx, j.dy, j.x, j.per = opBNBackward, g, dxs, dys, xs, [6][]float32{dgs, dbs, gs, sm, si}
	c.run(j, g.C, 3*len(xs))
}

// bnBackward is BatchNormBackward for channels [lo, hi); per holds dgamma,
// dbeta, gamma, the saved mean and 1/std.
func bnBackward(g *gpu.BNGeom, dxs, dys, xs []float32, per *[6][]float32, lo, hi int) {
	dgs, dbs, gs, sm, si := per[0], per[1], per[2], per[3], per[4]
	m := float64(g.N * g.HW)
	for c := lo; c < hi; c++ {
		mean, inv := sm[c], float64(si[c])
		// Σ dy*xhat = invStd * Σ dy*(x-mean): one multiply per channel, not per element.
		var sdy, sdyx float64
		for n := 0; n < g.N; n++ {
			off := (n*g.C + c) * g.HW
			dr, xr := dys[off:off+g.HW], xs[off:off+g.HW]
			if g.HW < vecMin {
				for i, d := range dr {
					sdy += float64(d)
					sdyx += float64(float64(d) * float64(xr[i]-mean))
				}
				continue
			}
			a, b := vec.SumDyDev(dr, xr, mean)
			sdy += a
			sdyx += b
		}
		sdyx *= inv
		if dbs != nil {
			dbs[c] = float32(sdy)
		}
		if dgs != nil {
			dgs[c] = float32(sdyx)
		}
		if dxs == nil {
			continue
		}
		// dx = k*dy - b - a*(x-mean), with k = gamma*invStd,
		// b = k*Σdy/M, a = k*invStd*Σ(dy*xhat)/M.
		k := float64(gs[c]) * inv
		kf := float32(k)
		bf := float32(k * sdy / m)
		af := float32(k * inv * sdyx / m)
		for n := 0; n < g.N; n++ {
			off := (n*g.C + c) * g.HW
			dr, xr, or := dys[off:off+g.HW], xs[off:off+g.HW], dxs[off:off+g.HW]
			if g.HW < vecMin {
				for i, d := range dr {
					or[i] = float32(kf*d) - bf - float32(af*(xr[i]-mean))
				}
				continue
			}
			vec.BNBackwardData(or, dr, xr, kf, bf, af, mean)
		}
	}
}
