//go:build purego || !arm64

package vec

// useNEON is false: NEON exists on arm64 alone.
const useNEON = false

func setNEON(bool) {}

func conv3RowsNEON(*float32, *float32, *float32, *float32, *float32, int) {
	panic("vec: no assembly")
}

func conv3RowsFlippedNEON(*float32, *float32, *float32, *float32, *float32, int) {
	panic("vec: no assembly")
}

func conv3RowFilterNEON(*float32, *float32, *float32, int) { panic("vec: no assembly") }
func relu6NEON(*float32, *float32, int)                    { panic("vec: no assembly") }
func relu6BackwardNEON(*float32, *float32, *float32, int)  { panic("vec: no assembly") }
