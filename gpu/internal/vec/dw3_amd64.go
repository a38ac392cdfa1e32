//go:build !purego

package vec

//go:noescape
func conv3RowsAVX512(out, x0, x1, x2, w *float32, n int)

//go:noescape
func conv3RowsFlippedAVX512(out, x0, x1, x2, w *float32, n int)

//go:noescape
func conv3RowFilterAVX512(acc, dy, x *float32, n int)
