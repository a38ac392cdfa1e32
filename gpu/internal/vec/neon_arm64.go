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
