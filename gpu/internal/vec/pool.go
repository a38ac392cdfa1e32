package vec

import (
	"fmt"
	"math"
)

// MaxPool2Backward routes max pooling's gradient for one plane of 2×2
// windows at stride 2 without padding: x and din are planes with rows w
// floats apart, dy is oh×ow. For window (i, j), the cells (2i, 2j),
// (2i, 2j+1), (2i+1, 2j), (2i+1, 2j+1) of din get dy[i·ow+j] (a -0 as +0)
// at the first of them, in that order, that holds the window's maximum, and
// +0 at the others. Cells outside every window are not touched.
//
// A NaN anywhere in the windows makes it return false, possibly after
// writing some cells: the caller must then route the plane itself (PyTorch
// sends the gradient to the NaN).
func MaxPool2Backward(din, x, dy []float32, w, ow, oh int) bool {
	if ow < 0 || oh < 0 || 2*ow > w || len(dy) < ow*oh || (oh > 0 && (len(x) < (2*oh-1)*w+2*ow || len(din) < (2*oh-1)*w+2*ow)) {
		panic(fmt.Sprintf("vec: MaxPool2Backward: %dx%d windows over rows of %d, slices %d, %d, %d", oh, ow, w, len(din), len(x), len(dy)))
	}
	if ow == 0 || oh == 0 {
		return true
	}
	if useAVX512 {
		return maxPool2BackwardAVX512(&din[0], &x[0], &dy[0], w, ow, oh)
	}
	return maxPool2BackwardGo(din, x, dy, w, ow, oh)
}

// maxPool2BackwardGo is MaxPool2Backward's twin. The choice is made with
// integer masks: the compiler branches on float comparisons in this loop,
// and the branches mispredict on real activations.
func maxPool2BackwardGo(din, x, dy []float32, w, ow, oh int) bool {
	n := 2 * ow
	for i := 0; i < oh; i++ {
		base := 2 * i * w
		r0, r1 := x[base:base+n], x[base+w:base+w+n]
		o0, o1 := din[base:base+n], din[base+w:base+w+n]
		for j, dv := range dy[i*ow : (i+1)*ow] {
			a, b, c, e := r0[2*j], r0[2*j+1], r1[2*j], r1[2*j+1]
			m := max(max(a, b), max(c, e))
			if m != m {
				return false
			}
			mb := math.Float32bits(m + 0) // +0 for -0: equal zeros give equal bits
			ka := eqMask(a, mb)
			kb := eqMask(b, mb) &^ ka
			kc := eqMask(c, mb) &^ (ka | kb)
			ke := ^(ka | kb | kc)
			v := math.Float32bits(dv + 0)
			o0[2*j] = math.Float32frombits(v & ka)
			o0[2*j+1] = math.Float32frombits(v & kb)
			o1[2*j] = math.Float32frombits(v & kc)
			o1[2*j+1] = math.Float32frombits(v & ke)
		}
	}
	return true
}

// eqMask returns all ones when v (not NaN) equals the float whose bits are
// mb (of a value +0 was added to), else 0, without a branch.
func eqMask(v float32, mb uint32) uint32 {
	d := int64(math.Float32bits(v+0) ^ mb)
	return uint32(^((d | -d) >> 63))
}
