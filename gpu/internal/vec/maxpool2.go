package vec

import "fmt"

// MaxPool2 is max pooling's forward pass over one plane for 2×2 windows at
// stride 2 without padding: x is a plane with rows w floats apart, y is
// oh×ow, and y[i·ow+j] = max(max(x[2i][2j], x[2i][2j+1]), max(x[2i+1][2j],
// x[2i+1][2j+1])) with Go's max: a NaN in the window gives NaN (its payload
// unspecified) and +0 beats -0. The vector path takes 16 windows of a row
// pair at a time.
func MaxPool2(y, x []float32, w, ow, oh int) {
	if ow < 0 || oh < 0 || 2*ow > w || len(y) < ow*oh || (oh > 0 && len(x) < (2*oh-1)*w+2*ow) {
		panic(fmt.Sprintf("vec: MaxPool2: %dx%d windows over rows of %d, slices %d, %d", oh, ow, w, len(y), len(x)))
	}
	if ow == 0 || oh == 0 {
		return
	}
	if useAVX512 {
		t := ow % 16
		lo, hi := uint64(1)<<min(2*t, 16)-1, uint64(0)
		if 2*t > 16 {
			hi = uint64(1)<<(2*t-16) - 1
		}
		maxPool2AVX512(&y[0], &x[0], w, ow, oh, lo, hi, uint64(1)<<t-1)
		return
	}
	if n4 := ow &^ 3; useNEON && n4 > 0 {
		// Row pair by row pair: the first n4 windows in NEON, the rest of
		// the row in the twin.
		for i := 0; i < oh; i++ {
			r0, r1, o := x[2*i*w:], x[(2*i+1)*w:], y[i*ow:(i+1)*ow]
			maxPool2RowNEON(&o[0], &r0[0], &r1[0], n4)
			maxPool2Go(o[n4:], x[2*i*w+2*n4:], w, ow-n4, 1)
		}
		return
	}
	maxPool2Go(y, x, w, ow, oh)
}

func maxPool2Go(y, x []float32, w, ow, oh int) {
	for i := 0; i < oh; i++ {
		r0 := x[2*i*w : 2*i*w+2*ow]
		r1 := x[(2*i+1)*w : (2*i+1)*w+2*ow]
		o := y[i*ow : (i+1)*ow]
		for j := range o {
			o[j] = max(max(r0[2*j], r0[2*j+1]), max(r1[2*j], r1[2*j+1]))
		}
	}
}
