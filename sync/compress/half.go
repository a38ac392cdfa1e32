package compress

import "github.com/cotrain/cotrain/gpu/half"

// maxHalf is the largest finite half float, 65504.
const maxHalf = half.MaxFinite

// toHalf rounds v to the nearest IEEE half float (ties to even), saturating
// finite values beyond ±65504 to ±65504 rather than to infinity: a codec
// must not turn a large but finite gradient into one the receiver refuses.
// NaN stays NaN and infinities stay infinite (the receiver refuses them).
func toHalf(v float32) uint16 {
	h := half.FromFloat32(v)
	if h&0x7fff == 0x7c00 && v-v == 0 { // a finite v rounded to infinity
		return h&0x8000 | 0x7bff
	}
	return h
}

// fromHalf returns the float32 of half float h (exact).
func fromHalf(h uint16) float32 { return half.ToFloat32(h) }

// halfFinite reports whether half float h is finite.
func halfFinite(h uint16) bool { return half.Finite(h) }
