//go:build purego || !amd64

package vec

func conv3RowsAVX512(*float32, *float32, *float32, *float32, *float32, int) {
	panic("vec: no assembly")
}

func conv3RowsFlippedAVX512(*float32, *float32, *float32, *float32, *float32, int) {
	panic("vec: no assembly")
}

func conv3RowFilterAVX512(*float32, *float32, *float32, int) { panic("vec: no assembly") }
