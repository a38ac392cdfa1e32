//go:build purego || !amd64

package vec

func maxPool2AVX512(*float32, *float32, int, int, int, uint64, uint64, uint64) {
	panic("vec: no assembly")
}
