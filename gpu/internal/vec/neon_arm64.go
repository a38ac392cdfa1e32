//go:build !purego

package vec

// useNEON selects the NEON loops, which every arm64 processor has; tests
// turn it off to compare them with the Go twins. Each loop covers the whole
// multiples of its width (4 floats; the filter gradient 16) and the Go twin
// does the rest.
var useNEON = true

func setNEON(on bool) { useNEON = on }

//go:noescape
func conv3RowsNEON(out, x0, x1, x2, w *float32, n4 int)

//go:noescape
func conv3RowsFlippedNEON(out, x0, x1, x2, w *float32, n4 int)

//go:noescape
func conv3RowFilterNEON(acc, dy, x *float32, n16 int)

//go:noescape
func relu6NEON(y, x *float32, n4 int)

//go:noescape
func relu6BackwardNEON(dx, dy, x *float32, n4 int)

//go:noescape
func bnApplyNEON(y, x *float32, n4 int, mean, scale, shift float32)

//go:noescape
func bnBackwardDataNEON(dx, dy, x *float32, n4 int, k, b, a, mean float32)

// The lane sums read and write the caller's eight float64 lanes (l, s and
// t point at [8]float64) over n8 elements, a multiple of 8.

//go:noescape
func sumDyDevNEON(s, t *float64, dy, x *float32, n8 int, mean float32)

//go:noescape
func sum64NEON(l *float64, s *float32, n8 int)

//go:noescape
func sqDev64NEON(l *float64, s *float32, n8 int, mean float64)

//go:noescape
func maxPool2RowNEON(y, r0, r1 *float32, n4 int)

//go:noescape
func winoInNEON(a0, a1, a2, a3, d0, d1, d2, d3 *float32, n4 int)

//go:noescape
func winoOutNEON(s0, s1, m0, m1, m2, m3 *float32, n4 int)

//go:noescape
func winoDyNEON(o0, o1, o2, o3, p, q *float32, n4 int)
