//go:build purego || !amd64

package avg

// useAVX512 is false: this build has only the Go loops.
const useAVX512 = false

func firstNonFiniteAVX512(*float32, int) int                    { panic("avg: no assembly") }
func addScaledAVX512(*float64, float64, *float32, int)          { panic("avg: no assembly") }
func addScaled4AVX512(*float64, *[4]float64, *[4]*float32, int) { panic("avg: no assembly") }
func meanAVX512(*float32, *float64, float64, int)               { panic("avg: no assembly") }
func setAVX512(bool) bool                                       { return false }
