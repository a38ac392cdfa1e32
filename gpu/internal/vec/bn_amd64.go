//go:build !purego

package vec

//go:noescape
func bnApplyAVX512(y, x *float32, n int, mean, scale, shift float32)

//go:noescape
func bnBackwardDataAVX512(dx, dy, x *float32, n int, k, b, a, mean float32)

//go:noescape
func sumDyDevAVX512(dy, x *float32, n int, mean float32) (sdy, sdyx float64)

//go:noescape
func sum64AVX512(s *float32, n int) float64

//go:noescape
func sqDev64AVX512(s *float32, n int, mean float64) float64
