//go:build purego || !amd64

package vec

// useAVX512 is false: this build has only the Go loops.
const useAVX512 = false

func copyRowsAVX512(*float32, int, *float32, int, int, int) { panic("vec: no assembly") }
func addRowsAVX512(*float32, int, *float32, int, int, int)  { panic("vec: no assembly") }
func addShiftedAVX512(*float32, *float32, int, int, int)    { panic("vec: no assembly") }
func maxPool2BackwardAVX512(*float32, *float32, *float32, int, int, int) bool {
	panic("vec: no assembly")
}
func zeroRowsAVX512(*float32, int, int, int)               { panic("vec: no assembly") }
func sumAVX512(*float32, int) float32                      { panic("vec: no assembly") }
func transpose8AVX512(*float32, int, *float32, int, int)   { panic("vec: no assembly") }
func reluAVX512(*float32, *float32, int)                   { panic("vec: no assembly") }
func reluBackwardAVX512(*float32, *float32, *float32, int) { panic("vec: no assembly") }
func addScalarAVX512(*float32, int, float32)               { panic("vec: no assembly") }

func setAVX512(bool) {}
