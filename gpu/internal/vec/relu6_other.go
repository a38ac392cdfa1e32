//go:build purego || !amd64

package vec

func relu6AVX512(*float32, *float32, int)                   { panic("vec: no assembly") }
func relu6BackwardAVX512(*float32, *float32, *float32, int) { panic("vec: no assembly") }
