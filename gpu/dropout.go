package gpu

import (
	"fmt"
	"math"
	"math/bits"
)

// Dropout masks, made where the mask lives (gpu/opencl/kernels/dropout.cl on OpenCL).
//
// A mask used to be drawn on the host and uploaded every training step,
// which put a tensor of the activations' size on the bus (1 MB a step for
// AlexNet's two dropout layers at batch 32) and stalled the host in the
// middle of the forward pass. Now the host hands the backend one 64-bit
// seed and every backend computes the same mask from it with a
// counter-based generator: element i depends on (seed, i) alone, so there
// is no state to carry between elements, work-items or backends.
//
// The generator is Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel
// random numbers: as easy as 1, 2, 3", SC 2011), which passes TestU01's
// BigCrush. It needs only 32-bit integers (a 32×32 → 64-bit product split
// into its two halves: mul_hi in OpenCL C, bits.Mul32 here), because the
// embedded profile of OpenCL that phones ship may lack 64-bit integers.
// The 64-bit seed is its key, split into two 32-bit words; the counter of
// element i is (i/4, 0, 0, 0), and element i reads word i%4 of the output.

// The Philox4x32 multipliers and Weyl key increments (Random123).
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// philoxKeys returns the round keys of Philox4x32-10 for key (k0, k1):
// round r uses (k0 + r·W0, k1 + r·W1), wrapping. They depend on the key
// alone, so the CPU computes them once per mask instead of once per block
// (gpu/opencl/kernels/dropout.cl bumps the key in every work-item's rounds: the same
// words).
func philoxKeys(k0, k1 uint32) (ks [20]uint32) {
	for r := 0; r < 10; r++ {
		ks[2*r], ks[2*r+1] = k0, k1
		k0 += philoxW0
		k1 += philoxW1
	}
	return ks
}

// philox4x32 returns Philox4x32-10 of counter c under the round keys ks
// (philoxKeys). gpu/opencl/kernels/dropout.cl's philox4x32 is the same integer math.
func philox4x32(c [4]uint32, ks *[20]uint32) [4]uint32 {
	c0, c1, c2, c3 := c[0], c[1], c[2], c[3]
	for r := 0; r < 10; r++ {
		hi0, lo0 := bits.Mul32(philoxM0, c0)
		hi1, lo1 := bits.Mul32(philoxM1, c2)
		c0, c1, c2, c3 = hi1^c1^ks[2*r], lo1, hi0^c3^ks[2*r+1], lo0
	}
	return [4]uint32{c0, c1, c2, c3}
}

// DropoutParams returns the drop threshold and the kept value for drop
// probability p: element i is dropped when its 32-bit word is below thr,
// which happens with probability p (to 2⁻³²), and is keep = 1/(1-p)
// otherwise. It panics unless 0 <= p < 1 (the layer checks p at Setup).
func DropoutParams(p float32) (thr uint32, keep float32) {
	if !(p >= 0 && p < 1) {
		panic(fmt.Sprintf("gpu: DropoutMask: probability %v, want in [0, 1)", p))
	}
	return uint32(math.Ldexp(float64(p), 32)), float32(1 / (1 - float64(p)))
}

// DropoutMaskBlocks sets the elements of Philox blocks [lo, hi) of m (block
// b is elements [4b, 4b+4)), the reference every backend's DropoutMask
// computes: thr and keep are DropoutParams(p).
func DropoutMaskBlocks(m []float32, seed uint64, thr uint32, keep float32, lo, hi int) {
	ks := philoxKeys(uint32(seed), uint32(seed>>32))
	for b := lo; b < hi; b++ {
		w := philox4x32([4]uint32{uint32(b), 0, 0, 0}, &ks)
		i := 4 * b
		if i+4 > len(m) { // the last block of a length that is not a multiple of 4
			for q := range len(m) - i {
				m[i+q] = pick(w[q], thr, keep)
			}
			continue
		}
		d := m[i : i+4 : i+4]
		d[0], d[1], d[2], d[3] = pick(w[0], thr, keep), pick(w[1], thr, keep), pick(w[2], thr, keep), pick(w[3], thr, keep)
	}
}

// pick is a mask element: 0 when the word u is below thr, keep otherwise.
func pick(u, thr uint32, keep float32) float32 {
	if u < thr {
		return 0
	}
	return keep
}
