// Package avg holds the hub's loops over whole gradients: checking that a
// pushed gradient is finite, and the sample-weighted sum and mean of the
// merge. They run over every value of every push (64
// pushes of lenet-caffe are 27 million values an iteration), so on amd64
// with AVX-512 they are assembly, chosen at run time, and Go elsewhere (or
// with the purego build tag). Go does not vectorize loops: the weighted sum
// in Go runs at about a fifth of the memory's speed.
//
// Every function gives the same bits on every path (see each one for why),
// so hubs on different machines merge alike.
//
// Caller's duties: the slices of one call have equal lengths; functions
// panic otherwise (the caller's bug).
package avg

import (
	"fmt"
	"math"
)

// FirstNonFinite returns the index of the first value of src that is not
// finite (NaN or ±Inf), or -1 if every one is.
func FirstNonFinite(src []float32) int {
	if len(src) == 0 {
		return -1
	}
	if useAVX512 {
		return firstNonFiniteAVX512(&src[0], len(src))
	}
	return firstNonFiniteGo(src)
}

func firstNonFiniteGo(src []float32) int {
	for i, v := range src {
		if math.Float32bits(v)&expMask == expMask {
			return i
		}
	}
	return -1
}

// expMask is float32's exponent field: all ones exactly for NaN and ±Inf.
const expMask = 0x7f800000

// exactWeight bounds the weights for which AddScaled's products are exact:
// an integer below 2^29 times a float32 (24 significant bits) fits in
// float64's 53, so fusing the multiply and the add cannot change the sum.
const exactWeight = 1 << 29

// AddScaled adds w·src to acc element-wise, in float64: acc[i] += w·src[i],
// the product rounded to float64 and then the sum. For integer weights of
// magnitude below 2^29 (sample counts) the product is exact and the
// assembly's fused multiply-add gives the same bits; other weights take the
// Go loop.
func AddScaled(acc []float64, w float64, src []float32) {
	same("AddScaled", len(acc), len(src))
	if len(src) == 0 {
		return
	}
	if useAVX512 && w == math.Trunc(w) && math.Abs(w) < exactWeight {
		addScaledAVX512(&acc[0], w, &src[0], len(src))
		return
	}
	addScaledGo(acc, w, src)
}

// AddScaled4 is AddScaled(acc, w[k], src[k]) for k = 0, 1, 2, 3 in turn,
// with the same bits: every element gets the four products added in that
// order, each sum rounded. The assembly does it in one pass, keeping acc
// in registers across the four and reading the four sources side by side,
// which the memory serves faster than one after another.
func AddScaled4(acc []float64, w *[4]float64, src *[4][]float32) {
	for k := range src {
		same("AddScaled4", len(acc), len(src[k]))
	}
	if len(acc) == 0 {
		return
	}
	exact := true
	for _, wk := range w {
		exact = exact && wk == math.Trunc(wk) && math.Abs(wk) < exactWeight
	}
	if useAVX512 && exact {
		p := [4]*float32{&src[0][0], &src[1][0], &src[2][0], &src[3][0]}
		addScaled4AVX512(&acc[0], w, &p, len(acc))
		return
	}
	for k := range src {
		addScaledGo(acc, w[k], src[k])
	}
}

func addScaledGo(acc []float64, w float64, src []float32) {
	acc = acc[:len(src)]
	for i, g := range src {
		// The conversion rounds the product: Go may not fuse it with
		// the add.
		acc[i] += float64(w * float64(g))
	}
}

// Mean writes acc[i]/n, rounded to float32, into dst: the quotient rounded
// to float64, then to float32 (as float32(acc[i]/n) in Go; the assembly
// divides and converts the same two steps).
func Mean(dst []float32, acc []float64, n float64) {
	same("Mean", len(dst), len(acc))
	if len(dst) == 0 {
		return
	}
	if useAVX512 {
		meanAVX512(&dst[0], &acc[0], n, len(dst))
		return
	}
	meanGo(dst, acc, n)
}

func meanGo(dst []float32, acc []float64, n float64) {
	acc = acc[:len(dst)]
	for i, s := range acc {
		dst[i] = float32(s / n)
	}
}

func same(op string, a, b int) {
	if a != b {
		panic(fmt.Sprintf("avg: %s: lengths %d and %d", op, a, b))
	}
}
