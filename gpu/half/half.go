// Package half converts between float32 and IEEE 754 binary16 ("half")
// floats on the host: the fp16 gradient codec's, and the reference of the
// OpenCL backend's fp16 storage (which converts on the device, with
// vload_half and vstore_half_rte).
//
// FromFloat32 rounds as vstore_half_rte does: to nearest, ties to even,
// with overflow to ±Inf. Every half is exactly a float32, so ToFloat32 is
// exact and ToFloat32(FromFloat32(v)) is v rounded to half precision.
package half

import "math"

// MaxFinite is the largest finite half, 65504. Values of magnitude 65520
// or more round to infinity.
const MaxFinite = 65504

// FromFloat32 returns the half nearest v (ties to the even pattern);
// magnitudes from 65520 up become ±Inf, NaN stays a (quiet) NaN of the
// same sign, and float32 subnormals, far below half's smallest subnormal
// (2⁻²⁴), become a zero of the same sign.
func FromFloat32(v float32) uint16 {
	b := math.Float32bits(v)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN
		if man != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	case exp == 0: // zero or a float32 subnormal
		return sign
	}
	e := exp - 127 + 15 // half's biased exponent
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// A half subnormal (or zero): the value is m·2^(e-25) with the
		// hidden bit made explicit; shift it into 10 bits, rounding.
		if e < -10 {
			return sign // below half the smallest subnormal
		}
		m := man | 0x800000
		shift := uint(14 - e)
		h := m >> shift
		rem := m & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && h&1 == 1) {
			h++ // may carry into the exponent: still the right rounding
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent (up to Inf): the right rounding
	}
	return sign | uint16(h)
}

// ToFloat32 returns the float32 of half h (exact: every half is a float32).
func ToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	man := uint32(h & 0x3ff)
	switch exp {
	case 0:
		// Zero or subnormal: man · 2⁻²⁴, exact in float32.
		v := float32(man) * (1.0 / (1 << 24))
		return math.Float32frombits(math.Float32bits(v) | sign)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | man<<13)
}

// Finite reports whether half h is neither infinite nor NaN.
func Finite(h uint16) bool { return h&0x7c00 != 0x7c00 }

// Round returns v rounded to the nearest half, as a float32.
func Round(v float32) float32 { return ToFloat32(FromFloat32(v)) }
