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

func bnApplyNEON(*float32, *float32, int, float32, float32, float32) { panic("vec: no assembly") }
func bnBackwardDataNEON(*float32, *float32, *float32, int, float32, float32, float32, float32) {
	panic("vec: no assembly")
}
func sumDyDevNEON(*float64, *float64, *float32, *float32, int, float32) { panic("vec: no assembly") }
func sum64NEON(*float64, *float32, int)                                 { panic("vec: no assembly") }
func sqDev64NEON(*float64, *float32, int, float64)                      { panic("vec: no assembly") }
func maxPool2RowNEON(*float32, *float32, *float32, int)                 { panic("vec: no assembly") }

func winoInNEON(_, _, _, _, _, _, _, _ *float32, _ int) { panic("vec: no assembly") }
func winoOutNEON(_, _, _, _, _, _ *float32, _ int)      { panic("vec: no assembly") }
func winoDyNEON(_, _, _, _, _, _ *float32, _ int)       { panic("vec: no assembly") }
