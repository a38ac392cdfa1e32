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

// firstNonFiniteGo tests blocks of 256 values without a branch per value:
// an exponent field of all ones plus its lowest bit carries into the sign
// bit, and only then, so OR-ing (bits&expMask)+expLSB over the block and
// testing the sign bit tells whether the block holds a NaN or an infinity;
// only such a block is searched value by value.
func firstNonFiniteGo(src []float32) int {
	const block = 256
	for lo := 0; lo < len(src); lo += block {
		b := src[lo:min(lo+block, len(src))]
		var a0, a1, a2, a3 uint32
		i := 0
		for ; i+4 <= len(b); i += 4 {
			q := b[i : i+4 : i+4]
			a0 |= math.Float32bits(q[0])&expMask + expLSB
			a1 |= math.Float32bits(q[1])&expMask + expLSB
			a2 |= math.Float32bits(q[2])&expMask + expLSB
			a3 |= math.Float32bits(q[3])&expMask + expLSB
		}
		for ; i < len(b); i++ {
			a0 |= math.Float32bits(b[i])&expMask + expLSB
		}
		if (a0|a1|a2|a3)&signBit == 0 {
			continue
		}
		for j, v := range b {
			if math.Float32bits(v)&expMask == expMask {
				return lo + j
			}
		}
	}
	return -1
}

// expMask is float32's exponent field: all ones exactly for NaN and ±Inf;
// expLSB is its lowest bit and signBit the bit above it.
const (
	expMask = 0x7f800000
	expLSB  = 0x00800000
	signBit = 0x80000000
)

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
	addScaled4Go(acc, w, src)
}

// addScaled4Go adds the four products to each element in turn, so acc is
// read and written once for the four.
func addScaled4Go(acc []float64, w *[4]float64, src *[4][]float32) {
	n := len(acc)
	s0, s1, s2, s3 := src[0][:n], src[1][:n], src[2][:n], src[3][:n]
	w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
	for i := range acc {
		// Each conversion rounds its product: Go may not fuse them.
		a := acc[i] + float64(w0*float64(s0[i]))
		a += float64(w1 * float64(s1[i]))
		a += float64(w2 * float64(s2[i]))
		acc[i] = a + float64(w3*float64(s3[i]))
	}
}

func addScaledGo(acc []float64, w float64, src []float32) {
	acc = acc[:len(src)]
	i := 0
	for ; i+4 <= len(src); i += 4 {
		a, s := acc[i:i+4:i+4], src[i:i+4:i+4]
		// The conversions round the products: Go may not fuse them.
		a[0] += float64(w * float64(s[0]))
		a[1] += float64(w * float64(s[1]))
		a[2] += float64(w * float64(s[2]))
		a[3] += float64(w * float64(s[3]))
	}
	for ; i < len(src); i++ {
		acc[i] += float64(w * float64(src[i]))
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
