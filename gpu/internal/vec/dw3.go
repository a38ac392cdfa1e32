package vec

import "fmt"

// Conv3Rows and Conv3RowsFlipped are the inner rows of a 3×3 depthwise
// convolution at stride 1 (the forward pass and its input gradient): each
// output element is a sum of nine products taken in a fixed order, with the
// same rounding as the scalar loop (multiply, round, add, round; no fused
// multiply-add: the twins' float32() conversions keep Go from fusing on
// arm64 or GOAMD64=v3), so the vector path and the Go twin give the same
// bits.

// Conv3Rows sets out[i] = Σ_{r=0..2} Σ_{s=0..2} w[3r+s]·x_r[i+s], the terms
// added in that order (r, then s) to +0, for i in [0, len(out)). Each x_r
// must hold len(out)+2 floats.
func Conv3Rows(out, x0, x1, x2, w []float32) {
	n := len(out)
	if len(w) < 9 || len(x0) < n+2 || len(x1) < n+2 || len(x2) < n+2 {
		panic(fmt.Sprintf("vec: Conv3Rows: %d outputs from rows of %d, %d, %d and %d weights", n, len(x0), len(x1), len(x2), len(w)))
	}
	if n == 0 {
		return
	}
	if useAVX512 {
		conv3RowsAVX512(&out[0], &x0[0], &x1[0], &x2[0], &w[0], n)
		return
	}
	if n8 := n &^ 7; useAVX2 && n8 > 0 {
		conv3RowsAVX2(&out[0], &x0[0], &x1[0], &x2[0], &w[0], n8)
		out, x0, x1, x2 = out[n8:], x0[n8:], x1[n8:], x2[n8:]
	}
	if n4 := n &^ 3; useNEON && n4 > 0 {
		conv3RowsNEON(&out[0], &x0[0], &x1[0], &x2[0], &w[0], n4)
		out, x0, x1, x2 = out[n4:], x0[n4:], x1[n4:], x2[n4:]
	}
	conv3RowsGo(out, x0, x1, x2, w)
}

// Conv3RowsFlipped sets out[i] = Σ_{r=0..2} Σ_{s=0..2} w[3r+s]·x_r[i+2-s],
// the terms added in that order to +0: the input gradient of a stride-1
// depthwise convolution, x_r being the output-gradient row under kernel row
// r. Each x_r must hold len(out)+2 floats.
func Conv3RowsFlipped(out, x0, x1, x2, w []float32) {
	n := len(out)
	if len(w) < 9 || len(x0) < n+2 || len(x1) < n+2 || len(x2) < n+2 {
		panic(fmt.Sprintf("vec: Conv3RowsFlipped: %d outputs from rows of %d, %d, %d and %d weights", n, len(x0), len(x1), len(x2), len(w)))
	}
	if n == 0 {
		return
	}
	if useAVX512 {
		conv3RowsFlippedAVX512(&out[0], &x0[0], &x1[0], &x2[0], &w[0], n)
		return
	}
	if n8 := n &^ 7; useAVX2 && n8 > 0 {
		conv3RowsFlippedAVX2(&out[0], &x0[0], &x1[0], &x2[0], &w[0], n8)
		out, x0, x1, x2 = out[n8:], x0[n8:], x1[n8:], x2[n8:]
	}
	if n4 := n &^ 3; useNEON && n4 > 0 {
		conv3RowsFlippedNEON(&out[0], &x0[0], &x1[0], &x2[0], &w[0], n4)
		out, x0, x1, x2 = out[n4:], x0[n4:], x1[n4:], x2[n4:]
	}
	conv3RowsFlippedGo(out, x0, x1, x2, w)
}

func conv3RowsGo(out, x0, x1, x2, w []float32) {
	w = w[:9]
	for i := range out {
		a, b, c := x0[i:i+3:i+3], x1[i:i+3:i+3], x2[i:i+3:i+3]
		var acc float32
		acc += float32(w[0] * a[0])
		acc += float32(w[1] * a[1])
		acc += float32(w[2] * a[2])
		acc += float32(w[3] * b[0])
		acc += float32(w[4] * b[1])
		acc += float32(w[5] * b[2])
		acc += float32(w[6] * c[0])
		acc += float32(w[7] * c[1])
		acc += float32(w[8] * c[2])
		out[i] = acc
	}
}

func conv3RowsFlippedGo(out, x0, x1, x2, w []float32) {
	w = w[:9]
	for i := range out {
		a, b, c := x0[i:i+3:i+3], x1[i:i+3:i+3], x2[i:i+3:i+3]
		var acc float32
		acc += float32(w[0] * a[2])
		acc += float32(w[1] * a[1])
		acc += float32(w[2] * a[0])
		acc += float32(w[3] * b[2])
		acc += float32(w[4] * b[1])
		acc += float32(w[5] * b[0])
		acc += float32(w[6] * c[2])
		acc += float32(w[7] * c[1])
		acc += float32(w[8] * c[0])
		out[i] = acc
	}
}

// Conv3RowFilter adds one row's share of a stride-1 3×3 depthwise filter
// gradient to 16-lane partial sums: acc[16s + i%16] += dy[i]·x[i+s] for s in
// 0..2 and i in [0, len(dy)), each product rounded to float32 and each lane
// taking its elements in order. acc holds 48 floats (three taps of one
// kernel row); x must hold len(dy)+2 floats. The lanes are the caller's to
// add up, in an order it fixes.
func Conv3RowFilter(acc, dy, x []float32) {
	n := len(dy)
	if len(acc) < 48 || len(x) < n+2 {
		panic(fmt.Sprintf("vec: Conv3RowFilter: %d outputs, row of %d, %d sums", n, len(x), len(acc)))
	}
	if n == 0 {
		return
	}
	if useAVX512 {
		conv3RowFilterAVX512(&acc[0], &dy[0], &x[0], n)
		return
	}
	if n16 := n &^ 15; useAVX2 && n16 > 0 {
		// The tail starts at a multiple of 16: its lanes are the twin's.
		conv3RowFilterAVX2(&acc[0], &dy[0], &x[0], n16)
		dy, x = dy[n16:], x[n16:]
	}
	if n16 := n &^ 15; useNEON && n16 > 0 {
		conv3RowFilterNEON(&acc[0], &dy[0], &x[0], n16)
		dy, x = dy[n16:], x[n16:]
	}
	conv3RowFilterGo(acc, dy, x)
}

func conv3RowFilterGo(acc, dy, x []float32) {
	acc = acc[:48]
	for i, d := range dy {
		a, l := x[i:i+3:i+3], i%16
		acc[l] += float32(d * a[0])
		acc[16+l] += float32(d * a[1])
		acc[32+l] += float32(d * a[2])
	}
}
