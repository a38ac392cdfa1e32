//go:build !purego

package vec

//go:noescape
func relu6AVX512(y, x *float32, n int)

//go:noescape
func relu6BackwardAVX512(dx, dy, x *float32, n int)
