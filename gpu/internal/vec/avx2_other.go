//go:build purego || !amd64

package vec

// useAVX2 is false: this build has only the Go loops.
const useAVX2 = false

func setAVX2(bool) {}

func conv3RowsAVX2(*float32, *float32, *float32, *float32, *float32, int) {
	panic("vec: no assembly")
}

func conv3RowsFlippedAVX2(*float32, *float32, *float32, *float32, *float32, int) {
	panic("vec: no assembly")
}

func conv3RowFilterAVX2(*float32, *float32, *float32, int) { panic("vec: no assembly") }
func relu6AVX2(*float32, *float32, int)                    { panic("vec: no assembly") }
func relu6BackwardAVX2(*float32, *float32, *float32, int)  { panic("vec: no assembly") }

func bnApplyAVX2(*float32, *float32, int, float32, float32, float32) { panic("vec: no assembly") }
func bnBackwardDataAVX2(*float32, *float32, *float32, int, float32, float32, float32, float32) {
	panic("vec: no assembly")
}
func sumDyDevAVX2(*float64, *float64, *float32, *float32, int, float32) { panic("vec: no assembly") }
func sum64AVX2(*float64, *float32, int)                                 { panic("vec: no assembly") }
func sqDev64AVX2(*float64, *float32, int, float64)                      { panic("vec: no assembly") }

func winoInAVX2(_, _, _, _, _, _, _, _ *float32, _ int) { panic("vec: no assembly") }
func winoOutAVX2(_, _, _, _, _, _ *float32, _ int)      { panic("vec: no assembly") }
func winoDyAVX2(_, _, _, _, _, _ *float32, _ int)       { panic("vec: no assembly") }
func reluAVX2(_, _ *float32, _ int)                     { panic("vec: no assembly") }
func reluBackwardAVX2(_, _, _ *float32, _ int)          { panic("vec: no assembly") }
