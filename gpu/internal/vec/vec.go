// Package vec holds the CPU backend's strided row copies and elementwise
// loops, in AVX-512 assembly where the processor has it (chosen at run time)
// and in Go otherwise. Go does not vectorize loops, and these run over every
// element of a convolution's lowered matrix or an activation: a row of eight
// floats costs one masked load and store here against some fifty
// instructions of bounds-checked Go.
//
// Every function gives the same bits on every path: they copy, add two
// floats, or select between a value and zero; the arithmetic loops of the
// other files (ReLU6, batch norm, the 3×3 depthwise rows, 2×2 max pooling)
// round each operation as their Go twins do, with no fused multiply-add,
// and the few that sum into lanes (Sum64, SqDev64, SumDyDev,
// Conv3RowFilter) document the lanes' order, which the twins follow. A NaN
// may come out with another payload than the twin's.
//
// Caller's duties: slices must hold every element the strides address;
// functions panic otherwise (the caller's bug).
package vec

import (
	"fmt"
	"math"
)

// span is the number of elements rows rows of n, ld apart, occupy.
func span(rows, n, ld int) int {
	if rows <= 0 || n <= 0 {
		return 0
	}
	return (rows-1)*ld + n
}

func checkRows(op string, dst []float32, ldd int, src []float32, lds, rows, n int) {
	if rows < 0 || n < 0 || (rows > 1 && (ldd < 0 || lds < 0)) ||
		len(dst) < span(rows, n, ldd) || (src != nil && len(src) < span(rows, n, lds)) {
		panic(fmt.Sprintf("vec: %s: %d rows of %d, strides %d and %d, over %d and %d elements", op, rows, n, ldd, lds, len(dst), len(src)))
	}
}

// CopyRows copies rows rows of n floats: dst[i·ldd+j] = src[i·lds+j].
// Source rows may overlap each other (a sliding window: lds < n).
func CopyRows(dst []float32, ldd int, src []float32, lds int, rows, n int) {
	checkRows("CopyRows", dst, ldd, src, lds, rows, n)
	if rows == 0 || n == 0 {
		return
	}
	if useAVX512 {
		copyRowsAVX512(&dst[0], ldd, &src[0], lds, rows, n)
		return
	}
	copyRowsGo(dst, ldd, src, lds, rows, n)
}

// AddRows adds rows rows of n floats: dst[i·ldd+j] += src[i·lds+j].
func AddRows(dst []float32, ldd int, src []float32, lds int, rows, n int) {
	checkRows("AddRows", dst, ldd, src, lds, rows, n)
	if rows == 0 || n == 0 {
		return
	}
	if useAVX512 {
		addRowsAVX512(&dst[0], ldd, &src[0], lds, rows, n)
		return
	}
	addRowsGo(dst, ldd, src, lds, rows, n)
}

// AddShifted adds taps rows of src (lds apart), each shifted one float
// further right, into dst: dst[s+j] += src[s·lds+j] for s < taps, j < n,
// summing over s in increasing order. It is a stride-1 col2im's inner loop:
// when the n+taps-1 floats of dst fit in one vector they stay in a register
// across the taps, where adding row by row would store and reload
// overlapping, misaligned runs and stall on store forwarding.
func AddShifted(dst, src []float32, lds, taps, n int) {
	if taps < 0 || n < 0 || (taps > 0 && n > 0 && (len(dst) < n+taps-1 || len(src) < span(taps, n, lds))) {
		panic(fmt.Sprintf("vec: AddShifted: %d taps of %d, stride %d, over %d and %d elements", taps, n, lds, len(dst), len(src)))
	}
	if taps == 0 || n == 0 {
		return
	}
	if useAVX512 && n+taps-1 <= 16 {
		addShiftedAVX512(&dst[0], &src[0], lds, taps, n)
		return
	}
	addShiftedGo(dst, src, lds, taps, n)
}

// Transpose8 writes eight rows of src (lds apart, k long) as the columns of
// k rows of dst (ldd apart): dst[p·ldd+j] = src[j·lds+p] for j < 8, p < k.
// It is the GEMM's packing of a transposed operand.
func Transpose8(dst []float32, ldd int, src []float32, lds int, k int) {
	if k < 0 || ldd < 8 || lds < 0 || (k > 0 && (len(dst) < (k-1)*ldd+8 || len(src) < 7*lds+k)) {
		panic(fmt.Sprintf("vec: Transpose8: %d columns, strides %d and %d, over %d and %d elements", k, ldd, lds, len(dst), len(src)))
	}
	p := 0
	if useAVX512 && k >= 16 {
		p = k &^ 15
		transpose8AVX512(&dst[0], ldd, &src[0], lds, p)
	}
	if p < k {
		transpose8Go(dst[p*ldd:], ldd, src[p:], lds, k-p)
	}
}

