package vec

import "fmt"

// Batch normalisation's per-element loops. BNApply and BNBackwardData round
// every operation as the Go twin does (no fused multiply-add), so both paths
// give the same bits; SumDyDev's eight float64 lanes fix its order of
// addition, which its Go twin follows.

// BNApply sets y = (x - mean)·scale + shift.
func BNApply(y, x []float32, mean, scale, shift float32) {
	if len(y) < len(x) {
		panic(fmt.Sprintf("vec: BNApply: y of %d for x of %d", len(y), len(x)))
	}
	if len(x) == 0 {
		return
	}
	if useAVX512 {
		bnApplyAVX512(&y[0], &x[0], len(x), mean, scale, shift)
		return
	}
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		bnApplyAVX2(&y[0], &x[0], n8, mean, scale, shift)
		y, x = y[n8:], x[n8:]
	}
	if n4 := len(x) &^ 3; useNEON && n4 > 0 {
		bnApplyNEON(&y[0], &x[0], n4, mean, scale, shift)
		y, x = y[n4:], x[n4:]
	}
	bnApplyGo(y, x, mean, scale, shift)
}

// BNBackwardData sets dx = k·dy - b - a·(x - mean).
func BNBackwardData(dx, dy, x []float32, k, b, a, mean float32) {
	if len(dx) < len(x) || len(dy) < len(x) {
		panic(fmt.Sprintf("vec: BNBackwardData: dx of %d, dy of %d for x of %d", len(dx), len(dy), len(x)))
	}
	if len(x) == 0 {
		return
	}
	if useAVX512 {
		bnBackwardDataAVX512(&dx[0], &dy[0], &x[0], len(x), k, b, a, mean)
		return
	}
	if n8 := len(x) &^ 7; useAVX2 && n8 > 0 {
		bnBackwardDataAVX2(&dx[0], &dy[0], &x[0], n8, k, b, a, mean)
		dx, dy, x = dx[n8:], dy[n8:], x[n8:]
	}
	if n4 := len(x) &^ 3; useNEON && n4 > 0 {
		bnBackwardDataNEON(&dx[0], &dy[0], &x[0], n4, k, b, a, mean)
		dx, dy, x = dx[n4:], dy[n4:], x[n4:]
	}
	bnBackwardDataGo(dx, dy, x, k, b, a, mean)
}

// SumDyDev returns Σ dy and Σ dy·(x - mean) in float64, x - mean rounded to
// float32 first. Element i goes to lane i%8 of eight accumulators each; the
// lanes are then added as ((0+4)+(2+6))+((1+5)+(3+7)).
func SumDyDev(dy, x []float32, mean float32) (sdy, sdyx float64) {
	if len(x) < len(dy) {
		panic(fmt.Sprintf("vec: SumDyDev: x of %d for dy of %d", len(x), len(dy)))
	}
	if len(dy) == 0 {
		return 0, 0
	}
	if useAVX512 {
		return sumDyDevAVX512(&dy[0], &x[0], len(dy), mean)
	}
	var s, t [8]float64
	if n8 := len(dy) &^ 7; useAVX2 && n8 > 0 {
		// The tail starts at a multiple of 8: its lanes are the twin's.
		sumDyDevAVX2(&s[0], &t[0], &dy[0], &x[0], n8, mean)
		dy, x = dy[n8:], x[n8:]
	}
	if n8 := len(dy) &^ 7; useNEON && n8 > 0 {
		sumDyDevNEON(&s[0], &t[0], &dy[0], &x[0], n8, mean)
		dy, x = dy[n8:], x[n8:]
	}
	sumDyDevLanes(&s, &t, dy, x, mean)
	return lanes8(&s), lanes8(&t)
}

func bnApplyGo(y, x []float32, mean, scale, shift float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] = float32((v-mean)*scale) + shift // float32(): never fused, as the assembly
	}
}

func bnBackwardDataGo(dx, dy, x []float32, k, b, a, mean float32) {
	dx, dy = dx[:len(x)], dy[:len(x)]
	for i, d := range dy {
		dx[i] = float32(k*d) - b - float32(a*(x[i]-mean)) // float32(): never fused
	}
}

func sumDyDevGo(dy, x []float32, mean float32) (float64, float64) {
	var s, t [8]float64
	sumDyDevLanes(&s, &t, dy, x, mean)
	return lanes8(&s), lanes8(&t)
}

// sumDyDevLanes adds dy and dy·(x - mean) into the lanes s and t, element i
// in lane i%8.
func sumDyDevLanes(s, t *[8]float64, dy, x []float32, mean float32) {
	x = x[:len(dy)]
	for i, d := range dy {
		s[i%8] += float64(d)
		t[i%8] += float64(float64(d) * float64(x[i]-mean))
	}
}

// Sum64 returns Σ s in float64, element i in lane i%8, the lanes added as
// SumDyDev's.
func Sum64(s []float32) float64 {
	if len(s) == 0 {
		return 0
	}
	if useAVX512 {
		return sum64AVX512(&s[0], len(s))
	}
	var l [8]float64
	if n8 := len(s) &^ 7; useAVX2 && n8 > 0 {
		sum64AVX2(&l[0], &s[0], n8)
		s = s[n8:]
	}
	if n8 := len(s) &^ 7; useNEON && n8 > 0 {
		sum64NEON(&l[0], &s[0], n8)
		s = s[n8:]
	}
	sum64Lanes(&l, s)
	return lanes8(&l)
}

// SqDev64 returns Σ (s[i] - mean)² in float64 (the difference taken in
// float64), element i in lane i%8, the lanes added as SumDyDev's.
func SqDev64(s []float32, mean float64) float64 {
	if len(s) == 0 {
		return 0
	}
	if useAVX512 {
		return sqDev64AVX512(&s[0], len(s), mean)
	}
	var l [8]float64
	if n8 := len(s) &^ 7; useAVX2 && n8 > 0 {
		sqDev64AVX2(&l[0], &s[0], n8, mean)
		s = s[n8:]
	}
	if n8 := len(s) &^ 7; useNEON && n8 > 0 {
		sqDev64NEON(&l[0], &s[0], n8, mean)
		s = s[n8:]
	}
	sqDev64Lanes(&l, s, mean)
	return lanes8(&l)
}

func lanes8(l *[8]float64) float64 {
	return ((l[0] + l[4]) + (l[2] + l[6])) + ((l[1] + l[5]) + (l[3] + l[7]))
}

func sum64Go(s []float32) float64 {
	var l [8]float64
	sum64Lanes(&l, s)
	return lanes8(&l)
}

// sum64Lanes adds s into the lanes l, element i in lane i%8.
func sum64Lanes(l *[8]float64, s []float32) {
	for i, v := range s {
		l[i%8] += float64(v)
	}
}

func sqDev64Go(s []float32, mean float64) float64 {
	var l [8]float64
	sqDev64Lanes(&l, s, mean)
	return lanes8(&l)
}

// sqDev64Lanes adds (s[i] - mean)² into the lanes l, element i in lane i%8.
func sqDev64Lanes(l *[8]float64, s []float32, mean float64) {
	for i, v := range s {
		d := float64(v) - mean
		l[i%8] += float64(d * d)
	}
}
