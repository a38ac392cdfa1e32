package vec

import (
	"fmt"
	"math"
)

// ReLU6 sets y = min(max(x, 0), 6) as Go's min and max do: NaN passes
// through and -0 becomes +0. MobileNet applies it after every batch norm, so
// it is a sizeable share of a training step when it runs one element at a
// time.
func ReLU6(y, x []float32) {
	if len(y) < len(x) {
		panic(fmt.Sprintf("vec: ReLU6: y of %d for x of %d", len(y), len(x)))
	}
	if len(x) == 0 {
		return
	}
	if useAVX512 {
		relu6AVX512(&y[0], &x[0], len(x))
		return
	}
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		relu6AVX2(&y[0], &x[0], n8)
		y, x = y[n8:], x[n8:]
	}
	if n4 := len(x) &^ 3; useNEON && n4 > 0 {
		relu6NEON(&y[0], &x[0], n4)
		y, x = y[n4:], x[n4:]
	}
	relu6Go(y, x)
}

// ReLU6Backward sets dx = dy where 0 < x < 6 and +0 elsewhere (NaN x
// included): PyTorch's gradient, 0 at both kinks.
func ReLU6Backward(dx, dy, x []float32) {
	if len(dx) < len(x) || len(dy) < len(x) {
		panic(fmt.Sprintf("vec: ReLU6Backward: dx of %d, dy of %d for x of %d", len(dx), len(dy), len(x)))
	}
	if len(x) == 0 {
		return
	}
	if useAVX512 {
		relu6BackwardAVX512(&dx[0], &dy[0], &x[0], len(x))
		return
	}
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		relu6BackwardAVX2(&dx[0], &dy[0], &x[0], n8)
		dx, dy, x = dx[n8:], dy[n8:], x[n8:]
	}
	if n4 := len(x) &^ 3; useNEON && n4 > 0 {
		relu6BackwardNEON(&dx[0], &dy[0], &x[0], n4)
		dx, dy, x = dx[n4:], dy[n4:], x[n4:]
	}
	relu6BackwardGo(dx, dy, x)
}

// The Go twins: what the assembly must compute.

func relu6Go(y, x []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = min(max(v, 0), 6)
	}
}

func relu6BackwardGo(dx, dy, x []float32) {
	dx, dy = dx[:len(x)], dy[:len(x)]
	// A bit mask set by conditional moves: a branch on the sign of x
	// mispredicts half the time on real activations.
	for i, v := range x {
		m := ^uint32(0)
		if !(v > 0) {
			m = 0
		}
		if !(v < 6) {
			m = 0
		}
		dx[i] = math.Float32frombits(math.Float32bits(dy[i]) & m)
	}
}
