//go:build !purego

package vec

import "golang.org/x/sys/cpu"

// useAVX2 selects the AVX2 loops where AVX-512 is missing (AMD before Zen 4,
// Intel's client chips): 8 lanes, no masks, so each loop covers the whole
// multiples of its width and the Go twin does the rest. AVX-512 wins where
// both are present.
var useAVX2 = cpu.X86.HasAVX2

func setAVX2(on bool) { useAVX2 = on && cpu.X86.HasAVX2 }

// n8 must be a multiple of 8 (conv3RowFilterAVX2: of 16) in all of these.

//go:noescape
func conv3RowsAVX2(out, x0, x1, x2, w *float32, n8 int)

//go:noescape
func conv3RowsFlippedAVX2(out, x0, x1, x2, w *float32, n8 int)

//go:noescape
func conv3RowFilterAVX2(acc, dy, x *float32, n16 int)

//go:noescape
func relu6AVX2(y, x *float32, n8 int)

//go:noescape
func relu6BackwardAVX2(dx, dy, x *float32, n8 int)

//go:noescape
func bnApplyAVX2(y, x *float32, n8 int, mean, scale, shift float32)

//go:noescape
func bnBackwardDataAVX2(dx, dy, x *float32, n8 int, k, b, a, mean float32)

// The lane sums read and write the caller's eight float64 lanes (l, s and
// t point at [8]float64).

//go:noescape
func sumDyDevAVX2(s, t *float64, dy, x *float32, n8 int, mean float32)

//go:noescape
func sum64AVX2(l *float64, s *float32, n8 int)

//go:noescape
func sqDev64AVX2(l *float64, s *float32, n8 int, mean float64)

//go:noescape
func winoInAVX2(a0, a1, a2, a3, d0, d1, d2, d3 *float32, n8 int)

//go:noescape
func winoOutAVX2(s0, s1, m0, m1, m2, m3 *float32, n8 int)

//go:noescape
func winoDyAVX2(o0, o1, o2, o3, p, q *float32, n8 int)

//go:noescape
func reluAVX2(y, x *float32, n8 int)

//go:noescape
func reluBackwardAVX2(dx, dy, x *float32, n8 int)