func transpose8Go(dst []float32, ldd int, src []float32, lds int, k int) {
	if k == 0 {
		return
	}
	r0 := src[:k]
	r1 := src[lds : lds+k]
	r2 := src[2*lds : 2*lds+k]
	r3 := src[3*lds : 3*lds+k]
	r4 := src[4*lds : 4*lds+k]
	r5 := src[5*lds : 5*lds+k]
	r6 := src[6*lds : 6*lds+k]
	r7 := src[7*lds : 7*lds+k]
	for p, v := range r0 {
		q := dst[ldd*p : ldd*p+8 : ldd*p+8]
		q[0], q[1], q[2], q[3], q[4], q[5], q[6], q[7] = v, r1[p], r2[p], r3[p], r4[p], r5[p], r6[p], r7[p]
	}
}

// ZeroRows clears rows rows of n floats, ldd apart.
func ZeroRows(dst []float32, ldd int, rows, n int) {
	checkRows("ZeroRows", dst, ldd, nil, 0, rows, n)
	if n == 0 || rows == 0 {
		return
	}
	if useAVX512 {
		zeroRowsAVX512(&dst[0], ldd, rows, n)
		return
	}
	for i := 0; i < rows; i++ {
		clear(dst[i*ldd : i*ldd+n])
	}
}

// Sum returns the sum of s in a fixed order that depends on len(s) alone:
// sixteen lanes, lane j summing s[j], s[j+16], ... in turn (from +0), then
// the lanes added pairwise (j and j+8, then j+4, j+2, j+1).
func Sum(s []float32) float32 {
	if len(s) == 0 {
		return 0
	}
	if useAVX512 {
		return sumAVX512(&s[0], len(s))
	}
	return sumGo(s)
}

func sumGo(s []float32) float32 {
	var lane [16]float32
	i := 0
	for ; i+16 <= len(s); i += 16 {
		q := s[i : i+16 : i+16]
		for j := range lane {
			lane[j] += q[j]
		}
	}
	for j, v := range s[i:] {
		lane[j] += v
	}
	for w := 8; w >= 1; w /= 2 {
		for j := 0; j < w; j++ {
			lane[j] += lane[j+w]
		}
	}
	return lane[0]
}

// ReLU sets y = max(x, 0) as Go's max does: NaN passes through and -0
// becomes +0.
func ReLU(y, x []float32) {
	if len(y) < len(x) {
		panic(fmt.Sprintf("vec: ReLU: y of %d for x of %d", len(y), len(x)))
	}
	if len(x) == 0 {
		return
	}
	if useAVX512 {
		reluAVX512(&y[0], &x[0], len(x))
		return
	}
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		reluAVX2(&y[0], &x[0], n8)
		y, x = y[n8:], x[n8:]
	}
	reluGo(y, x)
}

// ReLUBackward sets dx = dy where x > 0 and +0 elsewhere (NaN x included).
func ReLUBackward(dx, dy, x []float32) {
	if len(dx) < len(x) || len(dy) < len(x) {
		panic(fmt.Sprintf("vec: ReLUBackward: dx of %d, dy of %d for x of %d", len(dx), len(dy), len(x)))
	}
	if len(x) == 0 {
		return
	}
	if useAVX512 {
		reluBackwardAVX512(&dx[0], &dy[0], &x[0], len(x))
		return
	}
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		reluBackwardAVX2(&dx[0], &dy[0], &x[0], n8)
		dx, dy, x = dx[n8:], dy[n8:], x[n8:]
	}
	reluBackwardGo(dx, dy, x)
}

// AddScalar adds v to every element of x.
func AddScalar(x []float32, v float32) {
	if len(x) == 0 {
		return
	}
	if useAVX512 {
		addScalarAVX512(&x[0], len(x), v)
		return
	}
	for i := range x {
		x[i] += v
	}
}

// The Go twins: what every path must compute.

func copyRowsGo(dst []float32, ldd int, src []float32, lds int, rows, n int) {
	if n == 0 {
		return
	}
	for i := 0; i < rows; i++ {
		copy(dst[i*ldd:i*ldd+n], src[i*lds:i*lds+n])
	}
}

func addRowsGo(dst []float32, ldd int, src []float32, lds int, rows, n int) {
	if n == 0 {
		return
	}
	for i := 0; i < rows; i++ {
		d, s := dst[i*ldd:i*ldd+n], src[i*lds:i*lds+n]
		for j, v := range s {
			d[j] += v
		}
	}
}

func addShiftedGo(dst, src []float32, lds, taps, n int) {
	for s := 0; s < taps; s++ {
		d, r := dst[s:s+n], src[s*lds:s*lds+n]
		for j, v := range r {
			d[j] += v
		}
	}
}

// The Go ReLU loops select through a bit mask set by conditional moves: a
// branch on the sign of x mispredicts half the time on real activations.

func reluGo(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		m := uint32(0)
		if v > 0 {
			m = ^uint32(0)
		}
		if v != v {
			m = ^uint32(0)
		}
		y[i] = math.Float32frombits(math.Float32bits(v) & m)
	}
}

func reluBackwardGo(dx, dy, x []float32) {
	dx, dy = dx[:len(x)], dy[:len(x)]
	for i, v := range x {
		m := ^uint32(0)
		if !(v > 0) {
			m = 0
		}
		dx[i] = math.Float32frombits(math.Float32bits(dy[i]) & m)
	}
}
