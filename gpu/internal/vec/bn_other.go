//go:build purego || !amd64

package vec

func bnApplyAVX512(*float32, *float32, int, float32, float32, float32) { panic("vec: no assembly") }

func bnBackwardDataAVX512(*float32, *float32, *float32, int, float32, float32, float32, float32) {
	panic("vec: no assembly")
}

func sumDyDevAVX512(*float32, *float32, int, float32) (float64, float64) { panic("vec: no assembly") }

func sum64AVX512(*float32, int) float64            { panic("vec: no assembly") }
func sqDev64AVX512(*float32, int, float64) float64 { panic("vec: no assembly") }
