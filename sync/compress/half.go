package compress

import "math"

// maxHalf is the largest finite half float, 65504.
const maxHalf = 65504

// toHalf rounds v to the nearest IEEE half float (ties to even), saturating
// finite values beyond ±65504 to ±65504 rather than to infinity: a codec
// must not turn a large but finite gradient into one the receiver refuses.
// NaN stays NaN and infinities stay infinite (the receiver refuses them).
func toHalf(v float32) uint16 {
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
	case exp == 0: // zero or float32 subnormal: far below half's range
		return sign
	}
	e := exp - 127 + 15 // half's biased exponent
	if e >= 0x1f {
		return sign | 0x7bff // saturate
	}
	if e <= 0 {
		// A half subnormal (or zero): the value is m·2^(e-25) with the
		// hidden bit made explicit; shift it into 10 bits, rounding.
		if e < -10 {
			return sign // below half the smallest subnormal
		}
		m := man | 0x800000
		shift := uint(14 - e) // 13 for the normal case, more below
		h := m >> shift
		rem := m & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++
		}
		return sign | uint16(h) // h may carry into the exponent: still right
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // may carry into the exponent, which is the right rounding
	}
	if h >= 0x7c00 {
		return sign | 0x7bff // rounded past the largest finite: saturate
	}
	return sign | uint16(h)
}

// fromHalf returns the float32 of half float h (exact: every half is a
// float32).
func fromHalf(h uint16) float32 {
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

// halfFinite reports whether half float h is finite.
func halfFinite(h uint16) bool { return h&0x7c00 != 0x7c00 }
