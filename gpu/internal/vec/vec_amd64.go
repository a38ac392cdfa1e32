//go:build !purego

package vec

import "golang.org/x/sys/cpu"

// useAVX512 selects the assembly loops: AVX512F (the OS saving ZMM state is
// part of cpu.X86.HasAVX512F) for its masked loads and stores.
var useAVX512 = cpu.X86.HasAVX512F

//go:noescape
func copyRowsAVX512(dst *float32, ldd int, src *float32, lds int, rows, n int)

//go:noescape
func addRowsAVX512(dst *float32, ldd int, src *float32, lds int, rows, n int)

//go:noescape
func addShiftedAVX512(dst, src *float32, lds, taps, n int)

//go:noescape
func maxPool2BackwardAVX512(din, x, dy *float32, w, ow, oh int) bool

//go:noescape
func zeroRowsAVX512(dst *float32, ldd int, rows, n int)

//go:noescape
func sumAVX512(s *float32, n int) float32

//go:noescape
func transpose8AVX512(dst *float32, ldd int, src *float32, lds int, k int)

//go:noescape
func reluAVX512(y, x *float32, n int)

//go:noescape
func reluBackwardAVX512(dx, dy, x *float32, n int)

//go:noescape
func addScalarAVX512(x *float32, n int, v float32)

func setAVX512(on bool) { useAVX512 = on && cpu.X86.HasAVX512F }
