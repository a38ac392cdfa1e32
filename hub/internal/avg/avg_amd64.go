//go:build !purego

package avg

import "golang.org/x/sys/cpu"

// useAVX512 selects the assembly loops: AVX512F for the 512-bit
// conversions, fused multiply-adds and masked tails.
var useAVX512 = cpu.X86.HasAVX512F

//go:noescape
func firstNonFiniteAVX512(src *float32, n int) int

//go:noescape
func addScaledAVX512(acc *float64, w float64, src *float32, n int)

//go:noescape
func addScaled4AVX512(acc *float64, w *[4]float64, src *[4]*float32, n int)

//go:noescape
func meanAVX512(dst *float32, acc *float64, n float64, count int)

// setAVX512 switches the assembly on or off (tests compare both paths);
// it reports the previous setting.
func setAVX512(on bool) bool {
	prev := useAVX512
	useAVX512 = on && cpu.X86.HasAVX512F
	return prev
}
